"""More of the broker's 0-9-1 exchanges (amqp_sansio.broker.Exchange, Binding,
headers_match): bindings told apart by arguments of every kind, headers matching by
RabbitMQ's type classes, a byte-string x-match, the topic trie's bookkeeping."""

from __future__ import annotations

import datetime
import decimal

import pytest

from amqp_sansio.broker import Binding, Exchange, headers_match
from amqp_sansio.broker.amqp091.exchanges import TopicTrie, check_binding_arguments, destinations
from amqp_sansio.codec import amqp091 as c091


def _route(exchange: Exchange, key: str, headers: dict | None = None) -> list[str]:
    return [b.destination[1] for b in exchange.match(key, headers)]


def test_bindings_with_nested_arguments_are_one_binding() -> None:
    args = {"x-match": "all", "tags": ["a", {"b": 1}], "raw": bytearray(b"r")}
    same = {"raw": bytearray(b"r"), "tags": ["a", {"b": 1}], "x-match": "all"}
    assert Binding("h", ("queue", "q"), "", args) == Binding("h", ("queue", "q"), "", same)
    assert Binding("h", ("queue", "q"), "", args) != Binding(
        "h", ("queue", "q"), "", {**args, "tags": ["a", {"b": 2}]}
    )
    headers = Exchange("h", "headers")
    assert headers.bind(Binding("h", ("queue", "q"), "", args))
    assert not headers.bind(Binding("h", ("queue", "q"), "", same))
    assert len(headers.bindings) == 1
    # redeclaring with list arguments compares them as values
    ex = Exchange("e", "direct", arguments={"list": [1, 2]})
    assert ex.equivalent("direct", False, False, False, {"list": [1, 2]}) is None
    assert ex.equivalent("direct", False, False, False, {"list": [2, 1]}) is not None


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        (1.5, 1.5, True),
        (c091.Float32(1.5), 1.5, True),  # floats of either width: one class
        (1.5, 1, False),
        ("pdf", b"pdf", True),  # strings and byte strings: one class
        (b"pdf", "pdf", True),
        (bytearray(b"pdf"), "zip", False),
        (decimal.Decimal("1.5"), decimal.Decimal("1.5"), True),
        (decimal.Decimal("1.5"), 1.5, False),
        (datetime.datetime(2026, 1, 1), datetime.datetime(2026, 1, 1), True),
        (datetime.datetime(2026, 1, 1), 1767225600, False),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, [1], False),
        ([1, 2], [1, 2], True),
        ([1, 2], (1, 2), False),  # one class, not equal values
        (c091.Timestamp(5), c091.Timestamp(5), True),
    ],
)
def test_headers_values_match_by_class_and_value(
    pattern: object, value: object, matches: bool
) -> None:
    assert headers_match({"k": pattern}, {"k": value}) is matches  # type: ignore[dict-item]


def test_a_value_of_no_known_class_matches_only_its_equal() -> None:
    class Odd:
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Odd)

        __hash__ = object.__hash__

    assert headers_match({"k": Odd()}, {"k": Odd()})  # type: ignore[dict-item]
    assert not headers_match({"k": Odd()}, {"k": "odd"})  # type: ignore[dict-item]


def test_x_match_as_a_byte_string() -> None:
    headers = {"a": 1, "b": 2}
    assert headers_match({"x-match": b"any", "a": 1, "b": 3}, headers)
    assert not headers_match({"x-match": b"all", "a": 1, "b": 3}, headers)
    assert check_binding_arguments("headers", {"x-match": b"any-with-x"}) is None
    why = check_binding_arguments("headers", {"x-match": bytearray(b"most")})
    assert why is not None and "'most'" in why


def test_trie_bookkeeping_add_twice_remove_missing_and_prune() -> None:
    trie = TopicTrie()
    deep = Binding("t", ("queue", "deep"), "a.b.c")
    shallow = Binding("t", ("queue", "shallow"), "a")
    trie.add(deep)
    trie.add(deep)  # a binding once
    trie.add(shallow)
    assert len(trie) == 2
    trie.remove(Binding("t", ("queue", "x"), "z.y"))  # no such path
    trie.remove(Binding("t", ("queue", "other"), "a.b.c"))  # the path, not the binding
    assert len(trie) == 2 and trie.match("a.b.c") == [deep]
    trie.remove(deep)  # prunes b.c, keeps a (it holds a binding)
    assert len(trie) == 1 and trie.match("a.b.c") == [] and trie.match("a") == [shallow]
    trie.remove(shallow)
    assert len(trie) == 0 and trie.match("a") == []


def test_exchange_repr_and_destinations_each_once() -> None:
    topic = Exchange("logs", "topic")
    assert repr(topic) == "<Exchange 'logs' topic>"
    topic.bind(Binding("logs", ("queue", "q"), "a.*"))
    topic.bind(Binding("logs", ("queue", "q"), "*.b"))
    topic.bind(Binding("logs", ("exchange", "e"), "#"))
    assert sorted(destinations(topic.match("a.b", None))) == [("exchange", "e"), ("queue", "q")]
    assert len(list(topic.match("a.b", None))) == 3
    assert topic.unbind_destination(("queue", "q")) and _route(topic, "a.b") == ["e"]
