"""Staging: what a streaming read in queue mode takes from the broker, written as Arrow
files under ``stagingLocation`` (fsync'd, renamed into place) for executors to read, and
cut into Spark partitions."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.ipc
from pyspark.sql.datasource import (
    InputPartition,
)

import amqp_sansio as amqp

from .options import OptionError
from .schema import (
    arrow_schema,
)

# -- staging ---------------------------------------------------------------------------------

_STAGED = re.compile(r"^(\d{12})-(\d{12})\.arrow$")


def _staged_name(start: int, end: int) -> str:
    return f"{start:012d}-{end:012d}.arrow"


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _local(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :]
    if "://" in location:
        raise OptionError(
            f"option 'stagingLocation': {location!r} is not a local path; give a directory that "
            "every executor can read (a local one with local[N], a shared mount on a cluster)"
        )
    return location


def staged_batches(location: str) -> list[tuple[int, int, str]]:
    """The staged batches under ``location``: (start, end, path), in order."""
    path = _local(location)
    if not os.path.isdir(path):
        return []
    found = []
    for name in os.listdir(path):
        match = _STAGED.match(name)
        if match:
            found.append((int(match[1]), int(match[2]), os.path.join(path, name)))
    return sorted(found)


def record_batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """``rows`` as one Arrow record batch of :data:`SCHEMA`: converted as one array of
    structs, each row a tuple (pyarrow's C++ transposes them, several times faster than
    cutting the rows into columns in Python)."""
    return pa.RecordBatch.from_struct_array(pa.array(rows, type=_arrow_struct()))


@functools.cache
def _arrow_struct() -> pa.StructType:
    return pa.struct(list(arrow_schema()))


def stage(location: str, start: int, rows: list[tuple[Any, ...]]) -> str:
    """Write ``rows`` as the batch [start, start + len(rows)): an Arrow file, fsync'd and then
    renamed into place (the directory fsync'd too), so that a batch is either whole on disk or
    absent."""
    path = _local(location)
    os.makedirs(path, exist_ok=True)
    end = start + len(rows)
    final = os.path.join(path, _staged_name(start, end))
    temporary = final + ".tmp"
    schema = arrow_schema()
    batch = record_batch(rows)
    with open(temporary, "wb") as out:
        with pa.ipc.new_file(out, schema) as writer:
            writer.write_batch(batch)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, final)
    _fsync_dir(path)
    return final


class StagedPartition(InputPartition):
    """Rows [first, last) of a staged batch file."""

    def __init__(self, path: str, first: int, last: int) -> None:
        super().__init__((path, first, last))
        self.path, self.first, self.last = path, first, last


def read_staged(partition: StagedPartition) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(partition.path) as source:
        table = pa.ipc.open_file(source).read_all()
    part = table.slice(partition.first, partition.last - partition.first)
    yield from part.combine_chunks().to_batches()


def even_pieces(count: int, parts: int) -> list[tuple[int, int]]:
    """[first, last) ranges cutting ``count`` rows in up to ``parts`` pieces of equal size."""
    size = max(1, -(-count // parts))
    return [(lo, min(count, lo + size)) for lo in range(0, count, size)]


def split(start: int, end: int, staged: list[tuple[int, int, str]], parts: int) -> list[Any]:
    """The partitions of the batch [start, end): each staged file inside it, cut in up to
    ``parts`` pieces."""
    partitions: list[Any] = []
    covered = start
    for first, last, path in staged:
        if last <= start or first >= end:
            continue
        if first < start or last > end:
            raise RuntimeError(
                f"staged batch {first}-{last} straddles the planned batch {start}-{end}"
            )
        covered = max(covered, last)
        partitions.extend(
            StagedPartition(path, lo, hi) for lo, hi in even_pieces(last - first, parts)
        )
    if covered < end:
        raise RuntimeError(
            f"the staged messages of offsets {covered}-{end} are missing from the staging "
            "location: was it cleared, or is it not the one this query staged into?"
        )
    return partitions


def refuse_undecodable(delivery: Any, how: str) -> None:
    """Settle a message the source cannot decode as option ``undecodable`` says: rejected
    with ``amqp:decode-error`` (the broker may dead-letter it), or modified
    (delivery-failed, undeliverable-here). Never dropped silently."""
    if how == "reject":
        delivery.reject(
            amqp.Error(
                condition=amqp.Symbol("amqp:decode-error"),
                description="not a message the Spark source can decode",
            )
        )
    else:
        delivery.modify(delivery_failed=True, undeliverable_here=True)
