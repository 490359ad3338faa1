"""Message selectors: the ``apache.org:selector-filter:string`` filter (a source's filter-set,
core spec 3.5.3 ``filter`` and 3.5.8), whose value is a JMS message selector: the SQL-92
conditional-expression subset of the JMS 2.0 specification (section 3.8.1).

I/O-free, like the rest of the core. :class:`Selector` parses a selector once (raising
:class:`SelectorError` with the position of the fault) into a tree of small functions;
:meth:`Selector.evaluate` runs it against one message's identifiers, in time linear in the
selector's size (``LIKE`` is compiled to fixed-length pieces matched left to right, never a
backtracking regular expression). :class:`MessageFields` gives a message's identifiers the
way Qpid JMS and ActiveMQ Artemis map an AMQP message for selectors (see ``docs/broker.rst``,
"Selectors").

Values are NULL (None), booleans, exact numerics (Java ``long``: int, wrapped to 64 bits),
approximate numerics (Java ``double``: float) and strings. Properties of any other type are
present but compare as UNKNOWN. Logic is SQL's three-valued logic: a comparison with a NULL
operand, or of mismatched types (a string with a number: no coercion), is UNKNOWN; a message
is selected only when the selector is TRUE.
"""

from __future__ import annotations

import math
import operator
import re
import unicodedata
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from ..codec.amqp10 import AMQPValue, Described, Symbol, Timestamp, ULong, decode_from
from ..definitions.amqp10.messaging import ApplicationProperties, Header, Properties
from ..errors import DecodeError, RemoteProtocolError

__all__ = [
    "DEFAULT_SELECTOR_MAX_DEPTH",
    "DEFAULT_SELECTOR_MAX_LENGTH",
    "MAX_SELECTOR_DEPTH",
    "SELECTOR_FILTER",
    "SELECTOR_FILTER_CODE",
    "MessageFields",
    "Selector",
    "SelectorError",
    "selector_filter",
]

#: The descriptor of the selector filter (its symbolic and numeric forms): the filter's
#: value is the selector, a string.
SELECTOR_FILTER: Final = Symbol("apache.org:selector-filter:string")
SELECTOR_FILTER_CODE: Final = ULong(0x0000468C_00000004)
#: The longest selector accepted (characters), and the deepest nesting (parentheses, NOT,
#: unary signs), unless the broker's configuration says otherwise.
DEFAULT_SELECTOR_MAX_LENGTH: Final = 4096
DEFAULT_SELECTOR_MAX_DEPTH: Final = 32
#: The deepest nesting any configuration may allow: parsing recurses once per level.
MAX_SELECTOR_DEPTH: Final = 100

#: What an identifier may be: NULL, a boolean, a number, a string, or (``_OTHER``) a value
#: of a type selectors cannot compare.
Value = Any
Lookup = Callable[[str], Value]
_Fn = Callable[[Lookup], Value]


