"""``stagingLocation`` (adapters/spark/staging.py) on the filesystems pyarrow reaches: a local
path, a shared mount (one directory under two paths: the driver writes through one, executors
read through the other), a ``file://`` URI, and the code path of a filesystem that is not
local (pyarrow's own ``SubTreeFileSystem`` over a directory, standing in for ``hdfs://``,
``s3://`` or ``gs://``, which need a server). Each: a batch published whole (no temporary
file left), listed, read back by a partition, removed. Without Spark."""

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


def ids(reference: str, first: int, last: int) -> list[str]:
    partition = staging.StagedPartition(reference, first, last)
    return [r["message_id"] for b in staging.read_staged(partition) for r in b.to_pylist()]


def round_trip(written: str, read: str) -> None:
    """Two batches staged at ``written``, listed and read back at ``read``; the first
    removed."""
    first = staging.stage(written, 0, rows(0, 5))
    second = staging.stage(written, 5, rows(5, 3))
    assert [(s, e) for s, e, _ in staging.staged_batches(written)] == [(0, 5), (5, 8)]
    assert [r for _s, _e, r in staging.staged_batches(written)] == [first, second]
    listed = staging.staged_batches(read)
    assert [(s, e) for s, e, _ in listed] == [(0, 5), (5, 8)]
    assert ids(listed[0][2], 1, 4) == ["m1", "m2", "m3"]
    assert ids(listed[1][2], 0, 3) == ["m5", "m6", "m7"]
    staging.remove_staged(listed[0][2])
    staging.remove_staged(listed[0][2])  # gone already: nothing to do
    assert [(s, e) for s, e, _ in staging.staged_batches(written)] == [(5, 8)]


def test_a_local_path(tmp_path: Path) -> None:
    location = str(tmp_path / "staging")
    assert staging.staged_batches(location) == []  # not made yet: nothing staged
    round_trip(location, location)
    assert os.listdir(location) == ["000000000005-000000000008.arrow"]  # no .tmp left


def test_a_shared_mount_seen_under_two_paths(tmp_path: Path) -> None:
    """The driver stages through one path, executors read through another that is the same
    directory (a symlink here, a network mount on a cluster)."""
    real = tmp_path / "shared"
    real.mkdir()
    mount = tmp_path / "mount"
    mount.symlink_to(real, target_is_directory=True)
    round_trip(str(mount / "staging"), str(real / "staging"))
    assert os.listdir(real / "staging") == ["000000000005-000000000008.arrow"]


def test_a_file_uri(tmp_path: Path) -> None:
    location = (tmp_path / "staging").as_uri()
    round_trip(location, location)
    ((_s, _e, reference),) = staging.staged_batches(location)
    assert reference == f"{location}/000000000005-000000000008.arrow"
    assert os.listdir(tmp_path / "staging") == ["000000000005-000000000008.arrow"]


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
    reference = staging.stage(location, 0, rows(0, 2))
    assert reference == "remote://bucket/staging/000000000000-000000000002.arrow?opt=1"
    assert ids(reference, 0, 2) == ["m0", "m1"]
    staging.remove_staged(reference)
    # A file a crash left under its temporary name is not a staged batch.
    (tmp_path / "bucket" / "staging" / "000000000002-000000000004.arrow.tmp").write_bytes(b"")
    round_trip(location, location)
    assert sorted(os.listdir(tmp_path / "bucket" / "staging")) == [
        "000000000002-000000000004.arrow.tmp",
        "000000000005-000000000008.arrow",
    ]
    assert set(made) == {location}


def test_a_location_pyarrow_cannot_reach_names_the_option() -> None:
    with pytest.raises(OptionError, match="option 'stagingLocation': 'nosuch://x/y'"):
        staging.stage("nosuch://x/y", 0, rows(0, 1))


def test_a_query_restarted_after_a_commit_goes_on_from_spark_s_offset(tmp_path: Path) -> None:
    """A streaming read (queue mode) stopped right after a commit has no staged file left;
    restarted, it goes on from Spark's committed offset, not from 0: found on the cluster,
    where a batch planned below Spark's offset ran empty while its messages were accepted.
    The reader called as pyspark 4.2 and later call it (``start`` given); a range that went
    back is refused (what pyspark 4.0 and 4.1 then meet)."""
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

        first = reader()
        end = first.latestOffset(first.initialOffset(), None)
        assert end == {"staged": 20}
        first.partitions({"staged": 0}, end)
        first.commit(end)
        first.stop()
        assert staging.staged_batches(location) == []  # every file committed and gone
        again = reader()
        try:
            following = again.latestOffset(end, None)
            assert following == {"staged": 30}
            parts = again.partitions(end, following)
            got = [r["body"] for p in parts for b in again.read(p) for r in b.to_pylist()]
            assert got == [f"{i}".encode() for i in range(20, 30)]
            with pytest.raises(RuntimeError, match="went back from 30 to 20"):
                again.partitions(following, end)
        finally:
            again.stop()
