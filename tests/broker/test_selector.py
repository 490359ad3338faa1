"""The selector language (amqp_sansio.broker.Selector, the JMS 2.0 message selector of
section 3.8.1.1) through its public API: a table of selector x message -> TRUE / FALSE /
UNKNOWN covering every construct, the three-valued truth tables, syntax errors with their
positions, the limits, Hypothesis properties, and the message identifiers (MessageFields)."""

from __future__ import annotations

import itertools
import math
import time
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import (
    DEFAULT_SELECTOR_MAX_DEPTH,
    DEFAULT_SELECTOR_MAX_LENGTH,
    SELECTOR_FILTER,
    SELECTOR_FILTER_CODE,
    MessageFields,
    Selector,
    SelectorError,
    selector_filter,
)

T, F, U = True, False, None

#: The message of the table: application-properties of every JMS type, and some others.
PROPS: dict[str, Any] = {
    "s": "red",
    "empty": "",
    "quote": "it's",
    "pct": "100%",
    "under": "a_b",
    "i": 5,
    "neg": -3,
    "big": 2**62,
    "d": 2.5,
    "zero": 0,
    "fzero": 0.0,
    "t": True,
    "f": False,
    "byte": a.codec.amqp10.Byte(-7),
    "uint": a.codec.amqp10.UInt(7),
    "ulong_small": a.codec.amqp10.ULong(9),
    "ulong_big": a.codec.amqp10.ULong(2**64 - 1),
    "float32": a.codec.amqp10.Float(0.5),
    "sym": a.Symbol("sym"),
    "ts": a.codec.amqp10.Timestamp(1000),
    "uuid": uuid.UUID(int=1),
    "bin": b"\x01",
    "char": a.codec.amqp10.Char("c"),
    "list": [1, 2],
    "nothing": None,
}

