"""The pure-Python runner's mutator: one to four stacked random edits of an input (AFL-style
havoc, AMQP-flavoured: bit flips, interesting bytes and 32-bit sizes, length nudges,
insertions and deletions of ranges, AMQP tokens such as described-type headers, splices with
other inputs), and the tokens it inserts (:func:`corpus_tokens`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MAX_INPUT", "corpus_tokens", "mutate"]

#: Mutated inputs are cut to this many bytes.
MAX_INPUT = 4096


_FORMAT_CODES = bytes.fromhex(
    "00 40 41 42 43 44 45 50 51 52 53 54 55 56 60 61 70 71 72 73 74 80 81 82 83 84 94 98"
    " a0 a1 a3 b0 b1 b3 c0 c1 d0 d1 e0 f0 01 57 ff"
)
_INTERESTING8 = bytes.fromhex("00 01 02 03 04 07 08 10 20 3f 40 7f 80 81 fe ff")
_INTERESTING32 = (0, 1, 2, 3, 4, 7, 8, 9, 0xFF, 0x100, 0x1FF, 0x200, 0x7FFF, 0x8000, 0xFFFF)
_INTERESTING32 += (0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)


#: The edits of :func:`mutate`, each ``edit(buf, at, n, rng, pool, tokens)`` at ``at`` in
#: ``buf`` (``n`` bytes long before the edit).
_Edit = Callable[[bytearray, int, int, random.Random, Sequence[bytes], Sequence[bytes]], None]


def _flip_bit(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] ^= 1 << rng.randrange(8)


def _any_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.randrange(256)


def _interesting_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.choice(_INTERESTING8)  # sizes, counts


def _format_code(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.choice(_FORMAT_CODES)


def _interesting_32(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """An interesting 32-bit size or count, big-endian."""
    value = rng.choice((*_INTERESTING32, n, n - at, max(0, n - at - 4)))
    buf[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "big")


def _nudge(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Nudge a byte that may be a length."""
    buf[at] = (buf[at] + rng.choice((-4, -2, -1, 1, 2, 4))) & 0xFF


def _delete_range(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    end = min(n, at + 1 + int(rng.expovariate(0.25)))
    del buf[at:end]


def _duplicate_range(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Duplicate a range elsewhere."""
    end = min(n, at + 1 + rng.randrange(16))
    buf[rng.randrange(n + 1) : 0] = buf[at:end]


def _truncate(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    del buf[at:]


def _insert_random(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at:at] = bytes(rng.randrange(256) for _ in range(1 + rng.randrange(8)))


def _insert_token(
    buf: bytearray,
    at: int,
    n: int,
    rng: random.Random,
    pool: Sequence[bytes],
    tokens: Sequence[bytes],
) -> None:
    if not tokens:
        _size_byte(buf, at, n, rng)
        return
    buf[at:at] = rng.choice(tokens)


def _overwrite_token(
    buf: bytearray,
    at: int,
    n: int,
    rng: random.Random,
    pool: Sequence[bytes],
    tokens: Sequence[bytes],
) -> None:
    if not tokens:
        _size_byte(buf, at, n, rng)
        return
    t = rng.choice(tokens)
    buf[at : at + len(t)] = t


def _splice(
    buf: bytearray, at: int, n: int, rng: random.Random, pool: Sequence[bytes], *_: Any
) -> None:
    """Our head, another input's tail."""
    if not pool:
        _size_byte(buf, at, n, rng)
        return
    other = rng.choice(pool)
    cut = rng.randrange(len(other) + 1)
    buf[at:] = other[cut:]


def _insert_piece(
    buf: bytearray, at: int, n: int, rng: random.Random, pool: Sequence[bytes], *_: Any
) -> None:
    """A piece of another input."""
    if not pool:
        _size_byte(buf, at, n, rng)
        return
    other = rng.choice(pool)
    if other:
        s = rng.randrange(len(other))
        buf[at:at] = other[s : s + 1 + rng.randrange(32)]


def _run(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """The same byte repeated (runs of 0x40, 0xff, ...)."""
    buf[at:at] = bytes((rng.choice(_INTERESTING8),)) * (1 + rng.randrange(64))


def _size_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Set a size byte to what is left after it."""
    buf[at] = min(255, max(0, n - at - 1 - rng.randrange(3)))


#: :func:`mutate`'s edits, by the number drawn (the token and pool edits set a size byte
#: when there are no tokens or no pool).
_EDITS: tuple[_Edit, ...] = (
    _flip_bit,
    _any_byte,
    _interesting_byte,
    _format_code,
    _interesting_32,
    _nudge,
    _delete_range,
    _duplicate_range,
    _truncate,
    _insert_random,
    _insert_token,
    _overwrite_token,
    _splice,
    _insert_piece,
    _run,
    _size_byte,
)


def mutate(
    data: bytes,
    rng: random.Random,
    pool: Sequence[bytes] = (),
    tokens: Sequence[bytes] = (),
    max_len: int = MAX_INPUT,
) -> bytes:
    """One to four stacked random edits of ``data`` (AFL-style havoc, AMQP-flavoured)."""
    buf = bytearray(data)
    for _ in range(1 + min(3, int(rng.expovariate(1.0)))):
        n = len(buf)
        op = rng.randrange(16)
        at = rng.randrange(n) if n else 0
        if n == 0 and (op < 9 or op == 15):
            op = 9
        _EDITS[op](buf, at, n, rng, pool, tokens)
    return bytes(buf[:max_len])


_TOKEN_HEX = (
    "0053 005370 005373 005375 005377 005310 005314 005324 00a3 a000 a100 a300 c00100"
    " c10100 e00100 e0020140 d000000004 d100000004 f000000004 b000000000 ffffffff"
    " 7fffffff 00000008 0000000802000000 0000020002000000 414d5150 414d515000010000"
    " 5601 5602 7000000001 8000000000000000ff 73ffffffff 72ffc00000"
)


def corpus_tokens(corpus: dict[str, list[bytes]]) -> list[bytes]:
    """Snippets to insert: constructors with plausible bodies, described headers, sizes."""
    tokens = [bytes((c,)) for c in b"\x00\x40\x41\x42\x43\x44\x45"]
    tokens += [bytes.fromhex(x) for x in _TOKEN_HEX.split()]
    for entries in corpus.values():
        for e in entries:
            if len(e) <= 24:
                tokens.append(e)
    return list(dict.fromkeys(tokens))
