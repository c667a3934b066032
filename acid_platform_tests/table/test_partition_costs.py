"""A statement costs what its partitions cost, not what the table has (issue 34): on a table of
2,000 partitions, a statement that touches 2 of them lists those 2 directories once each (and
the table directory at most once), fetches the file record of those 2 only, and sends the
metastore as many statements as the same statement on a table of 20 partitions — through
HiveQL and the Table API, on SQLite and PostgreSQL. Listings are counted on a real local file
system (:mod:`.counting`), metastore statements with a SQLAlchemy event listener."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.table import lit
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.table.counting import CountingFileSystem, CountingWarehouse, Sent

PARTITIONS = 2_000
SMALL = 20


@pytest.fixture(params=["sqlite", "postgresql"])
def counted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CountingFileSystem]:
    """A warehouse (``counter.warehouse``) on a counting file system with ``big`` (2,000
    partitions) and ``small`` (20 partitions), both of ``(id bigint, v int) PARTITIONED BY
    (d int)`` holding 3 rows a partition, and ``src``, unpartitioned."""
    url, cleanup = (
        (None, None) if request.param == "sqlite" else fresh_namespace(request.param, tmp_path)
    )
    counter = CountingWarehouse.counter = CountingFileSystem()
    wh = CountingWarehouse.open(tmp_path / "wh", url, conf={"acid.lock.wait.timeout.s": "0"})
    try:
        for name, n in (("big", PARTITIONS), ("small", SMALL)):
            wh.sql(
                f"CREATE TABLE {name} (id BIGINT, v INT) PARTITIONED BY (d INT) "
                "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
            )
            wh.table(name).insert(_rows(n))
        wh.sql(
            "CREATE TABLE src (id BIGINT, d INT) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')"
        )
        wh.table("src").insert(pa.table({"id": pa.array([7, 8], pa.int64()), "d": [7, 8]}))
        counter.warehouse = wh  # type: ignore[attr-defined]
        yield counter
    finally:
        wh.close()
        if cleanup is not None:
            cleanup()


def _rows(partitions: int) -> pa.Table:
    ids = [p * 3 + k for p in range(partitions) for k in range(3)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([i % 3 for i in ids], pa.int32()),
            "d": pa.array([i // 3 for i in ids], pa.int32()),
        }
    )


#: (what it is, the statement on table ``name``, the partitions it touches)
STATEMENTS: list[tuple[str, Callable[[Warehouse, str], object], list[int]]] = [
    (
        "HiveQL DELETE",
        lambda wh, name: wh.sql(f"DELETE FROM {name} WHERE d IN (5, 6) AND v = 1"),
        [5, 6],
    ),
    (
        "HiveQL MERGE",
        lambda wh, name: wh.sql(
            f"MERGE INTO {name} AS t USING src AS s ON t.id = s.id * 3 AND t.d = s.d "
            "WHEN MATCHED THEN UPDATE SET v = 9"
        ),
        [7, 8],
    ),
    (
        "HiveQL SELECT",
        lambda wh, name: wh.sql(f"SELECT count(*) FROM {name} WHERE d = 9 OR d = 10"),
        [9, 10],
    ),
    (
        "Table API scan",
        lambda wh, name: wh.table(name).scan(where="d IN (11, 12)").to_arrow(),
        [11, 12],
    ),
    (
        "Table API UPDATE",
        lambda wh, name: wh.table(name).update({"v": lit(5)}, "d BETWEEN 13 AND 14"),
        [13, 14],
    ),
    (
        "Table API MERGE",
        lambda wh, name: (
            wh.table(name)
            .merge(
                pa.table({"id": pa.array([45], pa.int64()), "d": [15]}), "t.id = s.id AND t.d = s.d"
            )
            .when_matched_delete()
            .when_not_matched_insert({"id": "s.id", "v": "0", "d": "s.d"})
            .execute()
        ),
        [15],
    ),
]


def test_a_statement_lists_and_checks_only_the_partitions_it_touches(
    counted: CountingFileSystem,
) -> None:
    wh: Warehouse = counted.warehouse  # type: ignore[attr-defined]
    for what, run, touched in STATEMENTS:
        sent_by: dict[str, int] = {}
        for name in ("small", "big"):
            root = wh.table(name).location.path
            counted.listed.clear()
            with Sent() as sent:
                run(wh, name)
            sent_by[name] = len(sent.statements)

            wanted = {f"{root}/d={p}": 1 for p in touched}
            partitions_listed = {
                p: n for p, n in counted.listed.items() if p.startswith(f"{root}/")
            }
            assert partitions_listed == wanted, (what, name)
            assert counted.listed.get(root, 0) <= 1, (what, name)
            assert sent.record_partitions_fetched() <= {f"d={p}" for p in touched}, (what, name)
        # the metastore's work does not grow with the partitions the statement leaves alone
        assert sent_by["big"] == sent_by["small"], (what, sent_by)

    big = wh.table("big").scan(where="d BETWEEN 5 AND 15").to_arrow()
    rows = sorted((r["d"], r["id"], r["v"]) for r in big.to_pylist())
    assert (5, 16, 1) not in rows and (6, 19, 1) not in rows  # deleted (v = 1)
    assert (7, 21, 9) in rows and (8, 24, 9) in rows  # updated by the MERGE
    assert [r for r in rows if r[0] in (13, 14)] == [
        (13, 39, 5),
        (13, 40, 5),
        (13, 41, 5),
        (14, 42, 5),
        (14, 43, 5),
        (14, 44, 5),
    ]
    assert (15, 45, 0) not in rows and (15, 45, 2) not in rows  # deleted by the API MERGE
    assert wh.table("big").scan().to_arrow().num_rows == PARTITIONS * 3 - 3


def test_an_insert_into_known_partitions_asks_the_metastore_about_those_only(
    tmp_path: Path,
) -> None:
    wh = Warehouse.open(tmp_path / "wh")
    try:
        wh.create_table("t", [("id", "bigint")], partition_columns=[("d", "int")])
        wh.table("t").insert(_rows(300).select(["id", "d"]))
    finally:
        wh.close()
    again = Warehouse.open(tmp_path / "wh")  # a new session: it knows no partition yet
    try:
        with Sent() as sent:
            again.table("t").insert(pa.table({"id": pa.array([1], pa.int64()), "d": [7]}))
        lookups = [(t, p) for t, p in sent.statements if "FROM PARTITIONS" in t]
        assert len(lookups) == 1, lookups  # one existence query, for partition d=7
        assert "PART_NAME IN" in lookups[0][0]
        assert not any("INTO PARTITIONS" in t for t, _ in sent.statements)
        assert again.table("t").scan().to_arrow().num_rows == 901
    finally:
        again.close()
