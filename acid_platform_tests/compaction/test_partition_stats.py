"""The statistics the commits keep per partition (``metastore.partition_stats``, issue 34) equal
a recount from the files: after random sequences of INSERT, DELETE, UPDATE, MERGE, INSERT
OVERWRITE, TRUNCATE, minor and major compaction and cleaning across partitions, each partition's
kept numRows / numFiles / totalSize / deltas / delete events are what a fresh snapshot reads
(:func:`~acid_platform.compaction.health.partition_layouts`: listings and ORC footers) — on
SQLite and PostgreSQL, partitioned and unpartitioned, full ACID and insert-only; and through a streaming batch."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from sqlalchemy import create_engine, text

from acid_platform import Warehouse
from acid_platform.compaction.health import partition_layouts
from acid_platform.metastore.partition_stats import PartitionStats
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter
from acid_platform_tests.helpers import fresh_namespace


@pytest.fixture(params=["sqlite", "postgresql"])
def wh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Warehouse]:
    url, cleanup = fresh_namespace(request.param, tmp_path)
    warehouse = Warehouse.open(tmp_path / "wh", url)
    warehouse.url = url  # type: ignore[attr-defined]  # for a test editing the schema
    try:
        yield warehouse
    finally:
        warehouse.close()
        cleanup()


def recount(wh: Warehouse, name: str) -> dict[str, PartitionStats]:
    """Each partition as a fresh snapshot reads it, from the files."""
    return {
        p.partition or "": PartitionStats(
            p.live_rows or 0,
            p.files,
            p.bytes,
            p.delete_events or 0,
            p.deltas,
            p.delete_deltas,
        )
        for p in partition_layouts(wh.table(name))
    }


def kept(wh: Warehouse, name: str) -> dict[str, PartitionStats | None]:
    spec = wh.table(name).spec
    return wh.metastore.partition_stats(spec.db, spec.name, spec.is_partitioned)


def check(wh: Warehouse, name: str, step: str) -> None:
    counted = recount(wh, name)
    stats = kept(wh, name)
    for partition, numbers in stats.items():
        assert numbers is not None, (step, partition)
        assert numbers == counted.get(partition, PartitionStats()), (step, partition)


def described(wh: Warehouse) -> dict[str, str]:
    """The basic statistics among ``DESCRIBE FORMATTED t``'s table parameters."""
    return {
        r["data_type"]: r["comment"]
        for r in wh.sql("DESCRIBE FORMATTED t").to_pylist()
        if r["col_name"] == "Table Parameters:" and r["data_type"].startswith(("num", "total"))
    }


def _rows(rng: random.Random, first: int, n: int, parts: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([rng.randrange(100) for _ in ids], pa.int32()),
            "d": pa.array([rng.randrange(parts) for _ in ids], pa.int32()),
        }
    )


@pytest.mark.parametrize("kind", ["partitioned", "unpartitioned", "insert_only"])
@pytest.mark.parametrize("seed", [1, 2])
def test_kept_statistics_equal_a_recount_after_random_writes(
    wh: Warehouse, kind: str, seed: int
) -> None:
    rng = random.Random(seed)
    parts = 4
    props = (
        "'transactional'='true', 'transactional_properties'='insert_only'"
        if kind == "insert_only"
        else "'transactional'='true'"
    )
    partitioned = kind != "unpartitioned"
    columns = "id BIGINT, v INT" + ("" if partitioned else ", d INT")
    wh.sql(
        f"CREATE TABLE t ({columns}) {'PARTITIONED BY (d INT)' if partitioned else ''} "
        f"STORED AS ORC TBLPROPERTIES ({props})"
    )
    table = wh.table("t")
    next_id = 0
    ops = ["insert", "overwrite", "truncate", "minor", "major", "clean"]
    if kind != "insert_only":
        ops += ["delete", "update", "merge"]
    for step in range(14):
        op = "insert" if step < 2 else rng.choice(ops)
        d = rng.randrange(parts)
        if op == "insert":
            n = rng.randrange(1, 30)
            data = _rows(rng, next_id, n, parts)
            next_id += n
            table.insert(data if partitioned else data.select(["id", "v", "d"]))
        elif op == "delete":
            wh.sql(f"DELETE FROM t WHERE v < {rng.randrange(40)} AND d = {d}")
        elif op == "update":
            wh.sql(f"UPDATE t SET v = v + 1 WHERE v > {rng.randrange(100)}")
        elif op == "merge":
            wh.sql(
                f"MERGE INTO t USING (SELECT id, v FROM t WHERE d = {d}) s ON t.id = s.id "
                "WHEN MATCHED AND s.v > 50 THEN DELETE "
                "WHEN MATCHED THEN UPDATE SET v = s.v + 2"
            )
        elif op == "overwrite":
            target = f"PARTITION (d={d})" if partitioned else ""
            cols = "id, v" if partitioned else "id, v, d"
            where = f"d = {d} AND v % 2 = 0" if partitioned else "v % 2 = 0"
            wh.sql(f"INSERT OVERWRITE TABLE t {target} SELECT {cols} FROM t WHERE {where}")
        elif op == "truncate":
            wh.sql(f"TRUNCATE TABLE t {f'PARTITION (d={d})' if partitioned else ''}")
        elif op in ("minor", "major"):
            wh.compact("t", {"d": d} if partitioned else None, op, wait=True)
        else:
            wh.clean()
        check(wh, "t", f"{step}: {op}")
    assert sum((s or PartitionStats()).num_rows for s in kept(wh, "t").values()) == (
        table.scan().to_arrow().num_rows
    )


