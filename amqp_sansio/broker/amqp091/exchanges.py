"""AMQP 0-9-1 exchanges (0-9-1 spec 3.1.3 "Exchanges", the ``exchange`` class) as RabbitMQ
routes with them: the default exchange (every queue bound by its name), ``direct``,
``fanout``, ``topic`` and ``headers``, and RabbitMQ's exchange-to-exchange bindings.

An exchange holds bindings to destinations (a queue's name, or another exchange's), and
:meth:`Exchange.match` says which of its destinations a message with a routing key and
headers goes to. Following exchange-to-exchange bindings, and finding the queues, is the
virtual host's (:mod:`.vhosts`).

Topic matching is RabbitMQ's (its "Topic exchange" tutorial and ``rabbit_exchange_type_topic``):
a routing key is a list of words separated by dots (the empty key is no words at all); in a
binding key ``*`` stands for exactly one word and ``#`` for zero or more. Bindings are kept
in a trie of their words, so a message costs the words of its key, not the number of
bindings.

Headers matching is RabbitMQ's ``rabbit_exchange_type_headers``: the binding's ``x-match``
argument is ``all`` (the default: every other argument must match), ``any`` (one is
enough), or ``all-with-x`` / ``any-with-x`` (the same, counting arguments whose names begin
with ``x-``, which ``all`` and ``any`` leave out). An argument with a void value (None)
matches a header of that name whatever its value; any other matches a header of the same
name and an equal value of the same class (integers of any width are one class, floats of
either width another, strings and byte strings a third). With no argument to match, ``all``
matches every message and ``any`` none.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

import attrs

from ...codec.amqp091 import FieldValue

__all__ = [
    "EXCHANGE_TYPES",
    "Binding",
    "Destination",
    "Exchange",
    "TopicTrie",
    "X_MATCH",
    "check_binding_arguments",
    "destinations",
    "headers_match",
    "topic_matches",
]

#: The exchange types a client may declare (0-9-1 spec 3.1.3.1-3.1.3.4).
EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers")

#: A binding's destination: ``("queue", name)`` or ``("exchange", name)``.
Destination = tuple[Literal["queue", "exchange"], str]


def _freeze(value: Any) -> Any:
    """A hashable form of a field-table value (for telling bindings apart by arguments)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return (type(value).__name__, value)


@attrs.frozen
class Binding:
    """A binding of an exchange to a destination, with a routing key and arguments (0-9-1
    spec 3.1.3; ``queue.bind``, ``exchange.bind``). Two bindings with the same source,
    destination, routing key and arguments are the same binding (binding twice is a no-op,
    as in RabbitMQ)."""

    source: str
    destination: Destination
    routing_key: str
    arguments: Mapping[str, FieldValue] = attrs.field(factory=dict, eq=False, hash=False)
    _key: Any = attrs.field(init=False, repr=False, eq=True, hash=True)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_key", _freeze(dict(self.arguments)))


# -- topic matching ----------------------------------------------------------------------------


def _words(key: str) -> list[str]:
    """The words of a routing or binding key: the empty key has none (RabbitMQ's reading)."""
    return key.split(".") if key else []


def topic_matches(binding_key: str, routing_key: str) -> bool:
    """Whether a topic binding key matches a routing key: ``*`` is exactly one word, ``#``
    zero or more, any other word itself (RabbitMQ's topic exchange)."""
    pattern, words = _words(binding_key), _words(routing_key)
    # states: the positions in the pattern reachable after the words read so far
    states = _closure({0}, pattern)
    for word in words:
        following: set[int] = set()
        for i in states:
            if i < len(pattern):
                token = pattern[i]
                if token == "#":
                    following.add(i)  # '#' takes this word and may take more
                elif token == "*" or token == word:
                    following.add(i + 1)
        states = _closure(following, pattern)
        if not states:
            return False
    return len(pattern) in states


def _closure(states: set[int], pattern: list[str]) -> set[int]:
    """Add the positions after each ``#`` reachable (``#`` may take no word)."""
    out = set(states)
    todo = list(states)
    while todo:
        i = todo.pop()
        if i < len(pattern) and pattern[i] == "#" and i + 1 not in out:
            out.add(i + 1)
            todo.append(i + 1)
    return out


