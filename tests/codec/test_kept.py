"""The bounded table of values made once (amqp_sansio.codec.kept), which the 0-10 engine's
header decoding and both brokers' mappings share."""

from __future__ import annotations

from amqp_sansio.codec.kept import Kept


def test_a_value_is_made_once_and_then_found() -> None:
    made: list[bytes] = []

    def make(key: bytes) -> int:
        made.append(key)
        return len(key)

    table: Kept[bytes, int] = Kept()
    assert table.made(b"abc", 3, make) == 3
    assert table.made(b"abc", 3, make) == 3
    assert made == [b"abc"]
    assert table.get(b"abc") == 3 and table.get(b"other") is None


def test_the_table_never_holds_more_than_its_bound() -> None:
    table: Kept[int, int] = Kept(most=4)
    for key in range(10):
        assert table.keep(key, 1, key * 2) == key * 2
        assert 1 <= len(table) <= 4
    assert table.get(9) == 18  # (emptied when full: the newest is there)
    assert table.get(0) is None


def test_a_key_larger_than_the_limit_is_made_each_time() -> None:
    calls = 0

    def make(key: bytes) -> int:
        nonlocal calls
        calls += 1
        return calls

    table: Kept[bytes, int] = Kept(largest=8)
    big = b"x" * 9
    assert table.made(big, len(big), make) == 1
    assert table.made(big, len(big), make) == 2
    assert len(table) == 0
    small = b"x" * 8
    assert table.made(small, len(small), make) == 3
    assert table.made(small, len(small), make) == 3
