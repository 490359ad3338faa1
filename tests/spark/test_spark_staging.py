"""``stagingLocation`` (adapters/spark/staging.py) on the filesystems pyarrow reaches: a local
path, a shared mount (one directory under two paths: the driver writes through one, executors
read through the other), a ``file://`` URI, and the code path of a filesystem that is not
local (pyarrow's own ``SubTreeFileSystem`` over a directory, standing in for ``hdfs://``,
``s3://`` or ``gs://``, which need a server). Each: a batch published whole (no temporary
file left), published once only, listed, read back, removed. Without Spark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import amqp_sansio as a

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
pa_fs = pytest.importorskip("pyarrow.fs")
from amqp_sansio.adapters.spark import staging  # noqa: E402
from amqp_sansio.adapters.spark.options import OptionError  # noqa: E402
from amqp_sansio.adapters.spark.rows import message_to_row  # noqa: E402


def rows(start: int, count: int) -> list[tuple[Any, ...]]:
    return [
        message_to_row(a.Message(properties=a.Properties(message_id=f"m{i}"), body=b"x"), "q")
        for i in range(start, start + count)
    ]


def ids(reference: str) -> list[str]:
    return [r["message_id"] for b in staging.read_staged(reference) for r in b.to_pylist()]


def stage(location: str, batch: int, index: int, first: int, count: int) -> str | None:
    """Rows ``first``.. (``count``) as part 0 of task ``index`` of micro-batch ``batch``."""
    return staging.stage(location, batch, index, 0, staging.record_batch(rows(first, count)))


def round_trip(written: str, read: str) -> None:
    """Two tasks' parts staged at ``written``, one task marked done, listed and read back at
    ``read``; the first removed. A second attempt of a task stages nothing over the first's
    part."""
    first = stage(written, 3, 0, 0, 5)
    second = stage(written, 3, 1, 5, 3)
    assert stage(written, 3, 1, 10, 2) is None  # task 1's part 0 was staged: it stands
    staging.mark_done(written, 3, 0)
    listed = staging.staged_files(read)
    assert [(n, i, p) for n, i, p, _ in listed] == [(3, 0, None), (3, 0, 0), (3, 1, 0)]
    assert [r for _n, _i, p, r in staging.staged_files(written) if p is not None] == [
        first,
        second,
    ]
    assert staging.task_files(read, 3, 0) == ([listed[1][3]], True)
    assert staging.task_files(read, 3, 1) == ([listed[2][3]], False)
    assert staging.task_files(read, 3, 2) == ([], False)
    assert ids(listed[1][3]) == ["m0", "m1", "m2", "m3", "m4"]
    assert ids(listed[2][3]) == ["m5", "m6", "m7"]
    for _n, _i, _p, reference in listed[:2]:
        staging.remove_staged(reference)
    staging.remove_staged(listed[1][3])  # gone already: nothing to do
    assert [(n, i, p) for n, i, p, _ in staging.staged_files(written)] == [(3, 1, 0)]


def test_a_local_path(tmp_path: Path) -> None:
    location = str(tmp_path / "staging")
    assert staging.staged_files(location) == []  # not made yet: nothing staged
    round_trip(location, location)
    assert os.listdir(location) == ["000000000003-00001-00000.arrow"]  # no .tmp left


def test_a_shared_mount_seen_under_two_paths(tmp_path: Path) -> None:
    """The driver stages through one path, executors read through another that is the same
    directory (a symlink here, a network mount on a cluster)."""
    real = tmp_path / "shared"
    real.mkdir()
    mount = tmp_path / "mount"
    mount.symlink_to(real, target_is_directory=True)
    round_trip(str(mount / "staging"), str(real / "staging"))
    assert os.listdir(real / "staging") == ["000000000003-00001-00000.arrow"]


def test_a_file_uri(tmp_path: Path) -> None:
    location = (tmp_path / "staging").as_uri()
    round_trip(location, location)
    ((_n, _i, _p, reference),) = staging.staged_files(location)
    assert reference == f"{location}/000000000003-00001-00000.arrow"
    assert os.listdir(tmp_path / "staging") == ["000000000003-00001-00000.arrow"]


def test_a_filesystem_that_is_not_local(tmp_path: Path, monkeypatch: Any) -> None:
    """The path an object store or HDFS takes (write under a temporary name, the
    filesystem's move, listing, reading and deleting through pyarrow), on pyarrow's
    SubTreeFileSystem: ``remote://bucket/staging?opt=1`` stands for an ``s3://`` URI."""
    remote = pa_fs.SubTreeFileSystem(str(tmp_path), pa_fs.LocalFileSystem())
    assert not staging._local(remote)
    made: list[str] = []

    def filesystem(location: str) -> tuple[Any, str]:
        made.append(location)
        assert location == "remote://bucket/staging?opt=1", location
        return remote, "bucket/staging"

    monkeypatch.setattr(staging, "filesystem", filesystem)
    location = "remote://bucket/staging?opt=1"
    reference = stage(location, 1, 0, 0, 2)
    assert reference == "remote://bucket/staging/000000000001-00000-00000.arrow?opt=1"
    assert ids(reference) == ["m0", "m1"]
    staging.remove_staged(reference)
    # A file a crash left under its temporary name is not a staged file.
    (tmp_path / "bucket" / "staging" / "000000000002-00000-00000.arrow.1.tmp").write_bytes(b"")
    round_trip(location, location)
    assert sorted(os.listdir(tmp_path / "bucket" / "staging")) == [
        "000000000002-00000-00000.arrow.1.tmp",
        "000000000003-00001-00000.arrow",
    ]
    assert set(made) == {location}


def test_a_location_pyarrow_cannot_reach_names_the_option() -> None:
    with pytest.raises(OptionError, match="option 'stagingLocation': 'nosuch://x/y'"):
        stage("nosuch://x/y", 0, 0, 0, 1)


def test_a_restarted_query_goes_on_from_its_last_batch(tmp_path: Path) -> None:
    """A streaming read (queue mode) restarted after a commit goes on with the next batch
    number, never one Spark has used: from Spark's ``start`` (pyspark 4.2 and later), or,
    with no ``start`` (pyspark 4.0 and 4.1), from the last batch planned, which the reader
    keeps in the staging location. A range that went back is refused."""
    from amqp_sansio.adapters import sockets
    from amqp_sansio.adapters import spark as spark_adapter
    from amqp_sansio.adapters.broker import run_broker

    location = (tmp_path / "staging").as_uri()
    with run_broker() as server:
        with sockets.connect(f"{server.url}/q") as conn:
            sender = conn.sender("q")
            for i in range(30):
                assert isinstance(sender.send(a.Message(body=f"{i}".encode())), a.Accepted)
        options = {
            "url": server.url,
            "address": "q",
            "stagingLocation": location,
            "maxMessagesPerTrigger": "20",
        }

        def reader() -> Any:
            return spark_adapter.AMQPDataSource(options).streamReader(spark_adapter.SCHEMA)

        def run(r: Any, start: dict[str, int], end: dict[str, int]) -> list[bytes]:
            parts = r.partitions(start, end)
            return [row["body"] for p in parts for b in r.read(p) for row in b.to_pylist()]

        first = reader()
        end = first.latestOffset(first.initialOffset(), None)
        assert end == {"batch": 1}
        assert run(first, {"batch": 0}, end) == [f"{i}".encode() for i in range(20)]
        first.commit(end)
        first.stop()
        assert staging.staged_files(location) == []  # every file committed and gone
        again = reader()  # as on pyspark 4.2: Spark says where it is
        following = again.latestOffset(end, None)
        assert following == {"batch": 2}
        assert run(again, end, following) == [f"{i}".encode() for i in range(20, 30)]
        with pytest.raises(RuntimeError, match="went back from 2 to 1"):
            again.partitions(following, end)
        old = reader()  # as on pyspark 4.0 and 4.1: no start, and a batch planned before
        assert old.latestOffset() == {"batch": 1}
        assert reader().latestOffset() == {"batch": 2}  # from the kept number