class _Other:
    """A property of a type selectors do not handle: not NULL, but equal to nothing."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unsupported>"


_OTHER: Final = _Other()
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class SelectorError(RemoteProtocolError, ValueError):
    """A selector that does not parse, or is longer or nested deeper than the limits.
    ``position`` is the offset (characters, from 0) where the fault was found. Its condition
    is ``amqp:invalid-field``: the broker refuses the attach that carries it."""

    condition: ClassVar[str] = "amqp:invalid-field"

    def __init__(self, description: str, position: int) -> None:
        super().__init__(description, offset=position)

    @property
    def position(self) -> int:
        assert self.offset is not None
        return self.offset

    def __str__(self) -> str:
        return f"{self.description} at position {self.offset}"


# -- tokens ---------------------------------------------------------------------------------

_KEYWORDS = frozenset(
    ("AND", "OR", "NOT", "BETWEEN", "LIKE", "IN", "IS", "NULL", "TRUE", "FALSE", "ESCAPE")
)
_SPACE = frozenset(" \t\f\n\r")
_DIGITS = frozenset("0123456789")
_OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",")
#: Java's identifier characters (Character.isJavaIdentifierStart / Part), by Unicode
#: category: letters, letter numbers, currency symbols and connector punctuation start one;
#: digits and combining marks may follow.
_START = frozenset(("Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Sc", "Pc"))
_PART = _START | {"Nd", "Mn", "Mc"}


def _is_start(c: str) -> bool:
    return (c.isascii() and (c.isalpha() or c in "_$")) or unicodedata.category(c) in _START


def _is_part(c: str) -> bool:
    return (c.isascii() and (c.isalnum() or c in "_$")) or unicodedata.category(c) in _PART


class _Token:
    __slots__ = ("kind", "pos", "text", "value")

    def __init__(self, kind: str, value: Any, pos: int, text: str = "") -> None:
        self.kind = kind  # "str", "int", "float", "ident", "kw", "op", "end"
        self.value = value
        self.pos = pos
        self.text = text

    def is_(self, kind: str, value: Any) -> bool:
        return self.kind == kind and self.value == value


_HEX = re.compile(r"0[xX]([0-9a-fA-F]+)[lL]?")
_NUMBER = re.compile(
    r"(?P<float>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|[0-9]+[eE][+-]?[0-9]+[fFdD]?|[0-9]+[fFdD])"
    r"|(?P<int>[0-9]+)[lL]?"
)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
            continue
        if c == "'":
            token, i = _string_literal(text, i)
        elif c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            token, i = _numeric_literal(text, i)
        elif _is_start(c):
            token, i = _word(text, i)
        else:
            token, i = _operator(text, i)
        out.append(token)
    out.append(_Token("end", None, n))
    return out


def _string_literal(text: str, start: int) -> tuple[_Token, int]:
    """The string literal at ``start`` (a quote; two quotes stand for one within it), and
    where it ends."""
    parts = []
    i = start + 1
    while True:
        j = text.find("'", i)
        if j < 0:
            raise SelectorError("unterminated string literal", start)
        parts.append(text[i:j])
        if text[j + 1 : j + 2] != "'":
            return _Token("str", "".join(parts), start), j + 1
        parts.append("'")
        i = j + 2


def _numeric_literal(text: str, start: int) -> tuple[_Token, int]:
    """The numeric literal at ``start`` (hexadecimal, octal, decimal or floating-point),
    and where it ends."""
    m = _HEX.match(text, start)
    if m is not None:
        value = int(m.group(1), 16)
        if value > 2**64 - 1:
            raise SelectorError("hexadecimal literal out of range", start)
        token = _Token("int", _wrap(value), start, m.group(0))
    else:
        m = _NUMBER.match(text, start)
        assert m is not None
        token = _decimal(m, start)
    i = m.end()
    if i < len(text) and (_is_part(text[i]) or text[i] == "."):
        raise SelectorError(f"unexpected {text[i]!r} after a number", i)
    return token, i


def _decimal(m: re.Match[str], start: int) -> _Token:
    """A floating-point, octal or decimal literal, as matched by :data:`_NUMBER`."""
    if m.group("float") is not None:
        number = float(m.group("float").rstrip("fFdD"))
        if math.isinf(number):
            raise SelectorError("floating-point literal out of range", start)
        return _Token("float", number, start, m.group(0))
    digits = m.group("int")
    if len(digits) > 1 and digits[0] == "0":
        if any(d in "89" for d in digits):
            raise SelectorError("invalid octal literal", start)
        value = int(digits, 8)
        if value > 2**64 - 1:
            raise SelectorError("octal literal out of range", start)
        return _Token("int", _wrap(value), start, m.group(0))
    value = int(digits)
    if value > 2**63:
        raise SelectorError("integer literal out of range", start)
    return _Token("int", value, start, m.group(0))


def _word(text: str, start: int) -> tuple[_Token, int]:
    """The keyword or identifier at ``start``, and where it ends."""
    i, n = start + 1, len(text)
    while i < n and _is_part(text[i]):
        i += 1
    word = text[start:i]
    upper = word.upper()
    if upper in _KEYWORDS:
        return _Token("kw", upper, start, word), i
    return _Token("ident", word, start, word), i


def _operator(text: str, start: int) -> tuple[_Token, int]:
    """The operator or punctuation at ``start``, and where it ends."""
    for op in _OPERATORS:
        if text.startswith(op, start):
            return _Token("op", op, start, op), start + len(op)
    raise SelectorError(f"unexpected character {text[start]!r}", start)


# -- evaluation helpers ---------------------------------------------------------------------


def _wrap(value: int) -> int:
    """A Java ``long``: two's complement, 64 bits."""
    value &= 0xFFFF_FFFF_FFFF_FFFF
    return value - 2**64 if value > _LONG_MAX else value