def test_a_partition_without_statistics_is_unknown_until_overwritten(wh: Warehouse) -> None:
    """A partition registered before the statistics existed (no row) stays unknown through
    appends and becomes known again when an INSERT OVERWRITE replaces it; dropping it drops
    its row."""
    wh.sql(
        "CREATE TABLE t (id BIGINT) PARTITIONED BY (d INT) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    wh.sql("INSERT INTO t VALUES (1, 1), (2, 1), (3, 2)")
    spec = wh.table("t").spec
    engine = create_engine(wh.url)  # type: ignore[attr-defined]
    with engine.begin() as conn:  # as if registered before migration 0005
        conn.execute(text("DELETE FROM partition_stats WHERE ps_partition = :p"), {"p": "d=1"})
    engine.dispose()
    wh.sql("INSERT INTO t VALUES (4, 1)")
    assert kept(wh, "t")["d=1"] is None
    assert "numRows" not in described(wh)  # unknown in one partition: no table total
    wh.sql("INSERT OVERWRITE TABLE t PARTITION (d=1) SELECT id FROM t WHERE d = 1 AND id > 1")
    assert kept(wh, "t")["d=1"] == recount(wh, "t")["d=1"]
    assert kept(wh, "t")["d=1"].num_rows == 2  # type: ignore[union-attr]
    counted = recount(wh, "t")
    assert described(wh) == {
        "numPartitions": "2",
        "numRows": "3",
        "numFiles": str(sum(p.num_files for p in counted.values())),
        "totalSize": str(sum(p.total_size for p in counted.values())),
    }
    wh.metastore.drop_partition(spec.db, spec.name, "d=1")
    assert "d=1" not in kept(wh, "t")
    assert spec.is_partitioned


def test_a_streaming_batch_adds_each_commit_once(wh: Warehouse) -> None:
    """Each transaction of a batch records its files again at their committed lengths: the
    statistics add the growth only (one delta, its files once, the committed rows), and equal
    the recount but for the closing footers (``totalSize`` counts committed lengths) until a
    compaction rewrites the delta."""
    wh.create_table("t", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=2)
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(4)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(1)  # every write flushed: files hold uncommitted stripes
        .connect()
    )
    for ids, end in (
        (range(4), conn.commit_transaction),
        (range(10, 12), conn.abort_transaction),  # (a batch's aborted txn adds nothing)
        (range(20, 23), conn.commit_transaction),
    ):
        conn.begin_transaction()
        conn.write([f"{i},v{i}".encode() for i in ids])
        end()
    conn.close()
    stats = kept(wh, "t")[""]
    counted = recount(wh, "t")[""]
    assert stats is not None
    assert (stats.num_rows, stats.num_files, stats.deltas) == (7, counted.num_files, 1)
    assert counted.num_rows == 7 and stats.total_size <= counted.total_size
    wh.sql("INSERT INTO t VALUES (40, 'x')")
    wh.compact("t", None, "major", wait=True)
    assert kept(wh, "t")[""] == recount(wh, "t")[""]