class _TrieNode:
    __slots__ = ("bindings", "children", "hash")

    def __init__(self, hash: bool) -> None:
        self.children: dict[str, _TrieNode] = {}
        self.bindings: dict[Binding, None] = {}
        #: Reached through a ``#``: it may take more words and stay here.
        self.hash = hash


class TopicTrie:
    """Topic bindings in a trie of their words; :meth:`match` finds the bindings whose keys
    match a routing key, visiting only the branches that can."""

    def __init__(self) -> None:
        self._root = _TrieNode(False)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, binding: Binding) -> None:
        node = self._root
        for word in _words(binding.routing_key):
            child = node.children.get(word)
            if child is None:
                child = node.children[word] = _TrieNode(word == "#")
            node = child
        if binding not in node.bindings:
            node.bindings[binding] = None
            self._count += 1

    def remove(self, binding: Binding) -> None:
        words = _words(binding.routing_key)
        path = [self._root]
        for word in words:
            child = path[-1].children.get(word)
            if child is None:
                return
            path.append(child)
        if binding not in path[-1].bindings:
            return
        del path[-1].bindings[binding]
        self._count -= 1
        for depth in range(len(words), 0, -1):  # prune the branches left empty
            node = path[depth]
            if node.bindings or node.children:
                break
            del path[depth - 1].children[words[depth - 1]]

    def match(self, routing_key: str) -> list[Binding]:
        """The bindings whose keys match ``routing_key``, each once."""
        words = _words(routing_key)
        end = len(words)
        found: dict[Binding, None] = {}
        seen: set[tuple[int, int]] = set()
        todo: list[tuple[_TrieNode, int]] = [(self._root, 0)]
        while todo:
            node, i = todo.pop()
            mark = (id(node), i)
            if mark in seen:
                continue
            seen.add(mark)
            hash_child = node.children.get("#")
            if hash_child is not None:
                todo.append((hash_child, i))  # '#' taking no word
            if i == end:
                found.update(node.bindings)
                continue
            if node.hash:
                todo.append((node, i + 1))  # the '#' that led here takes one more word
            word = words[i]
            child = node.children.get(word)
            if child is not None:
                todo.append((child, i + 1))
            child = node.children.get("*")
            if child is not None:
                todo.append((child, i + 1))
        return list(found)


# -- headers matching --------------------------------------------------------------------------

#: The values of ``x-match`` (RabbitMQ's; ``all`` when absent).
X_MATCH = ("all", "any", "all-with-x", "any-with-x")