CASES: list[tuple[str, bool | None]] = [
    # literals and booleans
    ("TRUE", T),
    ("FALSE", F),
    ("true", T),
    ("t", T),
    ("f", F),
    ("missing", U),
    ("s", U),  # a string is not a condition: UNKNOWN
    ("i", U),
    # comparisons of each type
    ("s = 'red'", T),
    ("s = 'RED'", F),
    ("s <> 'blue'", T),
    ("quote = 'it''s'", T),
    ("empty = ''", T),
    ("i = 5", T),
    ("i <> 5", F),
    ("i > 4 AND i >= 5 AND i < 6 AND i <= 5", T),
    ("i = 5.0", T),  # numeric promotion
    ("d = 2.5 AND d > 2 AND d < 3", T),
    ("neg < 0", T),
    ("big > 2000000000", T),
    ("t = TRUE AND f = FALSE AND t <> f", T),
    ("byte = -7 AND uint = 7 AND ulong_small = 9 AND float32 = 0.5", T),
    ("sym = 'sym'", T),
    # mismatched types: UNKNOWN, never coerced
    ("s = 5", U),
    ("i = '5'", U),
    ("t = 1", U),
    ("s < 'z'", U),  # strings compare with = and <> only
    ("t > f", U),  # and so do booleans
    # unsupported types: present, comparable to nothing
    ("ts = 1000", U),
    ("uuid = '00000000-0000-0000-0000-000000000001'", U),
    ("bin = 1", U),
    ("char = 'c'", U),
    ("list = 1", U),
    ("ulong_big > 0", U),
    ("ts IS NULL", F),
    ("ts IS NOT NULL", T),
    # NULL
    ("missing = 1", U),
    ("missing <> 1", U),
    ("nothing = 1", U),
    ("missing IS NULL", T),
    ("nothing IS NULL", T),
    ("i IS NULL", F),
    ("i IS NOT NULL", T),
    ("missing IS NOT NULL", F),
    ("NOT missing = 1", U),
    # arithmetic
    ("i + 1 = 6", T),
    ("i - 10 = -5", T),
    ("i * 2 = 10", T),
    ("i / 2 = 2", T),  # exact division truncates
    ("neg / 2 = -1", T),  # toward zero
    ("i / 2.0 = 2.5", T),
    ("-i = -5 AND +i = 5 AND - -i = 5", T),
    ("i + d = 7.5", T),
    ("1 + 2 * 3 = 7", T),
    ("(1 + 2) * 3 = 9", T),
    ("10 - 2 - 3 = 5", T),  # left to right
    ("12 / 2 / 3 = 2", T),
    ("i / zero = 1", U),  # exact division by zero: UNKNOWN
    ("i / fzero > 1000000", T),  # approximate: +infinity
    ("9223372036854775807 + 1 = -9223372036854775808", T),  # Java long wraps
    ("missing + 1 = 1", U),
    ("s + 1 = 1", U),
    ("t * 1 = 1", U),
    ("-s = 1", U),
    # literals
    ("0x1F = 31 AND 0X1f = 31", T),
    ("017 = 15", T),
    ("0 = 0 AND 00 = 0", T),
    ("10L = 10 AND 0x10l = 16", T),
    ("1.5e3 = 1500 AND 15E2 = 1500 AND 1500e-0 = 1500", T),
    ("7. = 7 AND .5 = 0.5 AND 2.5f = 2.5 AND 3d = 3", T),
    ("-9223372036854775808 < 0", T),
    # BETWEEN
    ("i BETWEEN 1 AND 5", T),
    ("i BETWEEN 6 AND 9", F),
    ("i NOT BETWEEN 6 AND 9", T),
    ("i NOT BETWEEN 1 AND 5", F),
    ("d BETWEEN 2 AND 3", T),
    ("missing BETWEEN 1 AND 2", U),
    ("missing NOT BETWEEN 1 AND 2", U),
    ("i BETWEEN missing AND 4", F),  # 5 <= 4 is FALSE whatever the low end
    ("i BETWEEN missing AND 9", U),
    ("i NOT BETWEEN missing AND 4", T),
    ("s BETWEEN 'a' AND 'z'", U),
    # LIKE
    ("s LIKE 'red'", T),
    ("s LIKE 'r%'", T),
    ("s LIKE '%d'", T),
    ("s LIKE '%e%'", T),
    ("s LIKE 'r_d'", T),
    ("s LIKE '_'", F),
    ("s LIKE '___'", T),
    ("s LIKE '%'", T),
    ("empty LIKE '%'", T),
    ("empty LIKE '_%'", F),
    ("s LIKE 'R%'", F),
    ("s NOT LIKE 'b%'", T),
    ("s NOT LIKE 'r%'", F),
    ("s LIKE 're%ed'", F),  # the pieces may not overlap
    ("s LIKE 'r%%d'", T),
    ("pct LIKE '100!%' ESCAPE '!'", T),
    ("pct LIKE '1!%' ESCAPE '!'", F),
    ("under LIKE 'a\\_b' ESCAPE '\\'", T),
    ("s LIKE 'r\\_d' ESCAPE '\\'", F),
    ("quote LIKE 'it''s'", T),
    ("quote LIKE 'i''%' ESCAPE ''''", F),
    ("s LIKE '.*'", F),  # regular-expression characters are literal
    ("i LIKE '5'", U),
    ("missing LIKE '%'", U),
    ("missing NOT LIKE '%'", U),
    # IN
    ("s IN ('red', 'blue')", T),
    ("s IN ('blue')", F),
    ("s NOT IN ('blue', 'green')", T),
    ("s NOT IN ('red')", F),
    ("missing IN ('red')", U),
    ("missing NOT IN ('red')", U),
    ("i IN ('5')", U),
    # logic
    ("t AND missing = 1", U),
    ("f AND missing = 1", F),
    ("t OR missing = 1", T),
    ("f OR missing = 1", U),
    ("NOT t", F),
    ("NOT NOT t", T),
    ("NOT (i = 5 AND s = 'red')", F),
    ("i = 5 OR i = 6 AND s = 'blue'", T),  # AND binds tighter than OR
    ("(i = 5 OR i = 6) AND s = 'blue'", F),
    ("NOT i = 6", T),  # NOT below comparison
    ("s = 'red' AND i = 5 AND d = 2.5 AND t", T),
    ("f OR f OR f OR t", T),
    ("i AND t", U),  # a number in a condition: UNKNOWN
    # case-insensitive keywords, case-sensitive identifiers
    ("S = 'red'", U),
    ("s in ('red') and i BeTwEeN 1 aNd 9 And s Like 'r%' oR nOt t Is NuLl", T),
    # whitespace
    ("\ts\n=\r'red'\f", T),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_table(text: str, expected: bool | None) -> None:
    s = Selector(text)
    assert s.evaluate(PROPS) is expected
    assert s.matches(PROPS) is (expected is True)


# -- the three-valued truth tables (SQL-92 8.12; JMS 2.0 3.8.1.2) -------------------------

#: A condition for each truth value.
_VALUE = {T: "t", F: "f", U: "missing = 1"}
_NOT = {T: F, F: T, U: U}
_AND = {(T, T): T, (T, F): F, (T, U): U, (F, F): F, (F, U): F, (U, U): U}
_OR = {(T, T): T, (T, F): T, (T, U): T, (F, F): F, (F, U): U, (U, U): U}


@pytest.mark.parametrize(("x", "y"), list(itertools.product((T, F, U), repeat=2)))
def test_truth_tables(x: bool | None, y: bool | None) -> None:
    def key(p: bool | None, q: bool | None) -> tuple[bool | None, bool | None]:
        order = {T: 0, F: 1, U: 2}
        return (p, q) if order[p] <= order[q] else (q, p)

    assert Selector(f"{_VALUE[x]} AND {_VALUE[y]}").evaluate(PROPS) is _AND[key(x, y)]
    assert Selector(f"{_VALUE[x]} OR {_VALUE[y]}").evaluate(PROPS) is _OR[key(x, y)]
    assert Selector(f"NOT ({_VALUE[x]})").evaluate(PROPS) is _NOT[x]


# -- syntax errors ---------------------------------------------------------------------------

ERRORS: list[tuple[str, int, str]] = [
    ("", 0, "empty selector"),
    ("   ", 0, "empty selector"),
    ("a =", 3, "expected a value"),
    ("a = = 1", 4, "expected a value"),
    ("= 1", 0, "expected a value"),
    ("'abc", 0, "unterminated string literal"),
    ("a = 'it''s", 4, "unterminated string literal"),
    ("a = 1 b", 6, "expected an operator or the end"),
    ("(a = 1", 6, "expected )"),
    ("a = 1)", 5, "expected an operator or the end"),
    ("a = b = c", 6, "comparisons do not chain"),
    ("a == 1", 3, "expected a value"),
    ("a != 1", 2, "unexpected character '!'"),
    ('a = "x"', 4, "unexpected character"),
    ("a LIKE 5", 7, "string literal as the LIKE pattern"),
    ("a LIKE b", 7, "string literal as the LIKE pattern"),
    ("a LIKE 'x' ESCAPE 'ab'", 18, "one-character string after ESCAPE"),
    ("a LIKE 'x!' ESCAPE '!'", 7, "ends with its escape character"),
    ("a LIKE '!x' ESCAPE '!'", 7, "escape character before 'x'"),
    ("a IN ()", 6, "string literal in the IN list"),
    ("a IN ('x',)", 10, "string literal in the IN list"),
    ("a IN ('x' 'y')", 10, ", or ) in the IN list"),
    ("a IN 'x'", 5, "( after IN"),
    ("a IN (1)", 6, "string literal in the IN list"),
    ("a BETWEEN 1", 11, "AND in BETWEEN"),
    ("a IS 1", 5, "NULL after IS"),
    ("a IS NOT", 8, "NULL after IS"),
    ("a = NULL", 4, "NULL is only allowed in IS"),
    ("NOT", 3, "expected a value"),
    ("AND = 1", 0, "expected a value"),
    ("08 = 8", 0, "invalid octal literal"),
    ("9223372036854775808 = 1", 0, "integer literal out of range"),
    ("0x10000000000000000 = 1", 0, "hexadecimal literal out of range"),
    ("1e999 = 1", 0, "floating-point literal out of range"),
    ("1abc = 1", 1, "after a number"),
    ("1.2.3 = 1", 3, "after a number"),
    ("0x = 1", 1, "after a number"),
    ("5", 0, "expected a condition"),
    ("'x'", 0, "expected a condition"),
    ("1 + 2", 0, "expected a condition"),
    ("NOT 5", 4, "expected a condition"),
    ("t AND 'x'", 6, "expected a condition"),
    ("'x' OR t", 0, "expected a condition"),
    ("'x' + 1 = 2", 0, "arithmetic applies to numbers"),
    ("1 + TRUE = 2", 4, "arithmetic applies to numbers"),
    ("-'x' = 1", 1, "arithmetic applies to numbers"),
    ("1 LIKE 'x'", 2, "LIKE applies to strings"),
    ("TRUE IN ('x')", 5, "IN applies to strings"),
    ("a = 1 #", 6, "unexpected character '#'"),
]


@pytest.mark.parametrize(("text", "position", "why"), ERRORS, ids=[e[0] for e in ERRORS])
def test_syntax_errors_say_where(text: str, position: int, why: str) -> None:
    with pytest.raises(SelectorError) as info:
        Selector(text)
    error = info.value
    assert error.position == position, str(error)
    assert why in error.description
    assert f"at position {position}" in str(error)
    assert error.condition == "amqp:invalid-field"
    assert isinstance(error, ValueError) and isinstance(error, a.RemoteProtocolError)


def test_identifiers_follow_java_rules() -> None:
    values = {"$x": 1, "_y": 2, "\u00e9t\u00e9": 3, "a1$_": 4, "\u0394\u03b1": 5}
    for name, value in values.items():
        assert Selector(f"{name} = {value}").evaluate(values) is True
    with pytest.raises(SelectorError):
        Selector("a-b = 1 AND #c = 1")
    with pytest.raises(SelectorError):
        Selector("\u0663 = 3")  # a digit (Arabic-Indic) cannot start one


def test_reserved_words_are_not_identifiers() -> None:
    for word in ("NULL", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"):
        with pytest.raises(SelectorError):
            Selector(f"{word.lower()} = 1")
    # true and false are the literals, whatever a message calls its properties.
    assert Selector("true = TRUE AND NOT false").evaluate({"true": False, "false": True})


# -- limits ------------------------------------------------------------------------------------


def test_length_limit() -> None:
    long = "a = 1 OR " * 455 + "a = 1"  # 4100 characters
    assert len(long) > DEFAULT_SELECTOR_MAX_LENGTH
    with pytest.raises(SelectorError, match="longer than 4096"):
        Selector(long)
    assert Selector(long, max_length=5000).evaluate({"a": 1}) is True
    with pytest.raises(SelectorError, match="longer than 5 characters"):
        Selector("a = 12", max_length=5)


def test_nesting_limit() -> None:
    depth = DEFAULT_SELECTOR_MAX_DEPTH
    ok = "(" * depth + "a = 1" + ")" * depth
    assert Selector(ok).evaluate({"a": 1}) is True
    with pytest.raises(SelectorError, match=f"deeper than {depth}") as info:
        Selector("(" + ok + ")")
    assert info.value.position == depth
    for deep in ("NOT " * (depth + 1) + "t", "a = " + "-" * (depth + 1) + "1"):
        with pytest.raises(SelectorError, match="deeper"):
            Selector(deep)
    assert Selector("NOT " * depth + "t").evaluate({"t": True}) is (depth % 2 == 0)
    with pytest.raises(SelectorError):
        Selector("((a = 1))", max_depth=1)
    with pytest.raises(ValueError):
        Selector("a = 1", max_depth=1000)  # beyond what the parser's recursion allows


def test_long_flat_selectors_evaluate_without_recursion() -> None:
    """Chains are flat: OR, AND, + and * of thousands of terms, no RecursionError."""
    n = 3000
    for text, expected in [
        (" OR ".join(["a = 2"] * n + ["a = 1"]), True),
        (" AND ".join(["a = 1"] * n), True),
        ("+".join(["a"] * n) + f" = {n}", True),
        ("*".join(["a"] * n) + " = 1", True),
    ]:
        assert Selector(text, max_length=len(text)).evaluate({"a": 1}) is expected


@pytest.mark.alone
def test_hostile_like_is_linear() -> None:
    """A pattern that makes a backtracking matcher exponential matches at once here."""
    pattern = "%a" * 200 + "%b"
    s = Selector(f"x LIKE '{pattern}'")
    value = "a" * 5000
    start = time.perf_counter()
    assert s.evaluate({"x": value}) is False
    assert s.evaluate({"x": value + "b"}) is True
    assert time.perf_counter() - start < 1.0


# -- Hypothesis properties -----------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
_names = ("x", "y", "z")


_atoms = st.sampled_from(
    [
        "x = y",
        "x <> z",
        "x < y",
        "y >= z",
        "x IS NULL",
        "y IS NOT NULL",
        "x LIKE 'a%'",
        "z IN ('a', 'b')",
        "x",
        "TRUE",
        "FALSE",
        "x + y > z",
        "x BETWEEN y AND z",
    ]
)
_conditions = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(lambda p, q: f"({p}) AND ({q})", inner, inner),
        st.builds(lambda p, q: f"({p}) OR ({q})", inner, inner),
        st.builds(lambda p: f"NOT ({p})", inner),
    ),
    max_leaves=8,
)
_messages = st.fixed_dictionaries({n: _scalars for n in _names})


