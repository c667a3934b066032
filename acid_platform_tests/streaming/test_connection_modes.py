"""Connection modes: dynamic and static partitions, bucketing by the table's version, the
memory bound, heartbeats of a batch, unmanaged writes, the regex and pandas writers."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pyarrow.orc as po
import pytest

from acid_platform import Warehouse
from acid_platform.errors import StreamingError, TxnAbortedError
from acid_platform.format import decode_bucket
from acid_platform.metastore import OperationType
from acid_platform.streaming import (
    PandasRecordWriter,
    StreamingConnection,
    StrictDelimitedInputWriter,
    StrictJsonWriter,
    StrictRegexWriter,
)
from acid_platform_tests.helpers import open_warehouse


def _rows(wh: Warehouse, name: str = "t") -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in wh.table(name).scan().to_arrow().to_pylist())


def test_dynamic_partitions_from_the_records(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], partition_columns=[("ds", "string")])
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(3)
        .with_record_writer(StrictJsonWriter())
        .connect()
    )
    conn.begin_transaction()
    conn.write([b'{"id": 1, "v": "a", "ds": "d1"}', b'{"id": 2, "v": "b", "ds": "d2"}'])
    assert _rows(wh) == []
    conn.commit_transaction()
    conn.begin_transaction()
    conn.write(b'{"id": 3, "v": "c", "ds": "d3"}')
    conn.abort_transaction()
    conn.begin_transaction()
    conn.write(b'{"id": 4, "v": "d", "ds": "d1"}')
    conn.commit_transaction()
    assert _rows(wh) == [(1, "a", "d1"), (2, "b", "d2"), (4, "d", "d1")]
    assert sorted(wh.metastore.list_partitions("default", "t")) == ["ds=d1", "ds=d2", "ds=d3"]
    assert conn.partitions_written == {"ds=d1", "ds=d2", "ds=d3"}
    root = Path(t.spec.location)
    for ds in ("d1", "d2", "d3"):
        assert [p.name for p in (root / f"ds={ds}").iterdir()] == ["delta_0000001_0000003"]
    conn.close()
    assert _rows(wh) == [(1, "a", "d1"), (2, "b", "d2"), (4, "d", "d1")]


def test_static_partition_values(wh: Warehouse) -> None:
    wh.create_table("t", [("id", "int")], partition_columns=[("ds", "string"), ("h", "int")])
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_static_partition_values(["2024-05-01", 7])
        .with_transaction_batch_size(2)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .connect()
    )
    assert wh.metastore.list_partitions("default", "t") == ["ds=2024-05-01/h=7"]
    conn.begin_transaction()
    conn.write([b"1", b"2"])
    conn.commit_transaction()
    conn.close()
    assert _rows(wh) == [(1, "2024-05-01", 7), (2, "2024-05-01", 7)]
    with pytest.raises(Exception, match="3 static value"):
        StreamingConnection.builder(wh).with_table("t").with_static_partition_values(
            ["a", 1, 2]
        ).connect()


@pytest.mark.parametrize("version", ["1", "2"])
def test_rows_go_to_buckets_by_the_tables_bucketing_version(
    local_wh: Warehouse, version: str
) -> None:
    props = {"bucketing_version": version}
    cols = [("k", "string"), ("n", "bigint")]
    local_wh.create_table("s", cols, bucket_columns=["k", "n"], num_buckets=5, properties=props)
    inserted = local_wh.create_table(
        "i", cols, bucket_columns=["k", "n"], num_buckets=5, properties=props
    )
    frame = pd.DataFrame({"k": [f"key{i}" for i in range(200)], "n": list(range(200))})
    inserted.insert(frame)
    conn = (
        StreamingConnection.builder(local_wh)
        .with_table("s")
        .with_transaction_batch_size(2)
        .with_record_writer(PandasRecordWriter())
        .connect()
    )
    conn.begin_transaction()
    conn.write(frame)
    conn.commit_transaction()
    conn.close()

    def buckets(t_name: str) -> dict[str, int]:
        rows = local_wh.table(t_name).scan(with_row_id=True).to_arrow().to_pylist()
        return {r["k"]: decode_bucket(r["row__id"]["bucketid"])[0] for r in rows}

    assert buckets("s") == buckets("i")
    assert len(set(buckets("s").values())) == 5


def test_memory_bound_flushes_buffered_rows(local_wh: Warehouse) -> None:
    t = local_wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = (
        StreamingConnection.builder(local_wh)
        .with_table("t")
        .with_transaction_batch_size(2)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(64 * 1024)
        .connect()
    )
    conn.begin_transaction()
    data = Path(t.spec.location) / "delta_0000001_0000002" / "bucket_00000"
    for chunk in range(20):
        conn.write([f"{chunk * 1000 + i},{'x' * 20}".encode() for i in range(1000)])
        assert conn.pending_bytes <= 64 * 1024
    assert conn.stats.auto_flushes >= 5
    assert data.stat().st_size > 1000  # the open transaction's stripes are in the file
    assert t.scan().to_arrow().num_rows == 0
    conn.commit_transaction()
    assert t.scan().to_arrow().num_rows == 20_000
    conn.close()
    orc = po.ORCFile(str(data))
    assert orc.nrows == 20_000 and orc.nstripes >= 5


def test_heartbeats_keep_the_batch_alive_and_a_silent_batch_is_reaped(tmp_path: Path) -> None:
    with open_warehouse(tmp_path) as wh:
        wh.create_table("t", [("id", "int")])
        conn = (
            StreamingConnection.builder(wh)
            .with_table("t")
            .with_transaction_batch_size(4)
            .with_heartbeat_interval(0.05)
            .connect()
        )
        conn.begin_transaction()
        conn.write(b"1")
        txn = conn.current_txn_id
        assert txn is not None
        batch = set(range(txn, txn + 4))

        def beats() -> dict[int, int]:
            return {
                r["Transaction ID"]: r["Last Heartbeat Time"]
                for r in wh.metastore.show_transactions()
                if r["Transaction ID"] in batch
            }

        first = beats()
        deadline = time.monotonic() + 60
        while not all(b > first[t] for t, b in beats().items()):  # every open txn of the batch
            assert time.monotonic() < deadline, "the batch's transactions were not heartbeated"
            time.sleep(0.02)
        conn.commit_transaction()
        conn.close()

        silent = (
            StreamingConnection.builder(wh)
            .with_table("t")
            .with_transaction_batch_size(3)
            .with_heartbeat_interval(3600)
            .connect()
        )
        silent.begin_transaction()
        silent.write(b"2")
        deadline = time.monotonic() + 60
        while not wh.metastore.reap_timed_out(timeout_s=0.05):  # the housekeeper's pass
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with pytest.raises(TxnAbortedError):
            silent.commit_transaction()
        with pytest.raises(TxnAbortedError):
            silent.begin_transaction()  # the next one was reaped too
        silent.close()
        assert _rows(wh) == [(1,)]


def test_unmanaged_writers_under_a_transaction_owned_elsewhere(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=2)
    ms = wh.metastore
    txn = ms.open_txn(agent_info="coordinator")
    write_id = ms.add_write_components(txn, "default", "t", [None], OperationType.INSERT)
    for stmt, rows in enumerate([[b"1 a", b"2 b"], [b"3 c"]]):
        conn = (
            StreamingConnection.builder(wh)
            .with_table("t")
            .with_write_id(write_id)
            .with_statement_id(stmt)
            .with_record_writer(StrictRegexWriter(r"(\d+) (\w+)"))
            .connect()
        )
        conn.begin_transaction()
        conn.write(rows)
        metrics = conn.commit_transaction()
        assert metrics.write_id == write_id and metrics.statement_ids == (stmt,)
        with pytest.raises(StreamingError, match="one transaction"):
            conn.begin_transaction()
        conn.close()
    names = sorted(p.name for p in Path(t.spec.location).iterdir())
    assert names == [
        f"delta_{write_id:07d}_{write_id:07d}_0000",
        f"delta_{write_id:07d}_{write_id:07d}_0001",
    ]
    assert not list(Path(t.spec.location).glob("*/*_flush_length"))
    assert _rows(wh) == []  # until the coordinator commits
    ms.commit_txn(txn)
    assert _rows(wh) == [(1, "a"), (2, "b"), (3, "c")]
    ids = {r["id"]: r["row__id"] for r in t.scan(with_row_id=True).to_arrow().to_pylist()}
    assert decode_bucket(ids[3]["bucketid"])[1] == 1  # statement id 1 in the bucket property