def _truth(value: Value) -> bool | None:
    return value if type(value) is bool else None


def _compare(op: Callable[[Any, Any], bool], equality: bool, a: Value, b: Value) -> bool | None:
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        if ta is not tb:
            return op(float(a), float(b))  # numeric promotion (Java: long to double)
        return op(a, b)
    if equality and ta is tb and (ta is str or ta is bool):
        return op(a, b)
    return None  # NULL, mismatched or unsupported types: UNKNOWN


def _div(a: Any, b: Any) -> Any:
    if type(a) is int:  # both exact: Java's long division, truncating toward zero
        if b == 0:
            return None  # Java throws; the selector cannot be TRUE: UNKNOWN
        q = abs(a) // abs(b)
        return _wrap(q if (a < 0) == (b < 0) else -q)
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": _div,
}


def _arith(symbol: str, a: Value, b: Value) -> Value:
    ta, tb = type(a), type(b)
    if not ((ta is int or ta is float) and (tb is int or tb is float)):
        return None
    if ta is int and tb is int:
        result = _ARITH[symbol](a, b)
        return result if symbol == "/" else _wrap(result)
    return _ARITH[symbol](float(a), float(b))


class _Like:
    """A LIKE pattern as fixed-length pieces between ``%`` signs, each a regular expression
    of literal characters and ``.`` (for ``_``): matched anchored at the start, leftmost in
    the middle, anchored at the end. No piece can backtrack into another, so a match costs
    at most the value's length times the pattern's."""

    __slots__ = ("_first", "_last", "_middle", "_single", "_width")

    def __init__(self, pattern: str, escape: str | None, pos: int) -> None:
        pieces: list[list[str]] = [[]]
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if escape is not None and c == escape:
                if i + 1 >= len(pattern):
                    raise SelectorError("LIKE pattern ends with its escape character", pos)
                nxt = pattern[i + 1]
                if nxt not in ("%", "_", escape):
                    raise SelectorError(
                        f"escape character before {nxt!r} in a LIKE pattern (only %, _ or "
                        "itself may follow it)",
                        pos,
                    )
                pieces[-1].append(re.escape(nxt))
                i += 2
                continue
            if c == "%":
                pieces.append([])
            elif c == "_":
                pieces[-1].append(".")
            else:
                pieces[-1].append(re.escape(c))
            i += 1
        compiled = [re.compile("".join(p), re.DOTALL) for p in pieces]
        widths = [len(p) for p in pieces]
        self._single = len(pieces) == 1
        self._first = (compiled[0], widths[0])
        self._last = (compiled[-1], widths[-1])
        self._middle = list(zip(compiled[1:-1], widths[1:-1], strict=True))
        self._width = sum(widths)

    def __call__(self, value: str) -> bool:
        n = len(value)
        if self._single:
            return n == self._width and self._first[0].fullmatch(value) is not None
        if n < self._width:
            return False
        first, width = self._first
        if first.match(value) is None:
            return False
        pos = width
        last, last_width = self._last
        end = n - last_width
        for piece, piece_width in self._middle:
            if not piece_width:
                continue
            m = piece.search(value, pos, end)
            if m is None:
                return False
            pos = m.end()
        return pos <= end and last.fullmatch(value, end) is not None


# -- the parser -----------------------------------------------------------------------------

# The static kind of an expression, to refuse what can never be right ('a' + 1, NOT 5):
# "bool", "num", "str", or "any" (an identifier, known only at evaluation).
_Node = tuple[_Fn, str]


