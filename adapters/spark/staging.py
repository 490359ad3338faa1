"""Staging: what a queue-mode streaming read takes from the broker, written by the executor
task that took it as an Arrow file under ``stagingLocation`` before the task accepts it (a log
written ahead: once accepted, a message lives on in its staged file until Spark has committed
its micro-batch), and read back when Spark runs the batch again.

A receiver task (its index) of a micro-batch (its number) stages what it takes in parts, as
it goes: ``BBBBBBBBBBBB-IIIII-PPPPP.arrow``, then marks itself done with an empty
``BBBBBBBBBBBB-IIIII.done``. A task run again reads the parts there are and, unless the
task was done, goes on taking from the next part. A task that took nothing stages nothing.

``stagingLocation`` is a local or shared path, or a URI that
``pyarrow.fs.FileSystem.from_uri`` takes (``file://``, ``hdfs://``, ``s3://``, ``gs://``, ...).
A file is published atomically and only once: written under a temporary name, then moved to
its final name unless a file is there already (another attempt of the same task staged
first: its file stands, and this attempt gives its messages back). On a local filesystem (a
path, or ``file://``) the file is fsync'd before it is linked into place and the directory
after; on another filesystem the file is complete when its stream is closed, and the move is
the filesystem's (docs/spark.rst, "Deployment on a cluster", says what each guarantees)."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow as pa
import pyarrow.fs
import pyarrow.ipc

import amqp_sansio as amqp

from .options import OptionError
from .schema import arrow_schema

# -- staging ---------------------------------------------------------------------------------

_STAGED = re.compile(r"^(\d{12})-(\d{5})(?:-(\d{5})\.arrow|\.done)$")


def _staged_name(batch: int, index: int, part: int) -> str:
    return f"{batch:012d}-{index:05d}-{part:05d}.arrow"


def _done_name(batch: int, index: int) -> str:
    return f"{batch:012d}-{index:05d}.done"


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


def staged_files(location: str) -> list[tuple[int, int, int | None, str]]:
    """What is staged under ``location``: (micro-batch, task index, part, reference), in
    order, the part None for a task's done mark; the reference is a path for a local
    location, a URI for a URI. A file a crash left under its temporary name is not one of
    them."""
    fs, path = filesystem(location)
    selector = pyarrow.fs.FileSelector(path, allow_not_found=True)
    found = []
    for info in fs.get_file_info(selector):
        match = _STAGED.match(info.base_name)
        if match and info.type == pyarrow.fs.FileType.File:
            part = None if match[3] is None else int(match[3])
            reference = _join(location, info.base_name)
            found.append((int(match[1]), int(match[2]), part, reference))
    return sorted(found, key=lambda f: (f[0], f[1], -1 if f[2] is None else f[2]))


def task_files(location: str, batch: int, index: int) -> tuple[list[str], bool]:
    """Task ``index`` of micro-batch ``batch``: the references of its staged parts, in
    order, and whether it was marked done."""
    found = [f for f in staged_files(location) if f[0] == batch and f[1] == index]
    return [ref for *_n, part, ref in found if part is not None], any(
        part is None for *_n, part, _ref in found
    )


def mark_done(location: str, batch: int, index: int) -> None:
    """Mark task ``index`` of micro-batch ``batch`` done: every part it will stage is
    staged (written after its last part; a task run again then only reads them)."""
    fs, path = filesystem(location)
    with fs.open_output_stream(f"{path.rstrip('/')}/{_done_name(batch, index)}"):
        pass


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


def stage(location: str, batch: int, index: int, part: int, records: pa.RecordBatch) -> str | None:
    """Write ``records`` as part ``part`` of task ``index`` of micro-batch ``batch`` and
    publish it atomically, unless that part is there already: returns the new file's
    reference, or None when another attempt of the task had staged it (that file stands,
    this one is dropped). On a local filesystem the file is fsync'd before it is linked into place
    (a link fails where a file is: no attempt replaces another's) and the directory after;
    elsewhere the move is the filesystem's, after a look for a file in the way."""
    fs, path = filesystem(location)
    name = _staged_name(batch, index, part)
    final = f"{path.rstrip('/')}/{name}"
    temporary = f"{final}.{uuid.uuid4().hex[:12]}.tmp"
    if _local(fs):
        os.makedirs(path, exist_ok=True)
        with open(temporary, "wb") as out:
            _write(out, records)
            out.flush()
            os.fsync(out.fileno())
        try:
            _publish_local(temporary, final)
        except FileExistsError:
            return None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        _fsync_dir(path)
    else:
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(temporary) as out:
            _write(out, records)
        if fs.get_file_info(final).type != pyarrow.fs.FileType.NotFound:
            fs.delete_file(temporary)
            return None
        fs.move(temporary, final)
    return _join(location, name)


def _publish_local(temporary: str, final: str) -> None:
    """Give ``temporary`` the name ``final`` unless a file has it (FileExistsError): a hard
    link, which cannot replace; where the filesystem has none, a look and a rename."""
    try:
        os.link(temporary, final)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some mounts): a look, then a rename
        if os.path.exists(final):
            raise FileExistsError(final) from None
        os.replace(temporary, final)


def _write(out: Any, records: pa.RecordBatch) -> None:
    with pa.ipc.new_file(out, arrow_schema()) as writer:
        writer.write_batch(records)


def _open(reference: str) -> Any:
    """A staged file opened for reading: memory-mapped if local, else through its
    filesystem."""
    fs, path = _file(reference)
    return pa.memory_map(path) if _local(fs) else fs.open_input_file(path)


def read_staged(reference: str) -> Iterator[pa.RecordBatch]:
    """The rows of a staged file: a local file memory-mapped, another read through its
    filesystem."""
    with _open(reference) as source:
        table = pa.ipc.open_file(source).read_all()
    yield from table.combine_chunks().to_batches()


def even_pieces(count: int, parts: int) -> list[tuple[int, int]]:
    """[first, last) ranges cutting ``count`` rows in up to ``parts`` pieces of equal size."""
    size = max(1, -(-count // parts))
    return [(lo, min(count, lo + size)) for lo in range(0, count, size)]


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
