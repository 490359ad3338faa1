"""Exchanges of the broker's 0-9-1 side: topic matching as RabbitMQ's (a property test
against a reference built independently, a regular expression), the trie against the plain
matcher, headers matching (x-match all/any/all-with-x/any-with-x), each exchange type's
routing."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_sansio.broker.amqp091.exchanges import (
    Binding,
    Exchange,
    TopicTrie,
    check_binding_arguments,
    headers_match,
    topic_matches,
)
from amqp_sansio.codec import amqp091 as c091


def _regex(binding_key: str) -> re.Pattern[str]:
    """An independent reading of RabbitMQ's rule, on the dotted string: '*' is one word
    (possibly empty, between dots), '#' zero or more words with their dots."""
    if binding_key == "":
        return re.compile(r"\A\Z")
    words = binding_key.split(".")
    out = ""
    for i, word in enumerate(words):
        first = i == 0
        if word == "#":
            # zero words: nothing (and no dot); or words, joined by dots, with the dot
            # that separates them from what came before
            out += r"(?:\.?[^.]*(?:\.[^.]*)*)?" if not first else r"(?:[^.]*(?:\.[^.]*)*)?"
        else:
            piece = "[^.]*" if word == "*" else re.escape(word)
            out += piece if first else r"\." + piece
    return re.compile(r"\A" + out + r"\Z")


def _words_ref(binding: list[str], words: list[str]) -> bool:
    """The rule by recursion on word lists (the definition itself)."""
    if not binding:
        return not words
    head, rest = binding[0], binding[1:]
    if head == "#":
        return any(_words_ref(rest, words[i:]) for i in range(len(words) + 1))
    if not words:
        return False
    return (head == "*" or head == words[0]) and _words_ref(rest, words[1:])


def _split(key: str) -> list[str]:
    return key.split(".") if key else []


WORD = st.sampled_from(["a", "b", "c", "", "ab"])
PATTERN_WORD = st.sampled_from(["a", "b", "c", "*", "#", ""])
ROUTING = st.lists(WORD, max_size=6).map(".".join)
BINDING = st.lists(PATTERN_WORD, max_size=6).map(".".join)


@settings(max_examples=600, deadline=None)
@given(BINDING, ROUTING)
def test_topic_matching_is_the_definition(binding: str, routing: str) -> None:
    assert topic_matches(binding, routing) == _words_ref(_split(binding), _split(routing))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "*"]), min_size=1, max_size=5), ROUTING)
def test_topic_matching_without_hash_agrees_with_a_regex(words: list[str], routing: str) -> None:
    binding = ".".join(words)
    # (the empty routing key is no words at all, not one empty word: the regex cannot say)
    expected = routing != "" and bool(_regex(binding).match(routing))
    assert topic_matches(binding, routing) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(BINDING, max_size=12), st.lists(ROUTING, min_size=1, max_size=6), st.data())
def test_trie_finds_exactly_the_matching_bindings(
    keys: list[str], routings: list[str], data: st.DataObject
) -> None:
    trie = TopicTrie()
    bindings = [Binding("t", ("queue", f"q{i}"), key) for i, key in enumerate(keys)]
    for binding in bindings:
        trie.add(binding)
    removed = data.draw(st.lists(st.sampled_from(bindings), max_size=4)) if bindings else []
    for binding in removed:
        trie.remove(binding)
    live = [b for b in bindings if b not in removed]
    assert len(trie) == len(live)
    for routing in routings:
        expected = {b for b in live if topic_matches(b.routing_key, routing)}
        assert set(trie.match(routing)) == expected
        assert len(trie.match(routing)) == len(expected)  # each once


@pytest.mark.parametrize(
    ("binding", "routing", "matches"),
    [
        ("*.orange.*", "quick.orange.rabbit", True),
        ("*.*.rabbit", "lazy.orange.elephant", False),
        ("lazy.#", "lazy", True),
        ("lazy.#", "lazy.pink.rabbit", True),
        ("*.orange.*", "quick.orange.male.rabbit", False),
        ("#", "", True),
        ("*", "", False),
        ("", "", True),
        ("*", "a.", False),
        ("*.*", "a.", True),  # 'a.' is two words, the second empty
        ("#.#", "x", True),
        ("a.#.b", "a.b", True),
        ("a.#.b", "a.x.y.b", True),
        ("a.*.#", "a", False),
    ],
)
def test_rabbitmq_tutorial_examples(binding: str, routing: str, matches: bool) -> None:
    assert topic_matches(binding, routing) is matches
    trie = TopicTrie()
    b = Binding("t", ("queue", "q"), binding)
    trie.add(b)
    assert (trie.match(routing) == [b]) is matches


def test_headers_matching() -> None:
    headers = {"format": "pdf", "type": "report", "x-tag": "t", "n": 5}
    assert headers_match({"x-match": "all", "format": "pdf", "type": "report"}, headers)
    assert not headers_match({"x-match": "all", "format": "pdf", "type": "log"}, headers)
    assert headers_match({"x-match": "any", "format": "zip", "type": "report"}, headers)
    assert not headers_match({"x-match": "any", "format": "zip", "type": "log"}, headers)
    assert headers_match({"format": "pdf"}, headers)  # all by default
    # x- arguments are ignored unless -with-x
    assert headers_match({"x-match": "all", "format": "pdf", "x-tag": "other"}, headers)
    assert not headers_match({"x-match": "all-with-x", "format": "pdf", "x-tag": "other"}, headers)
    assert headers_match({"x-match": "all-with-x", "format": "pdf", "x-tag": "t"}, headers)
    assert headers_match({"x-match": "any-with-x", "x-tag": "t", "format": "no"}, headers)
    assert not headers_match({"x-match": "any", "x-tag": "t", "format": "no"}, headers)
    # void: presence only
    assert headers_match({"type": None}, headers)
    assert not headers_match({"missing": None}, headers)
    # integer widths are one class; a string is not an integer
    assert headers_match({"n": c091.Int64(5)}, headers)
    assert headers_match({"n": c091.UInt8(5)}, headers)
    assert not headers_match({"n": "5"}, headers)
    assert not headers_match({"n": True}, {"n": 1})
    # nothing to match: all matches everything, any nothing
    assert headers_match({"x-match": "all"}, {})
    assert not headers_match({"x-match": "any"}, headers)
    assert headers_match({"x-match": "all", "a": 1}, None) is False
    assert check_binding_arguments("headers", {"x-match": "some"}) is not None
    assert check_binding_arguments("headers", {"x-match": "any-with-x"}) is None
    assert check_binding_arguments("topic", {"x-match": "some"}) is None


def _route(exchange: Exchange, key: str, headers: dict | None = None) -> list[str]:
    return [b.destination[1] for b in exchange.match(key, headers)]


def test_each_exchange_type_routes() -> None:
    direct = Exchange("d", "direct")
    direct.bind(Binding("d", ("queue", "q1"), "k"))
    direct.bind(Binding("d", ("queue", "q2"), "k"))
    direct.bind(Binding("d", ("queue", "q3"), "other"))
    assert not direct.bind(Binding("d", ("queue", "q1"), "k"))  # a binding is made once
    assert sorted(_route(direct, "k")) == ["q1", "q2"]
    assert _route(direct, "nothing") == []
    assert direct.unbind(Binding("d", ("queue", "q1"), "k"))
    assert not direct.unbind(Binding("d", ("queue", "q1"), "k"))
    assert _route(direct, "k") == ["q2"]

    fanout = Exchange("f", "fanout")
    fanout.bind(Binding("f", ("queue", "a"), "ignored"))
    fanout.bind(Binding("f", ("exchange", "e"), ""))
    assert _route(fanout, "anything") == ["a", "e"]

    topic = Exchange("t", "topic")
    topic.bind(Binding("t", ("queue", "logs"), "*.error"))
    topic.bind(Binding("t", ("queue", "all"), "#"))
    assert sorted(_route(topic, "kern.error")) == ["all", "logs"]
    assert _route(topic, "kern.info") == ["all"]

    headers = Exchange("h", "headers")
    headers.bind(Binding("h", ("queue", "pdf"), "", {"format": "pdf"}))
    headers.bind(Binding("h", ("queue", "pdf2"), "", {"format": "pdf", "x-match": "any"}))
    # the same destination and key with other arguments is another binding
    headers.bind(Binding("h", ("queue", "pdf"), "", {"format": "zip"}))
    assert len(headers.bindings) == 3
    assert sorted(_route(headers, "", {"format": "pdf"})) == ["pdf", "pdf2"]
    assert _route(headers, "", {"format": "zip"}) == ["pdf"]
    assert (
        headers.unbind_destination(("queue", "pdf"))
        and _route(headers, "", {"format": "zip"}) == []
    )

    with pytest.raises(ValueError):
        Exchange("x", "x-consistent-hash")


def test_redeclare_equivalence() -> None:
    ex = Exchange("e", "topic", durable=True, arguments={"alternate-exchange": "ae"})
    assert ex.equivalent("topic", True, False, False, {"alternate-exchange": "ae"}) is None
    assert "type" in (
        ex.equivalent("direct", True, False, False, {"alternate-exchange": "ae"}) or ""
    )
    assert "durable" in (
        ex.equivalent("topic", False, False, False, {"alternate-exchange": "ae"}) or ""
    )
    assert ex.equivalent("topic", True, False, False, {}) is not None