def _value_class(value: Any) -> str:
    """RabbitMQ's type class of a header value: equal values of one class match."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int) and not isinstance(value, datetime.datetime):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str | bytes | bytearray):
        return "string"
    if isinstance(value, decimal.Decimal):
        return "decimal"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _same(pattern: Any, value: Any) -> bool:
    if _value_class(pattern) != _value_class(value):
        return False
    if isinstance(pattern, str) and isinstance(value, bytes | bytearray):
        return pattern.encode() == bytes(value)
    if isinstance(value, str) and isinstance(pattern, bytes | bytearray):
        return value.encode() == bytes(pattern)
    return bool(pattern == value)


def headers_match(
    arguments: Mapping[str, FieldValue], headers: Mapping[str, FieldValue] | None
) -> bool:
    """Whether a headers-exchange binding with ``arguments`` matches a message with
    ``headers`` (its ``basic`` properties' field table, None for none); see the module's
    docstring for RabbitMQ's rules. An ``x-match`` other than :data:`X_MATCH` is refused
    when the binding is made (:func:`check_binding_arguments`), so here it reads as ``all``."""
    kind = arguments.get("x-match", "all")
    if isinstance(kind, bytes | bytearray):
        kind = bytes(kind).decode("utf-8", "replace")
    with_x = kind in ("all-with-x", "any-with-x")
    want_all = kind not in ("any", "any-with-x")
    headers = headers or {}
    matched_any = False
    for key, pattern in arguments.items():
        if key == "x-match" or (not with_x and key.startswith("x-")):
            continue
        if key not in headers:
            ok = False
        elif pattern is None:
            ok = True  # void: the header's presence is enough
        else:
            ok = _same(pattern, headers[key])
        if ok:
            matched_any = True
            if not want_all:
                return True
        elif want_all:
            return False
    return want_all or matched_any


def check_binding_arguments(exchange_type: str, arguments: Mapping[str, FieldValue]) -> str | None:
    """Why a binding's arguments are refused (RabbitMQ: ``x-match`` of a headers binding
    must be one of :data:`X_MATCH`), or None."""
    if exchange_type != "headers" or "x-match" not in arguments:
        return None
    kind = arguments["x-match"]
    if isinstance(kind, bytes | bytearray):
        kind = bytes(kind).decode("utf-8", "replace")
    if kind not in X_MATCH:
        return f"invalid x-match field value {kind!r}; expected one of {', '.join(X_MATCH)}"
    return None


# -- exchanges ---------------------------------------------------------------------------------


class Exchange:
    """An exchange of a virtual host: its name, type, flags and arguments as declared, and
    its bindings. ``durable`` exchanges are those a durable store keeps across a restart,
    with the bindings between durable ends (see :mod:`.vhosts` and ``docs/amqp091.rst``,
    "Durability");
    ``auto_delete`` ones go when their last binding (as the source) goes, once they had one;
    ``internal`` ones take no publish, only exchange-to-exchange routing."""

    def __init__(
        self,
        name: str,
        type: str,
        *,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, FieldValue] | None = None,
    ) -> None:
        if type not in EXCHANGE_TYPES:
            raise ValueError(f"unknown exchange type {type!r}")
        self.name = name
        self.type = type
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments: dict[str, FieldValue] = dict(arguments or {})
        self._bindings: dict[Binding, None] = {}
        self._by_key: dict[str, dict[Binding, None]] = {}  # direct
        self._trie = TopicTrie() if type == "topic" else None
        self.had_bindings = False

    def __repr__(self) -> str:
        return f"<Exchange {self.name!r} {self.type}>"

    @property
    def bindings(self) -> list[Binding]:
        """The bindings of which this exchange is the source, in the order they were made."""
        return list(self._bindings)

    def equivalent(
        self,
        type: str,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: Mapping[str, FieldValue] | None,
    ) -> str | None:
        """Why a redeclaration with these is not equivalent (406 PRECONDITION_FAILED, 0-9-1
        spec ``exchange.declare`` rule "equivalent"), or None."""
        for field, mine, theirs in (
            ("type", self.type, type),
            ("durable", self.durable, durable),
            ("auto_delete", self.auto_delete, auto_delete),
            ("internal", self.internal, internal),
        ):
            if mine != theirs:
                return (
                    f"inequivalent arg '{field}' for exchange '{self.name}': "
                    f"received {theirs!r} but current is {mine!r}"
                )
        if _freeze(dict(arguments or {})) != _freeze(self.arguments):
            return f"inequivalent arguments for exchange '{self.name}'"
        return None

    def bind(self, binding: Binding) -> bool:
        """Add a binding; False if it was there already."""
        if binding in self._bindings:
            return False
        self._bindings[binding] = None
        self.had_bindings = True
        if self.type == "direct":
            self._by_key.setdefault(binding.routing_key, {})[binding] = None
        elif self._trie is not None:
            self._trie.add(binding)
        return True

    def unbind(self, binding: Binding) -> bool:
        """Remove a binding; False if there was none."""
        if binding not in self._bindings:
            return False
        del self._bindings[binding]
        if self.type == "direct":
            same = self._by_key[binding.routing_key]
            del same[binding]
            if not same:
                del self._by_key[binding.routing_key]
        elif self._trie is not None:
            self._trie.remove(binding)
        return True

    def unbind_destination(self, destination: Destination) -> list[Binding]:
        """Remove every binding to ``destination`` (it was deleted); return them."""
        gone = [b for b in self._bindings if b.destination == destination]
        for binding in gone:
            self.unbind(binding)
        return gone

    def match(
        self, routing_key: str, headers: Mapping[str, FieldValue] | None
    ) -> Iterator[Binding]:
        """The bindings a message with ``routing_key`` and ``headers`` follows."""
        kind = self.type
        if kind == "direct":
            yield from self._by_key.get(routing_key, ())
        elif kind == "fanout":
            yield from self._bindings
        elif kind == "topic":
            assert self._trie is not None
            yield from self._trie.match(routing_key)
        else:
            for binding in self._bindings:
                if headers_match(binding.arguments, headers):
                    yield binding


def destinations(bindings: Iterable[Binding]) -> list[Destination]:
    """The destinations of ``bindings``, each once, in order."""
    return list(dict.fromkeys(b.destination for b in bindings))