@settings(max_examples=300, deadline=None)
@given(condition=_conditions, message=_messages)
def test_not_is_three_valued_negation(condition: str, message: dict[str, Any]) -> None:
    value = Selector(condition).evaluate(message)
    negated = Selector(f"NOT ({condition})").evaluate(message)
    assert negated is (None if value is None else not value)


@settings(max_examples=300, deadline=None)
@given(p=_conditions, q=_conditions, message=_messages)
def test_de_morgan(p: str, q: str, message: dict[str, Any]) -> None:
    left = Selector(f"NOT (({p}) AND ({q}))").evaluate(message)
    right = Selector(f"NOT ({p}) OR NOT ({q})").evaluate(message)
    assert left is right


@settings(max_examples=300, deadline=None)
@given(message=_messages)
def test_between_is_two_comparisons(message: dict[str, Any]) -> None:
    between = Selector("x BETWEEN y AND z").evaluate(message)
    assert between is Selector("x >= y AND x <= z").evaluate(message)
    outside = Selector("x NOT BETWEEN y AND z").evaluate(message)
    assert outside is Selector("x < y OR x > z").evaluate(message)
    if not any(isinstance(v, float) and math.isnan(v) for v in message.values()):
        # (NaN is neither below, above nor between anything: the two differ for it.)
        assert outside is Selector("NOT (x BETWEEN y AND z)").evaluate(message)