class _Parser:
    def __init__(self, text: str, max_depth: int) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0
        self.max_depth = max_depth

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def next(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def error(self, what: str, tok: _Token | None = None) -> SelectorError:
        tok = tok or self.tok
        found = "the end" if tok.kind == "end" else repr(tok.text or str(tok.value))
        if tok.kind == "str":
            found = "a string"
        return SelectorError(f"{what}, found {found}", tok.pos)

    def expect(self, kind: str, value: Any, what: str) -> _Token:
        if not self.tok.is_(kind, value):
            raise self.error(f"expected {what}")
        return self.next()

    def nest(self, tok: _Token) -> None:
        """One level deeper, at ``tok`` (a parenthesis, NOT or a sign)."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise SelectorError(f"nested deeper than {self.max_depth} levels", tok.pos)

    def parse(self) -> _Fn:
        fn, kind = self.or_()
        if self.tok.kind != "end":
            raise self.error("expected an operator or the end")
        self.condition(kind, self.tokens[0])
        return fn

    def condition(self, kind: str, tok: _Token) -> None:
        if kind in ("num", "str"):
            raise SelectorError("expected a condition, not a number or a string", tok.pos)

    def or_(self) -> _Node:
        start = self.tok
        fn, kind = self.and_()
        if not self.tok.is_("kw", "OR"):
            return fn, kind
        self.condition(kind, start)
        fns = [fn]
        while self.tok.is_("kw", "OR"):
            self.next()
            start = self.tok
            fn, kind = self.and_()
            self.condition(kind, start)
            fns.append(fn)

        def or_fn(get: Lookup) -> Value:
            result: bool | None = False
            for f in fns:
                v = _truth(f(get))
                if v is True:
                    return True
                if v is None:
                    result = None
            return result

        return or_fn, "bool"

    def and_(self) -> _Node:
        start = self.tok
        fn, kind = self.not_()
        if not self.tok.is_("kw", "AND"):
            return fn, kind
        self.condition(kind, start)
        fns = [fn]
        while self.tok.is_("kw", "AND"):
            self.next()
            start = self.tok
            fn, kind = self.not_()
            self.condition(kind, start)
            fns.append(fn)

        def and_fn(get: Lookup) -> Value:
            result: bool | None = True
            for f in fns:
                v = _truth(f(get))
                if v is False:
                    return False
                if v is None:
                    result = None
            return result

        return and_fn, "bool"

    def not_(self) -> _Node:
        if not self.tok.is_("kw", "NOT"):
            return self.predicate()
        self.nest(self.next())
        start = self.tok
        fn, kind = self.not_()
        self.depth -= 1
        self.condition(kind, start)

        def not_fn(get: Lookup) -> Value:
            v = _truth(fn(get))
            return None if v is None else not v

        return not_fn, "bool"

    def predicate(self) -> _Node:
        left, kind = self.sum_()
        tok = self.tok
        if tok.kind == "op" and tok.value in _COMPARISONS:
            return self.comparison(left, tok), "bool"
        negate = False
        if tok.is_("kw", "NOT"):
            following = self.tokens[self.i + 1]
            if following.kind == "kw" and following.value in ("BETWEEN", "LIKE", "IN"):
                self.next()
                negate = True
                tok = self.tok
        if tok.is_("kw", "BETWEEN"):
            self.next()
            low, _ = self.sum_()
            self.expect("kw", "AND", "AND in BETWEEN")
            high, _ = self.sum_()
            return self.between(left, low, high, negate), "bool"
        if tok.is_("kw", "LIKE"):
            self.next()
            if kind in ("num", "bool"):
                raise SelectorError("LIKE applies to strings", tok.pos)
            return self.like(left, self.like_pattern(), negate), "bool"
        if tok.is_("kw", "IN"):
            self.next()
            if kind in ("num", "bool"):
                raise SelectorError("IN applies to strings", tok.pos)
            return self.in_(left, self.in_list(), negate), "bool"
        if tok.is_("kw", "IS"):
            self.next()
            return self.is_null(left), "bool"
        return left, kind

    def comparison(self, left: _Fn, tok: _Token) -> _Fn:
        """``left`` compared (``tok``, the operator) with the sum that follows."""
        self.next()
        right, _ = self.sum_()
        op, equality = _COMPARISONS[tok.value]
        if self.tok.kind == "op" and self.tok.value in _COMPARISONS:
            raise self.error("comparisons do not chain; use AND")
        return lambda get: _compare(op, equality, left(get), right(get))

    def like_pattern(self) -> _Like:
        """The pattern after LIKE: a string literal, with an ESCAPE character or not."""
        pattern = self.tok
        if pattern.kind != "str":
            raise self.error("expected a string literal as the LIKE pattern")
        self.next()
        escape: str | None = None
        if self.tok.is_("kw", "ESCAPE"):
            self.next()
            esc = self.tok
            if esc.kind != "str" or len(esc.value) != 1:
                raise self.error("expected a one-character string after ESCAPE")
            escape = esc.value
            self.next()
        return _Like(pattern.value, escape, pattern.pos)

    def in_list(self) -> frozenset[str]:
        """The parenthesised list of string literals after IN."""
        self.expect("op", "(", "( after IN")
        values = []
        while True:
            item = self.tok
            if item.kind != "str":
                raise self.error("expected a string literal in the IN list")
            values.append(item.value)
            self.next()
            if not self.tok.is_("op", ","):
                self.expect("op", ")", ", or ) in the IN list")
                return frozenset(values)
            self.next()

    def is_null(self, left: _Fn) -> _Fn:
        """What follows IS: [NOT] NULL."""
        null_negate = False
        if self.tok.is_("kw", "NOT"):
            self.next()
            null_negate = True
        self.expect("kw", "NULL", "NULL after IS")
        if null_negate:
            return lambda get: left(get) is not None
        return lambda get: left(get) is None

    @staticmethod
    def between(left: _Fn, low: _Fn, high: _Fn, negate: bool) -> _Fn:
        # x BETWEEN a AND b is x >= a AND x <= b; NOT BETWEEN is x < a OR x > b.
        def between_fn(get: Lookup) -> Value:
            x = left(get)
            if negate:
                below = _compare(operator.lt, False, x, low(get))
                above = _compare(operator.gt, False, x, high(get))
                if below is True or above is True:
                    return True
                return None if below is None or above is None else False
            lo = _compare(operator.ge, False, x, low(get))
            hi = _compare(operator.le, False, x, high(get))
            if lo is False or hi is False:
                return False
            return None if lo is None or hi is None else True

        return between_fn

    @staticmethod
    def like(left: _Fn, like: _Like, negate: bool) -> _Fn:
        def like_fn(get: Lookup) -> Value:
            v = left(get)
            if type(v) is not str:
                return None
            return like(v) is not negate

        return like_fn

    @staticmethod
    def in_(left: _Fn, values: frozenset[str], negate: bool) -> _Fn:
        def in_fn(get: Lookup) -> Value:
            v = left(get)
            if type(v) is not str:
                return None
            return (v in values) is not negate

        return in_fn

    def sum_(self) -> _Node:
        return self.chain(self.product, ("+", "-"))

    def product(self) -> _Node:
        return self.chain(self.unary, ("*", "/"))

    def chain(self, operand: Callable[[], _Node], symbols: tuple[str, str]) -> _Node:
        start = self.tok
        fn, kind = operand()
        if not (self.tok.kind == "op" and self.tok.value in symbols):
            return fn, kind
        self.arithmetic(kind, start)
        rest: list[tuple[str, _Fn]] = []
        while self.tok.kind == "op" and self.tok.value in symbols:
            symbol = self.next().value
            start = self.tok
            right, kind = operand()
            self.arithmetic(kind, start)
            rest.append((symbol, right))
        first = fn

        def chain_fn(get: Lookup) -> Value:
            value = first(get)
            for symbol, f in rest:
                value = _arith(symbol, value, f(get))
            return value

        return chain_fn, "num"

    def arithmetic(self, kind: str, tok: _Token) -> None:
        if kind in ("str", "bool"):
            raise SelectorError("arithmetic applies to numbers", tok.pos)

    def unary(self) -> _Node:
        tok = self.tok
        if tok.kind == "op" and tok.value in ("+", "-"):
            self.next()
            following = self.tok
            if tok.value == "-" and following.kind == "int" and following.value == 2**63:
                self.next()  # Long.MIN_VALUE: the one literal that needs its sign
                return (lambda get: _LONG_MIN), "num"
            self.nest(tok)
            fn, kind = self.unary()
            self.depth -= 1
            self.arithmetic(kind, following)
            if tok.value == "+":
                return (lambda get: _plus(fn(get))), "num"
            return (lambda get: _minus(fn(get))), "num"
        return self.primary()

    def primary(self) -> _Node:
        tok = self.next()
        kind = tok.kind
        if kind == "op" and tok.value == "(":
            self.nest(tok)
            node = self.or_()
            self.depth -= 1
            self.expect("op", ")", ")")
            return node
        if kind == "int":
            if tok.value > _LONG_MAX:
                raise SelectorError("integer literal out of range", tok.pos)
            value = tok.value
            return (lambda get: value), "num"
        if kind == "float":
            number = tok.value
            return (lambda get: number), "num"
        if kind == "str":
            string = tok.value
            return (lambda get: string), "str"
        if kind == "ident":
            name = tok.value
            return (lambda get: get(name)), "any"
        if kind == "kw" and tok.value in ("TRUE", "FALSE"):
            flag = tok.value == "TRUE"
            return (lambda get: flag), "bool"
        if kind == "kw" and tok.value == "NULL":
            raise SelectorError("NULL is only allowed in IS [NOT] NULL", tok.pos)
        self.i -= 1
        raise self.error("expected a value, an identifier or (")


def _plus(v: Value) -> Value:
    t = type(v)
    return v if t is int or t is float else None


def _minus(v: Value) -> Value:
    t = type(v)
    if t is int:
        return _wrap(-v)
    return -v if t is float else None


_COMPARISONS: dict[str, tuple[Callable[[Any, Any], bool], bool]] = {
    "=": (operator.eq, True),
    "<>": (operator.ne, True),
    "<": (operator.lt, False),
    ">": (operator.gt, False),
    "<=": (operator.le, False),
    ">=": (operator.ge, False),
}


class Selector:
    """A parsed JMS message selector (JMS 2.0 section 3.8.1.1). Raises
    :class:`SelectorError` for one that does not parse, is longer than ``max_length``
    characters or nests (parentheses, ``NOT``, unary signs) deeper than ``max_depth``.

    >>> from amqp_sansio.broker import Selector
    >>> s = Selector("color = 'red' AND weight BETWEEN 1 AND 2.5")
    >>> s.evaluate({"color": "red", "weight": 2})
    True
    >>> s.evaluate({"color": "red"}) is None  # weight is NULL: UNKNOWN
    True
    >>> s.matches({"color": "blue", "weight": 2})
    False
    """

    __slots__ = ("_fn", "text")

    def __init__(
        self,
        text: str,
        *,
        max_length: int = DEFAULT_SELECTOR_MAX_LENGTH,
        max_depth: int = DEFAULT_SELECTOR_MAX_DEPTH,
    ) -> None:
        if not isinstance(text, str):
            raise TypeError("a selector is a string")
        if not 1 <= max_depth <= MAX_SELECTOR_DEPTH:
            raise ValueError(f"max_depth is 1 to {MAX_SELECTOR_DEPTH}")
        if len(text) > max_length:
            raise SelectorError(f"selector longer than {max_length} characters", max_length)
        if not text.strip(" \t\f\n\r"):
            raise SelectorError("empty selector", 0)
        self.text = text
        self._fn = _Parser(text, max_depth).parse()

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"

    def evaluate(self, fields: Lookup | Mapping[str, object]) -> bool | None:
        """TRUE, FALSE or UNKNOWN (None) for a message whose identifiers are ``fields``: a
        :class:`MessageFields`, any function from a name to a value, or a mapping of names
        to values (a missing name is NULL; values are taken as :class:`MessageFields` takes
        application properties)."""
        get: Lookup
        if isinstance(fields, Mapping):
            mapping = fields

            def get(name: str) -> Value:
                return _property(mapping.get(name))

        else:
            get = fields
        return _truth(self._fn(get))

    def matches(self, fields: Lookup | Mapping[str, object]) -> bool:
        """Whether the message is selected: the selector is TRUE for it."""
        return self.evaluate(fields) is True


# -- a message's identifiers ----------------------------------------------------------------

_HEADER, _PROPERTIES, _APPLICATION_PROPERTIES = 0x70, 0x73, 0x74
_TYPE_PREFIXES = ("AMQP_BINARY:", "AMQP_UUID:", "AMQP_ULONG:", "AMQP_STRING:", "AMQP_NO_PREFIX:")


def _property(value: Any) -> Value:
    """An application-property value as selectors see it: the JMS property types (boolean,
    the integers up to Java's long, float and double, string); None is NULL; anything else
    (a timestamp, uuid, binary, char, decimal, ulong beyond a long, a list, a map) is a
    value of another type."""
    if value is None:
        return None
    t = type(value)
    if t is bool or t is str or t is int or t is float:
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value) if t is Symbol else _OTHER
    if isinstance(value, int) and not isinstance(value, Timestamp):
        return int(value) if _LONG_MIN <= value <= _LONG_MAX else _OTHER
    if isinstance(value, float):
        return float(value)
    return _OTHER


def _id_string(value: Any, *, message_id: bool) -> Value:
    """A message-id or correlation-id as Qpid JMS shows it (the AMQP JMS mapping's
    JMSMessageID and JMSCorrelationID handling)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = str(value)
        if not text.startswith("ID:"):
            return "ID:AMQP_NO_PREFIX:" + text if message_id else text
        if text.startswith(_TYPE_PREFIXES, 3):
            return "ID:AMQP_STRING:" + text
        return text
    if isinstance(value, uuid.UUID):
        return f"ID:AMQP_UUID:{value}"
    if isinstance(value, int):
        return f"ID:AMQP_ULONG:{int(value)}"
    if isinstance(value, bytes | bytearray):
        return "ID:AMQP_BINARY:" + bytes(value).hex().upper()
    return _OTHER


def _int32(value: int) -> int:
    """A uint as Java's ``int`` shows it (Qpid JMS's JMSXGroupSeq): wrapped past 2**31-1."""
    return value - 2**32 if value > 2**31 - 1 else value


def _text(value: Any) -> Value:
    return None if value is None else str(value)


def _number(value: Any, default: int | None = None) -> Value:
    return default if value is None else int(value)


class MessageFields:
    """The identifiers of one encoded message (its sections as sent, core spec 3.2), read
    lazily: the header, properties and application-properties are decoded on the first
    lookup, the body never. Call it with a name to get a value. ``address`` is the node the
    message is at (``AMQAddress``). ``verdicts`` is free for a caller to remember
    selectors' answers about this message in.

    The JMS names (as Qpid JMS maps an AMQP message, and ActiveMQ Artemis evaluates
    selectors on one), then Artemis's own, then the application-properties by name; a name
    found nowhere is NULL. See ``docs/broker.rst``, "Selectors", for the table."""

    __slots__ = ("_app", "_data", "_header", "_properties", "_read", "address", "verdicts")

    def __init__(self, data: bytes, *, address: str | None = None) -> None:
        self._data = data
        self.address = address
        self._read = False
        self._header: Header | None = None
        self._properties: Properties | None = None
        self._app: Mapping[Any, Any] = {}
        self.verdicts: dict[Any, bool] = {}

    def _decode(self) -> None:
        self._read = True
        data = self._data
        pos = 0
        try:
            while pos < len(data):
                if data[pos] != 0 or pos + 2 >= len(data) or data[pos + 1] != 0x53:
                    break  # not a section with a small descriptor: no more to read
                code = data[pos + 2]
                if code > _APPLICATION_PROPERTIES:
                    break  # the body: never read
                value, pos = decode_from(data, pos)
                if isinstance(value, Header):
                    self._header = value
                elif isinstance(value, Properties):
                    self._properties = value
                elif isinstance(value, ApplicationProperties):
                    given = value.value
                    self._app = given if isinstance(given, Mapping) else {}
                    break
        except DecodeError:
            pass  # what decoded stays; the rest is absent (NULL)

    def __call__(self, name: str) -> Value:
        if not self._read:
            self._decode()
        special = _SPECIAL.get(name)
        if special is not None:
            return special(self)
        return _property(self._app.get(name))

    @property
    def size(self) -> int:
        return len(self._data)


def _header_field(name: str, default: Any) -> Callable[[MessageFields], Any]:
    def get(m: MessageFields) -> Any:
        header = m._header
        return default if header is None else getattr(header, name)

    return get


def _properties_field(name: str) -> Callable[[MessageFields], Any]:
    def get(m: MessageFields) -> Any:
        properties = m._properties
        return None if properties is None else getattr(properties, name)

    return get


_priority = _header_field("priority", 4)
_durable = _header_field("durable", False)
_message_id = _properties_field("message_id")
_correlation_id = _properties_field("correlation_id")
_creation = _properties_field("creation_time")
_expiry = _properties_field("absolute_expiry_time")
_subject = _properties_field("subject")
_group = _properties_field("group_id")
_group_seq = _properties_field("group_sequence")
_user = _properties_field("user_id")


def _user_id(m: MessageFields) -> Value:
    value = _user(m)
    if not value:
        return None
    try:
        return bytes(value).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        return _OTHER


def _amq_user_id(m: MessageFields) -> Value:
    value = _message_id(m)
    return None if value is None else str(value) if isinstance(value, str) else _OTHER


_SPECIAL: dict[str, Callable[[MessageFields], Value]] = {
    "JMSMessageID": lambda m: _id_string(_message_id(m), message_id=True),
    "JMSCorrelationID": lambda m: _id_string(_correlation_id(m), message_id=False),
    "JMSPriority": lambda m: int(_priority(m)),
    "JMSDeliveryMode": lambda m: "PERSISTENT" if _durable(m) else "NON_PERSISTENT",
    "JMSTimestamp": lambda m: _number(_creation(m), 0),
    "JMSExpiration": lambda m: _number(_expiry(m), 0),
    "JMSType": lambda m: _text(_subject(m)),
    "JMSXGroupID": lambda m: _text(_group(m)),
    "JMSXGroupSeq": lambda m: _int32(_number(_group_seq(m), 0)),
    "JMSXUserID": _user_id,
    "AMQUserID": _amq_user_id,
    "AMQAddress": lambda m: m.address,
    "AMQGroupID": lambda m: _text(_group(m)),
    "AMQPriority": lambda m: int(_priority(m)),
    "AMQExpiration": lambda m: _number(_expiry(m), 0),
    "AMQDurable": lambda m: "DURABLE" if _durable(m) else "NON_DURABLE",
    "AMQTimestamp": lambda m: _number(_creation(m), 0),
    "AMQSize": lambda m: m.size,
}


def selector_filter(filters: object) -> tuple[AMQPValue, Described, str] | None:
    """The selector filter of a source's filter-set (core spec 3.5.8), whatever its key
    (Proton names it ``selector``, Qpid JMS ``jms-selector``): ``(key, value, text)``, with
    the entry's key and value as given, or None if there is none (or its text is blank,
    which JMS treats as no selector). Known by its descriptor, symbolic or numeric. Raises
    :class:`SelectorError` when its value is not a string, or there are two."""
    if not isinstance(filters, Mapping):
        return None
    found: tuple[AMQPValue, Described, str] | None = None
    for key, value in filters.items():
        if not isinstance(value, Described):
            continue
        descriptor = value.descriptor
        if descriptor != SELECTOR_FILTER and not (
            isinstance(descriptor, int) and descriptor == SELECTOR_FILTER_CODE
        ):
            continue
        if found is not None:
            raise SelectorError("a filter-set with more than one selector filter", 0)
        text = value.value
        if not isinstance(text, str):
            raise SelectorError(f"a selector filter's value is a string, not {text!r:.60}", 0)
        found = (key, value, str(text))
    if found is None or not found[2].strip(" \t\f\n\r"):
        return None
    return found
