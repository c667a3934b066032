"""A reader during a transaction batch sees exactly the committed transactions, at every step;
the ``_flush_length`` side files say where each bucket file is a whole ORC file of them."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow.orc as po
import pyorc
import pytest

from acid_platform import Warehouse
from acid_platform.format import ValidWriteIdList
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter
from acid_platform.table.read_lease import ReadLease

#: Which of the batch's ten transactions abort.
ABORTED = {2, 5, 6, 9}


def _ids(wh: Warehouse, name: str = "t") -> list[int]:
    return sorted(r["id"] for r in wh.table(name).scan(columns=["id"]).to_arrow().to_pylist())


def _side_lengths(path: Path) -> list[int]:
    data = path.read_bytes()
    return [int.from_bytes(data[i : i + 8], "big") for i in range(0, len(data), 8)]


def _connect(wh: Warehouse, batch: int, memory_limit: int = 1 << 27) -> StreamingConnection:
    return (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_agent_info("test-agent")
        .with_transaction_batch_size(batch)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(memory_limit)
        .connect()
    )


def test_reader_sees_exactly_the_committed_transactions_at_every_step(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=2)
    # a tiny memory limit: every write is flushed to the files before its commit, so the files
    # always hold stripes of the open transaction past the last flush length
    conn = _connect(wh, 10, memory_limit=1)
    committed: list[int] = []
    for k in range(10):
        conn.begin_transaction()
        rows = [k * 100 + i for i in range(25)]
        conn.write([f"{i},v{i}".encode() for i in rows[:10]])
        assert _ids(wh) == committed  # rows of the open transaction are invisible
        before = ReadLease(wh, [t.spec])  # a snapshot taken before the commit
        conn.write([f"{i},v{i}".encode() for i in rows[10:]])
        if k in ABORTED:
            conn.abort_transaction()
        else:
            metrics = conn.commit_transaction()
            assert (
                metrics.rows_inserted == 25
                and metrics.txn_id == conn.stats.batches * 0 + metrics.txn_id
            )
            committed += rows
        assert _ids(wh) == sorted(committed)
        old = t.scan(["id"], snapshot=before.snapshots[t.spec.full_name]).to_arrow().column("id")
        before.close()
        assert len(old) == len(committed) - (0 if k in ABORTED else 25)  # not the new txn
    (delta,) = [p for p in Path(t.spec.location).iterdir() if p.name.startswith("delta_")]
    assert delta.name == "delta_0000001_0000010"
    assert sorted(p.name for p in delta.iterdir()) == [
        "_orc_acid_version",
        "bucket_00000",
        "bucket_00000_flush_length",
        "bucket_00001",
        "bucket_00001_flush_length",
    ]
    conn.close()
    assert _ids(wh) == sorted(committed)
    assert not [p for p in delta.iterdir() if p.name.endswith("_flush_length")]
    # closed: each whole file is an ORC file of the committed transactions only
    for bucket in ("bucket_00000", "bucket_00001"):
        table = po.ORCFile(str(delta / bucket)).read()
        assert set(table.column("currentTransaction").to_pylist()) == {
            k + 1 for k in range(10) if k not in ABORTED
        }


def test_flush_length_side_file_semantics(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = _connect(wh, 4, memory_limit=1)
    conn.begin_transaction()
    delta = Path(t.spec.location) / "delta_0000001_0000004"
    conn.write(b"1,a")
    data, side = delta / "bucket_00000", delta / "bucket_00000_flush_length"
    assert _side_lengths(side) == [0]  # Hive's writer writes 0 before the first commit
    assert data.stat().st_size > 3  # the open transaction's stripe is in the file already
    assert _ids(wh) == []
    expected: list[tuple[int, set[int]]] = []
    for k, outcome in enumerate(["commit", "abort", "commit", "commit"]):
        if k:
            conn.begin_transaction()
            conn.write([f"{10 * k + i},x".encode() for i in range(3)])
        if outcome == "abort":
            conn.abort_transaction()
            continue
        conn.commit_transaction()
        expected.append((_side_lengths(side)[-1], {1, 3, 4}.intersection(range(1, k + 2))))
    lengths = _side_lengths(side)
    assert lengths[0] == 0 and lengths == sorted(lengths) and len(lengths) == 4
    whole = data.read_bytes()
    for length, write_ids in expected:
        prefix = whole[:length]
        orc = po.ORCFile(io.BytesIO(prefix))  # ORC C++ through pyarrow
        events = orc.read()
        assert set(events.column("currentTransaction").to_pylist()) == write_ids
        meta = {k.decode(): v.decode() for k, v in orc.metadata.items()}
        assert meta["hive.acid.version"] == "2"
        assert meta["hive.acid.stats"] == f"{events.num_rows},0,0"
        assert meta["hive.acid.key.index"].count(";") == orc.nstripes
        last = events.slice(events.num_rows - 1).to_pylist()[0]
        assert meta["hive.acid.key.index"].endswith(
            f"{last['originalTransaction']},{last['bucket']},{last['rowId']};"
        )
        assert len(pyorc.Reader(io.BytesIO(prefix))) == events.num_rows  # ORC C++ via pyorc
    conn.close()
    assert not side.exists()
    assert set(po.ORCFile(str(data)).read().column("currentTransaction").to_pylist()) == {1, 3, 4}
    assert _ids(wh) == [1, 20, 21, 22, 30, 31, 32]


def test_a_side_file_saying_zero_hides_the_file(wh: Warehouse) -> None:
    """A bucket file first written in a later transaction of the batch: its delta is visible
    (earlier ones committed) while the file has nothing committed — its side file says 0."""
    t = wh.create_table("t", [("id", "int")], bucket_columns=["id"], num_buckets=4)
    conn = _connect(wh, 3, memory_limit=1)
    conn.begin_transaction()
    conn.write(b"0")
    conn.commit_transaction()
    conn.begin_transaction()
    conn.write([str(i).encode() for i in range(1, 40)])  # reaches the other buckets
    delta = Path(t.spec.location) / "delta_0000001_0000003"
    zeros = [
        p for p in delta.iterdir() if p.name.endswith("_flush_length") and _side_lengths(p) == [0]
    ]
    assert zeros  # files created in this transaction, nothing committed in them yet
    assert _ids(wh) == [0]
    assert wh.table("t").spec.num_buckets == 4
    conn.commit_transaction()
    assert _ids(wh) == list(range(40))
    conn.close()


def test_batch_of_one_writes_plain_deltas(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = _connect(wh, 1)
    for k in range(3):
        conn.begin_transaction()
        conn.write(f"{k},x".encode())
        if k == 1:
            conn.abort_transaction()
        else:
            conn.commit_transaction()
    conn.close()
    names = sorted(p.name for p in Path(t.spec.location).iterdir())
    assert names == ["delta_0000001_0000001", "delta_0000002_0000002", "delta_0000003_0000003"]
    assert not [n for d in names for n in os.listdir(Path(t.spec.location) / d) if "flush" in n]
    assert _ids(wh) == [0, 2]
    assert (
        str(wh.metastore.valid_write_ids(None, "default", "t"))
        == "default.t:3:9223372036854775807::2"
    )
    assert isinstance(
        ValidWriteIdList.parse("default.t:3:9223372036854775807::2"), ValidWriteIdList
    )


def test_close_aborts_the_open_and_unused_transactions(wh: Warehouse) -> None:
    wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = _connect(wh, 5)
    conn.begin_transaction()
    conn.write(b"1,a")
    conn.commit_transaction()
    conn.begin_transaction()
    conn.write(b"2,b")
    assert conn.remaining_transactions == 3
    txn = conn.current_txn_id
    assert txn is not None
    conn.close()
    assert wh.metastore.get_txn_state(txn) == "aborted"
    assert wh.metastore.get_txn_state(txn + 3) == "aborted"
    assert _ids(wh) == [1]
    assert conn.stats.committed_transactions == 1 and conn.stats.aborted_transactions == 1
    with pytest.raises(Exception, match="closed"):
        conn.begin_transaction()


def test_a_planned_scan_reads_each_side_file_once(wh: Warehouse) -> None:
    """A scan's splits carry each streaming file's committed length, read when they were
    planned: its check for wide timestamps and its read use the same bytes, and commits landing
    in between change neither (to_arrow and to_batches alike)."""
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = _connect(wh, 3, memory_limit=1)
    conn.begin_transaction()
    conn.write([b"1,a", b"2,b"])
    conn.commit_transaction()
    delta = Path(t.spec.location) / "delta_0000001_0000003"
    committed = _side_lengths(delta / "bucket_00000_flush_length")[-1]
    scans = [t.scan(columns=["id"]) for _ in range(2)]
    for scan in scans:
        refs = [f for task in scan.split_tasks() for f in task.split.data_files]
        assert [(f.flush_length_path, f.logical_length) for f in refs] == [(None, committed)]
        assert scan.split_tasks() is scan.split_tasks()  # planned once
    conn.begin_transaction()
    conn.write([b"3,c"])
    conn.commit_transaction()
    assert _side_lengths(delta / "bucket_00000_flush_length")[-1] > committed
    assert sorted(scans[0].to_arrow().column("id").to_pylist()) == [1, 2]
    assert sorted(i for b in scans[1].to_batches() for i in b.column("id").to_pylist()) == [1, 2]
    assert _ids(wh) == [1, 2, 3]
    conn.close()
    assert _ids(wh) == [1, 2, 3]
