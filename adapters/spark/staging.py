"""Staging: what a streaming read in queue mode takes from the broker, written as Arrow
files under ``stagingLocation`` for executors to read, and cut into Spark partitions.

``stagingLocation`` is a local or shared path, or a URI that
``pyarrow.fs.FileSystem.from_uri`` takes (``file://``, ``hdfs://``, ``s3://``, ``gs://``, ...).
A batch is published atomically: written under a temporary name, then renamed (moved) to its
final name, so that a reader finds it whole or not at all. On a local filesystem (a path, or
``file://``) the file is fsync'd before the rename and the directory after it; on another
filesystem the file is complete when its stream is closed, and the move is the filesystem's
(docs/spark.rst, "Deployment on a cluster", says what each guarantees)."""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow as pa
import pyarrow.fs
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


def _is_uri(location: str) -> bool:
    return "://" in location


@functools.lru_cache(maxsize=64)
def filesystem(location: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of a staging location: a local path (made absolute)
    or a URI ``pyarrow.fs.FileSystem.from_uri`` takes. Made once per location and process
    (an object store's filesystem may look up its region)."""
    if not _is_uri(location):
        return pyarrow.fs.LocalFileSystem(), os.path.abspath(location)
    try:
        fs, path = pyarrow.fs.FileSystem.from_uri(location)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise OptionError(
            f"option 'stagingLocation': {location!r} is not a location pyarrow can reach "
            f"({exc}); give a directory every executor can read: a local one with "
            "local[N], a shared mount or a file://, hdfs://, s3:// or gs:// URI on a cluster"
        ) from None
    return fs, path


def _local(fs: Any) -> bool:
    return isinstance(fs, pyarrow.fs.LocalFileSystem)


def _join(location: str, name: str) -> str:
    """The reference of file ``name`` in ``location``: a path, or a URI (its query kept)."""
    if not _is_uri(location):
        return os.path.join(location, name)
    parts = urlsplit(location)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + name))


def _split(reference: str) -> tuple[str, str]:
    """(location, name) of a staged file's reference (the inverse of :func:`_join`)."""
    if not _is_uri(reference):
        return os.path.split(reference)
    parts = urlsplit(reference)
    folder, name = parts.path.rsplit("/", 1)
    return urlunsplit(parts._replace(path=folder)), name


def _file(reference: str) -> tuple[Any, str]:
    """(filesystem, path in it) of a staged file."""
    location, name = _split(reference)
    fs, folder = filesystem(location)
    return fs, f"{folder.rstrip('/')}/{name}"


def staged_batches(location: str) -> list[tuple[int, int, str]]:
    """The staged batches under ``location``: (start, end, reference), in order; the
    reference is a path for a local location, a URI for a URI."""
    fs, path = filesystem(location)
    selector = pyarrow.fs.FileSelector(path, allow_not_found=True)
    found = []
    for info in fs.get_file_info(selector):
        match = _STAGED.match(info.base_name)
        if match and info.type == pyarrow.fs.FileType.File:
            found.append((int(match[1]), int(match[2]), _join(location, info.base_name)))
    return sorted(found)


def remove_staged(reference: str) -> None:
    """Delete a staged file (gone already: nothing to do)."""
    fs, path = _file(reference)
    with contextlib.suppress(FileNotFoundError):
        fs.delete_file(path)


def record_batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """``rows`` as one Arrow record batch of :data:`SCHEMA`: converted as one array of
    structs, each row a tuple (pyarrow's C++ transposes them, several times faster than
    cutting the rows into columns in Python)."""
    return pa.RecordBatch.from_struct_array(pa.array(rows, type=_arrow_struct()))


@functools.cache
def _arrow_struct() -> pa.StructType:
    return pa.struct(list(arrow_schema()))


def stage(location: str, start: int, rows: list[tuple[Any, ...]]) -> str:
    """Write ``rows`` as the batch [start, start + len(rows)) and publish it atomically
    (written under a temporary name, then renamed into place: a batch is whole or absent);
    on a local filesystem the file is fsync'd before the rename and the directory after.
    Returns the staged file's reference (as :func:`staged_batches` gives it)."""
    fs, path = filesystem(location)
    name = _staged_name(start, start + len(rows))
    final = f"{path.rstrip('/')}/{name}"
    temporary = final + ".tmp"
    batch = record_batch(rows)
    if _local(fs):
        os.makedirs(path, exist_ok=True)
        with open(temporary, "wb") as out:
            _write(out, batch)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, final)
        _fsync_dir(path)
    else:
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(temporary) as out:
            _write(out, batch)
        fs.move(temporary, final)
    return _join(location, name)


def _write(out: Any, batch: pa.RecordBatch) -> None:
    with pa.ipc.new_file(out, arrow_schema()) as writer:
        writer.write_batch(batch)


class StagedPartition(InputPartition):
    """Rows [first, last) of a staged batch file (``path``: its reference, a path or a
    URI)."""

    def __init__(self, path: str, first: int, last: int) -> None:
        super().__init__((path, first, last))
        self.path, self.first, self.last = path, first, last


def read_staged(partition: StagedPartition) -> Iterator[pa.RecordBatch]:
    """The partition's rows (on an executor): a local file memory-mapped, another read
    through its filesystem."""
    fs, path = _file(partition.path)
    opened = pa.memory_map(path) if _local(fs) else fs.open_input_file(path)
    with opened as source:
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