_plain = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="%_'"), max_size=8)


@settings(max_examples=300, deadline=None)
@given(pattern=_plain, value=st.one_of(_plain, st.text(max_size=8)))
def test_like_without_wildcards_is_equality(pattern: str, value: str) -> None:
    like = Selector(f"x LIKE '{pattern}'").evaluate({"x": value})
    assert like is (value == pattern)
    assert like is Selector(f"x = '{pattern}'").evaluate({"x": value})


@settings(max_examples=300, deadline=None)
@given(prefix=_plain, middle=_plain, suffix=_plain, value=st.text(max_size=12))
def test_like_with_wildcards_agrees_with_a_reference(
    prefix: str, middle: str, suffix: str, value: str
) -> None:
    pattern = f"{prefix}%{middle}_{suffix}"
    got = Selector(f"x LIKE '{pattern}'").evaluate({"x": value})
    # The reference: every split of the value against the pattern's pieces.
    expected = any(
        value.startswith(prefix)
        and value[i:].startswith(middle)
        and len(value) == i + len(middle) + 1 + len(suffix)
        and value.endswith(suffix)
        for i in range(len(prefix), len(value) + 1)
    )
    assert got is expected


@settings(max_examples=1000, deadline=None)
@given(text=st.text(max_size=80))
def test_random_text_parses_or_raises_the_selector_error(text: str) -> None:
    try:
        s = Selector(text)
    except SelectorError:
        return
    s.evaluate(PROPS)


