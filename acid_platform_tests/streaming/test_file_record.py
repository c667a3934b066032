"""Streaming batches record what each commit wrote (issue 13, item 6): a shared delta's bucket
files with their committed lengths, so a deleted or truncated streamed file is a typed error
naming it for readers, the compactor and ``acid fsck``, while readers mid-batch stay exact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    CompactionError,
    FileRecordError,
    FileSizeMismatchError,
    MissingFileError,
    UnexpectedFileError,
)
from acid_platform.format.file_record import GROWING
from acid_platform.format.fs import resolve
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter
from acid_platform.streaming.landing import load_files
from acid_platform.table.fsck import fsck_table
from acid_platform_tests.helpers import open_warehouse
from acid_platform_tests.s3_server import S3Server

from .conftest import CONF

COLUMNS = [("id", "int"), ("v", "string")]


def _connect(wh: Warehouse, batch: int) -> StreamingConnection:
    return (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(batch)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(1)  # every write flushed: files hold uncommitted stripes
        .connect()
    )


def _txn(conn: StreamingConnection, ids: list[int], *, commit: bool = True) -> None:
    conn.begin_transaction()
    conn.write([f"{i},v{i}".encode() for i in ids])
    if commit:
        conn.commit_transaction()
    else:
        conn.abort_transaction()


def _ids(wh: Warehouse) -> list[int]:
    return sorted(r["id"] for r in wh.table("t").scan(columns=["id"]).to_arrow().to_pylist())


def _delta(wh: Warehouse) -> Path:
    (delta,) = [p for p in Path(wh.table("t").spec.location).iterdir() if p.name.startswith("d")]
    return delta


def test_each_commit_records_its_files_with_their_committed_length(wh: Warehouse) -> None:
    wh.create_table("t", COLUMNS, bucket_columns=["id"], num_buckets=2)
    conn = _connect(wh, 4)
    _txn(conn, [0, 1, 2, 3])
    _txn(conn, [10, 11], commit=False)
    _txn(conn, [20, 21, 22])
    conn.begin_transaction()
    conn.write([b"30,x", b"31,y"])  # open, flushed past the last committed length
    recorded = wh.metastore.recorded_files("default", "t").partition("")
    assert recorded is not None
    (entry,) = recorded.dirs.values()
    assert entry.growing and entry.name == _delta(wh).name
    longer = 0
    for name, size in entry.files.items():
        side = _delta(wh) / f"{name}_flush_length"
        data = side.read_bytes()
        assert size == int.from_bytes(data[-8:], "big")  # the last committed length
        longer += (_delta(wh) / name).stat().st_size > size
    assert longer  # the open txn's flushed stripes follow a committed prefix
    assert sum(entry.rows.values()) == 7
    assert _ids(wh) == [0, 1, 2, 3, 20, 21, 22]  # exact mid-batch, record checked
    assert fsck_table(wh, "t").ok
    conn.commit_transaction()
    conn.close()  # final tails: the files grow past their recorded lengths
    assert _ids(wh) == [0, 1, 2, 3, 20, 21, 22, 30, 31]
    assert fsck_table(wh, "t").ok
    rows = wh.metastore.recorded_files("default", "t").partition("")
    assert rows is not None and all(d.growing for d in rows.dirs.values())
    assert GROWING == -1


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_a_deleted_or_truncated_streamed_file_is_a_typed_error(wh: Warehouse, damage: str) -> None:
    wh.create_table("t", COLUMNS, bucket_columns=["id"], num_buckets=2)
    conn = _connect(wh, 3)
    _txn(conn, list(range(20)))
    _txn(conn, list(range(20, 40)))
    conn.begin_transaction()
    conn.write([b"99,open"])
    victim = _delta(wh) / "bucket_00001"
    committed = int.from_bytes((_delta(wh) / "bucket_00001_flush_length").read_bytes()[-8:], "big")
    if damage == "delete":
        os.unlink(victim)
        expected: type[FileRecordError] = MissingFileError
    else:
        os.truncate(victim, committed - 1)  # one byte short of the committed prefix
        expected = FileSizeMismatchError
    with pytest.raises(expected, match="bucket_00001") as err:
        wh.table("t").scan().to_arrow()
    assert err.value.path.endswith(f"{_delta(wh).name}/bucket_00001")
    report = fsck_table(wh, "t")
    assert not report.ok and [p.path.rsplit("/", 1)[-1] for p in report.problems] == [
        "bucket_00001"
    ]
    conn.abort_transaction()
    conn.close()
    with pytest.raises(CompactionError, match="bucket_00001"):
        wh.compact("t", kind="major", wait=True)
    with pytest.raises(expected):
        wh.table("t").scan().to_arrow()  # compaction wrote nothing over the loss


def test_a_killed_batch_leaves_files_that_still_check(wh: Warehouse) -> None:
    """A batch that never closes (its process killed) leaves side files: the committed prefix
    reads exactly, and a bucket only an unfinished transaction wrote into is no stray."""
    wh.create_table("t", COLUMNS, bucket_columns=["id"], num_buckets=4)
    conn = _connect(wh, 3)
    _txn(conn, [0])
    conn.begin_transaction()
    conn.write([f"{i},v".encode() for i in range(1, 40)])  # every bucket, uncommitted
    for f in conn._batch.deltas[""].files.values():  # type: ignore[union-attr]
        f.discard()  # as a kill -9 leaves them
    assert _ids(wh) == [0]
    assert fsck_table(wh, "t").ok
    (_delta(wh) / "bucket_00003_copy").write_bytes(b"")  # not a bucket name: ignored
    stray = _delta(wh) / "bucket_00000_1"
    stray.write_bytes((_delta(wh) / "bucket_00000").read_bytes())
    with pytest.raises(UnexpectedFileError, match="bucket_00000_1"):
        wh.table("t").scan().to_arrow()


def test_an_aborted_transactions_own_bucket_reads_and_compacts(wh: Warehouse) -> None:
    """A bucket file only aborted transactions wrote into keeps its side file (0) at close:
    every reader skips it, and no record is needed for it."""
    wh.create_table("t", COLUMNS, bucket_columns=["id"], num_buckets=8)
    conn = _connect(wh, 3)
    _txn(conn, [1])
    _txn(conn, list(range(2, 60)), commit=False)  # touches every other bucket
    _txn(conn, [1 + 8 * 3])  # same bucket as id 1
    conn.close()
    sides = sorted(p.name for p in _delta(wh).iterdir() if p.name.endswith("_flush_length"))
    assert sides and all(
        int.from_bytes((_delta(wh) / s).read_bytes()[-8:], "big") == 0 for s in sides
    )
    assert _ids(wh) == [1, 25]
    assert fsck_table(wh, "t").ok
    wh.compact("t", kind="major", wait=True)
    wh.clean()
    assert _ids(wh) == [1, 25]
    assert fsck_table(wh, "t").ok


def test_a_batch_of_one_records_its_whole_files(local_wh: Warehouse) -> None:
    wh = local_wh
    wh.create_table("t", COLUMNS)
    conn = _connect(wh, 1)
    _txn(conn, [1, 2, 3])
    conn.close()
    recorded = wh.metastore.recorded_files("default", "t").partition("")
    assert recorded is not None
    (entry,) = recorded.dirs.values()
    assert not entry.growing
    assert entry.files == {"bucket_00000": (_delta(wh) / "bucket_00000").stat().st_size}
    with open(_delta(wh) / "bucket_00000", "ab") as f:
        f.write(b"x")  # a whole file must keep its exact size
    with pytest.raises(FileSizeMismatchError):
        wh.table("t").scan().to_arrow()


def test_on_an_object_store_each_transaction_records_its_own_delta(
    tmp_path: Path, s3: S3Server
) -> None:
    """No append on S3: each transaction writes and records its own ``delta_w_w``, whole."""
    with open_warehouse(tmp_path, CONF, "sqlite", s3) as wh:
        t = wh.create_table("t", COLUMNS)
        conn = _connect(wh, 3)
        _txn(conn, [1, 2])
        _txn(conn, [3], commit=False)
        _txn(conn, [4])
        conn.close()
        recorded = wh.metastore.recorded_files("default", "t").partition("")
        assert recorded is not None
        assert sorted(recorded.dirs) == ["delta_0000001_0000001", "delta_0000003_0000003"]
        assert not any(d.growing for d in recorded.dirs.values())
        fs = wh.filesystem_for(t.spec.location)
        assert fs is not None
        root = resolve(t.spec.location, fs).path
        for d in recorded.dirs.values():
            for name, size in d.files.items():
                assert fs.get_file_info(f"{root}/{d.name}/{name}").size == size
        assert _ids(wh) == [1, 2, 4] and fsck_table(wh, "t").ok
        fs.delete_file(f"{root}/delta_0000003_0000003/bucket_00000")
        with pytest.raises(MissingFileError, match="delta_0000003_0000003/bucket_00000"):
            wh.table("t").scan().to_arrow()


def test_landed_files_are_recorded_like_any_stream(wh: Warehouse, tmp_path: Path) -> None:
    """The landing-zone ingest (and the Dagster ingest on top of it) streams through a
    connection: a landed file's bucket file truncated afterwards is a typed error."""
    wh.create_table("t", COLUMNS)
    landing = tmp_path / "landing"
    landing.mkdir()
    for k in range(3):
        (landing / f"f{k}.csv").write_text(f"id,v\n{k},a\n{k + 10},b\n")
    result = load_files(wh, "t", sorted(landing.iterdir()), batch_size=3)
    assert result.ok and _ids(wh) == [0, 1, 2, 10, 11, 12]
    recorded = wh.metastore.recorded_files("default", "t").partition("")
    assert recorded is not None
    (entry,) = recorded.dirs.values()
    assert entry.growing and entry.name == _delta(wh).name and sum(entry.rows.values()) == 6
    assert fsck_table(wh, "t").ok
    os.truncate(_delta(wh) / "bucket_00000", entry.files["bucket_00000"] - 10)
    with pytest.raises(FileSizeMismatchError, match="bucket_00000"):
        wh.table("t").scan().to_arrow()
