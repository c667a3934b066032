"""A Dagster output's metadata costs what its write costs, not what the table has (issue 34):
``handle_output`` into one partition of a table of 1,000 lists only that partition's directory,
opens no file of any other partition, and sends the metastore as many statements as the same
output into a table of 10 partitions — the table's shape comes from the statistics the commits
keep (``metastore.partition_stats``), in one query. On SQLite and PostgreSQL, with real files
(listings and opened files counted by :mod:`acid_platform_tests.table.counting`)."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from dagster import (
    AssetExecutionContext,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from sqlalchemy import create_engine, text

from acid_platform import Warehouse
from acid_platform.compaction.health import partition_layouts
from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource, table_health
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.orchestration.conftest import latest_metadata
from acid_platform_tests.table.counting import CountingFileSystem, CountingWarehouse, Sent

BIG = 1_000
SMALL = 10


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    found, cleanup = fresh_namespace(request.param, tmp_path)
    try:
        yield found
    finally:
        cleanup()


def _day(n: int) -> str:
    return f"p{n:04d}"


def _rows(first: int, partitions: range) -> pa.Table:
    days = [_day(p) for p in partitions for _ in range(3)]
    return pa.table(
        {
            "id": pa.array(range(first, first + len(days)), pa.int64()),
            "day": pa.array(days, pa.string()),
            "v": pa.array([1] * len(days), pa.int64()),
        }
    )


def _output(
    name: str, n: int, root: Path, url: str, instance: DagsterInstance
) -> tuple[dict[str, object], Sent, CountingFileSystem]:
    """Materialize partition ``p0005`` of asset ``name`` (a table of ``n`` partitions, seeded
    here) and return its metadata, the statements sent and the file system's counts."""
    days = StaticPartitionsDefinition([_day(p) for p in range(n)])

    @asset(name=name, partitions_def=days, metadata={"partition_expr": "day"})
    def output(context: AssetExecutionContext) -> pa.Table:
        return _rows(10_000_000, range(5, 6)).set_column(
            1, "day", pa.array([context.partition_key] * 3)
        )

    resource = AcidWarehouseResource(warehouse=str(root), metastore_url=url)
    resources = {
        "acid_warehouse": resource,
        "io_manager": AcidTableIOManager(acid_warehouse=resource),
    }
    # the first output creates the table; then n partitions of 3 rows, a DELETE in one
    assert materialize([output], partition_key=_day(0), resources=resources, instance=instance)
    with Warehouse.open(root, url) as wh:
        wh.table(name).insert(_rows(0, range(1, n)))
        wh.sql(f"DELETE FROM {name} WHERE day = 'p0003' AND id % 3 = 0")
    counter = CountingFileSystem()

    def counted(self: Warehouse, location: str) -> pafs.FileSystem:
        return pafs.PyFileSystem(counter)

    with pytest.MonkeyPatch.context() as patch, Sent() as sent:
        patch.setattr(Warehouse, "filesystem_for", counted)  # the IO manager's warehouse too
        assert materialize(
            [output], partition_key=_day(5), resources=resources, instance=instance
        ).success
    return latest_metadata(instance, name), sent, counter


def _acid_statements(sent: Sent) -> list[str]:
    """The statements sent to the metastore (not to Dagster's own storage)."""
    tables = ("TXNS", "WRITE_FILES", "PARTITION", "HIVE_LOCKS", "TBLS", "ACID_", "WRITE_ID")
    return [text for text, _ in sent.statements if any(t in text for t in tables)]


def test_a_one_partition_output_lists_and_counts_only_its_partition(
    url: str, tmp_path: Path
) -> None:
    with DagsterInstance.ephemeral() as instance:
        big, big_sent, big_fs = _output("big", BIG, tmp_path / "wh", url, instance)
        small, small_sent, _ = _output("small", SMALL, tmp_path / "wh", url, instance)
    with Warehouse.open(tmp_path / "wh", url) as wh:
        root = wh.table("big").location.path
        layouts = partition_layouts(wh.table("big"))
    touched = f"{root}/day=p0005"
    others = {
        path
        for path in [*big_fs.listed, *big_fs.opened]
        if path.startswith(f"{root}/day=") and not path.startswith(touched)
    }
    assert not others, sorted(others)[:5]
    assert big_fs.listed.get(root, 0) <= 1
    # the metadata: the whole table, from the kept statistics, as a recount from the files
    assert big["table_partitions"] == BIG == len(layouts)
    assert big["dagster/row_count"] == sum(p.live_rows or 0 for p in layouts) == 3 * BIG - 1
    assert big["dagster/partition_row_count"] == 3
    assert big["delta_count"] == sum(p.deltas for p in layouts)
    assert big["delete_delta_count"] == sum(p.delete_deltas for p in layouts) == 1
    assert big["table_bytes"] == sum(p.bytes for p in layouts)
    assert small["table_partitions"] == SMALL
    # the metastore: as many statements as on a table of 10 partitions, one statistics query
    assert len(_acid_statements(big_sent)) == len(_acid_statements(small_sent))
    stats = [t for t, _ in big_sent.statements if t.startswith("SELECT PARTITION_STATS.")]
    assert len(stats) == 1, stats


def test_a_partition_without_statistics_alone_is_counted_from_its_files(
    url: str, tmp_path: Path
) -> None:
    """A partition whose statistics are unknown (registered before they existed: its row
    deleted here) is listed and counted from its footers; the others are not touched."""
    counter = CountingWarehouse.counter = CountingFileSystem()
    with CountingWarehouse.open(tmp_path / "wh", url) as wh:
        wh.sql(
            "CREATE TABLE t (id BIGINT) PARTITIONED BY (d INT) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')"
        )
        wh.sql("INSERT INTO t VALUES (1, 1), (2, 1), (3, 2), (4, 3), (5, 4)")
        wh.sql("DELETE FROM t WHERE id = 2")
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM partition_stats WHERE ps_partition = :p"), {"p": "d=1"})
        engine.dispose()
        counter.listed.clear()
        counter.opened.clear()
        health = table_health(wh.table("t"), ["d=1", "d=2"])
        root = wh.table("t").location.path
    listed = {p for p in [*counter.listed, *counter.opened] if p.startswith(f"{root}/d=")}
    assert listed and all(p.startswith(f"{root}/d=1") for p in listed), sorted(listed)
    assert (health.partitions, health.rows, health.slice_rows) == (4, 4, 2)
    assert (health.deltas, health.delete_deltas, health.deleted_rows) == (4, 1, 1)