_tokens = st.sampled_from(
    [
        "a", "b", "s", "i", "d", "t", "=", "<>", "<", ">=", "+", "-", "*", "/", "(", ")",
        "AND", "OR", "NOT", "BETWEEN", "LIKE", "IN", "IS", "NULL", "ESCAPE", "TRUE", ",",
        "'x%'", "'!'", "1", "2.5", "0x1F", "017", "1e3", "-", "9223372036854775808",
    ]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(tokens=st.lists(_tokens, max_size=30))
def test_token_soup_parses_or_raises_the_selector_error(tokens: list[str]) -> None:
    try:
        s = Selector(" ".join(tokens))
    except SelectorError as exc:
        assert 0 <= exc.position <= len(" ".join(tokens))
        return
    assert s.evaluate(PROPS) in (True, False, None)


# -- the message's identifiers -------------------------------------------------------------


def fields(**sections: Any) -> MessageFields:
    return MessageFields(a.Message(body=b"body", **sections).encode(), address="q")


@pytest.mark.parametrize(
    ("message_id", "jms"),
    [
        ("abc", "ID:AMQP_NO_PREFIX:abc"),
        ("ID:abc", "ID:abc"),
        ("ID:AMQP_UUID:x", "ID:AMQP_STRING:ID:AMQP_UUID:x"),
        ("AMQP_UUID:x", "ID:AMQP_NO_PREFIX:AMQP_UUID:x"),
        (uuid.UUID("12345678-9abc-def0-1234-56789abcdef0"),
         "ID:AMQP_UUID:12345678-9abc-def0-1234-56789abcdef0"),
        (a.codec.amqp10.ULong(42), "ID:AMQP_ULONG:42"),
        (b"\x01\xab", "ID:AMQP_BINARY:01AB"),
        (None, None),
    ],
)  # fmt: skip
def test_jms_message_id(message_id: Any, jms: str | None) -> None:
    m = fields(properties=a.Properties(message_id=message_id))
    assert m("JMSMessageID") == jms
    if jms is not None:
        assert Selector(f"JMSMessageID = '{jms}'").evaluate(m) is True


@pytest.mark.parametrize(
    ("correlation_id", "jms"),
    [
        ("abc", "abc"),
        ("ID:abc", "ID:abc"),
        ("ID:AMQP_ULONG:1", "ID:AMQP_STRING:ID:AMQP_ULONG:1"),
        (uuid.UUID(int=5), f"ID:AMQP_UUID:{uuid.UUID(int=5)}"),
        (a.codec.amqp10.ULong(7), "ID:AMQP_ULONG:7"),
        (b"\xff", "ID:AMQP_BINARY:FF"),
    ],
)
def test_jms_correlation_id(correlation_id: Any, jms: str) -> None:
    m = fields(properties=a.Properties(correlation_id=correlation_id))
    assert m("JMSCorrelationID") == jms


def test_jms_header_fields() -> None:
    m = fields(
        header=a.Header(durable=True, priority=7),
        properties=a.Properties(
            subject="order",
            creation_time=a.codec.amqp10.Timestamp(1_700_000_000_123),
            absolute_expiry_time=a.codec.amqp10.Timestamp(1_700_000_060_000),
            group_id="g",
            group_sequence=a.codec.amqp10.UInt(2**32 - 1),
            user_id=b"alice",
        ),
        application_properties={"JMSPriority": 1, "colour": "red"},
    )
    assert m("JMSPriority") == 7  # the header's, not an application property of that name
    assert m("JMSDeliveryMode") == "PERSISTENT"
    assert m("JMSTimestamp") == 1_700_000_000_123
    assert m("JMSExpiration") == 1_700_000_060_000
    assert m("JMSType") == "order"
    assert m("JMSXGroupID") == "g" and m("JMSXGroupSeq") == -1  # Java int
    assert m("JMSXUserID") == "alice"
    assert m("AMQPriority") == 7 and m("AMQDurable") == "DURABLE"
    assert m("AMQTimestamp") == 1_700_000_000_123 and m("AMQExpiration") == 1_700_000_060_000
    assert m("AMQGroupID") == "g" and m("AMQAddress") == "q"
    assert m("AMQSize") == m.size > 0
    assert m("colour") == "red" and m("JMSDestination") is None
    s = Selector(
        "JMSType = 'order' AND JMSPriority BETWEEN 5 AND 9 AND JMSDeliveryMode = 'PERSISTENT' "
        "AND JMSTimestamp > 1600000000000 AND colour = 'red'"
    )
    assert s.evaluate(m) is True


def test_jms_header_defaults() -> None:
    m = fields()
    assert m("JMSPriority") == 4 and m("AMQPriority") == 4
    assert m("JMSDeliveryMode") == "NON_PERSISTENT" and m("AMQDurable") == "NON_DURABLE"
    assert m("JMSTimestamp") == 0 and m("JMSExpiration") == 0
    for name in ("JMSMessageID", "JMSCorrelationID", "JMSType", "JMSXGroupID", "JMSXUserID"):
        assert m(name) is None
    assert Selector("JMSType IS NULL AND JMSMessageID IS NULL").evaluate(m) is True


def test_fields_never_read_the_body_and_survive_bad_sections() -> None:
    good = a.Message(application_properties={"k": 1}, body=b"x").encode()
    broken = good[: good.index(b"\x00Su")]  # no body at all
    assert MessageFields(broken)("k") == 1
    # A truncated application-properties section: what decoded stays, the rest is NULL.
    header = a.Message(header=a.Header(priority=9)).encode()
    m = MessageFields(header + b"\x00St\xc1\x10\x02")
    assert m("JMSPriority") == 9 and m("k") is None
    assert MessageFields(b"")("JMSPriority") == 4


# -- the filter ------------------------------------------------------------------------------


def test_selector_filter_by_descriptor_whatever_the_key() -> None:
    text = "a = 1"
    for key in ("selector", "jms-selector", "anything"):
        for descriptor in (SELECTOR_FILTER, SELECTOR_FILTER_CODE):
            entry = a.Described(descriptor, text)
            assert selector_filter({a.Symbol(key): entry}) == (key, entry, text)
    assert selector_filter(None) is None
    assert selector_filter({a.Symbol("x"): "a = 1"}) is None  # not described: not the filter
    assert selector_filter({a.Symbol("x"): a.Described(a.Symbol("other"), "a")}) is None
    assert selector_filter({a.Symbol("x"): a.Described(SELECTOR_FILTER, "  ")}) is None
    with pytest.raises(SelectorError, match="is a string"):
        selector_filter({a.Symbol("x"): a.Described(SELECTOR_FILTER, 1)})
    with pytest.raises(SelectorError, match="more than one"):
        selector_filter({a.Symbol(k): a.Described(SELECTOR_FILTER, "a = 1") for k in ("x", "y")})


def test_selector_filter_round_trips_on_the_wire() -> None:
    entry = a.Described(SELECTOR_FILTER, "colour = 'red'")
    source = a.Source(address="q", filter={a.Symbol("jms-selector"): entry})
    decoded = a.decode(a.encode(source))
    assert selector_filter(decoded.filter) == ("jms-selector", entry, "colour = 'red'")


def test_repr_and_type() -> None:
    assert repr(Selector("a = 1")) == "Selector('a = 1')"
    with pytest.raises(TypeError):
        Selector(b"a = 1")  # type: ignore[arg-type]
