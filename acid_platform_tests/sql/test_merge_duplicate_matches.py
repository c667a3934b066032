"""A target row that several source rows match is deleted once (issue 34): with
``hive.merge.cardinality.check=false`` (as TPC-DS's ``MERGE … USING (SELECT ss_ticket_number
FROM store_sales JOIN date_dim …) … WHEN MATCHED THEN DELETE`` needs under Hive's rules) the
statement writes one delete event per row and reports the rows, not the matches."""

from __future__ import annotations

from pathlib import Path

import pyarrow.orc as orc
import pytest

from acid_platform import Warehouse
from acid_platform.errors import CardinalityViolationError


def _delete_events(root: Path) -> int:
    return sum(
        orc.ORCFile(f).nrows for f in root.rglob("bucket_*") if "delete_delta_" in str(f.parent)
    )


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_row_matched_many_times_is_deleted_once(tmp_path: Path, partitioned: bool) -> None:
    with Warehouse.open(str(tmp_path / "wh")) as wh:
        part = "PARTITIONED BY (p int) " if partitioned else ""
        cols = "id int, v string" if partitioned else "id int, v string, p int"
        wh.sql(
            f"CREATE TABLE t ({cols}) {part}STORED AS ORC TBLPROPERTIES ('transactional'='true')"
        )
        wh.sql("CREATE TABLE s (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
        # rows 1..6 over two partitions; the same (write id, bucket, row id) appears in both
        wh.sql(
            "INSERT INTO t "
            + ("PARTITION (p) " if partitioned else "")
            + "VALUES (1,'a',0),(2,'b',0),(3,'c',0),(4,'d',1),(5,'e',1),(6,'f',1)"
        )
        wh.sql("INSERT INTO s VALUES (1),(1),(1),(2),(2),(4),(4),(4),(4),(9)")  # 12 matches
        wh.sql("SET hive.merge.cardinality.check=false")
        wh.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
        left = wh.sql("SELECT id FROM t ORDER BY id").column("id").to_pylist()
        assert left == [3, 5, 6]
        assert _delete_events(tmp_path / "wh") == 3


def test_rows_deleted_counts_rows(tmp_path: Path) -> None:
    with Warehouse.open(str(tmp_path / "wh")) as wh:
        wh.sql(
            "CREATE TABLE t (id int, v string) PARTITIONED BY (p int) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')"
        )
        wh.sql("INSERT INTO t PARTITION (p) VALUES (1,'a',0),(2,'b',1),(3,'c',1)")
        wh.set_conf("hive.merge.cardinality.check", "false")
        source = [{"id": 1}, {"id": 1}, {"id": 2}, {"id": 2}, {"id": 2}]
        metrics = wh.table("t").merge(source, "t.id = s.id").when_matched_delete().execute()
        assert metrics.rows_deleted == 2
        assert sorted(wh.sql("SELECT id FROM t").column("id").to_pylist()) == [3]


def test_hive_rule_still_refuses_duplicates_when_checked(tmp_path: Path) -> None:
    """HiveQL keeps Hive's rule: with the check on (the default) the MERGE fails, writing
    nothing."""
    with Warehouse.open(str(tmp_path / "wh")) as wh:
        wh.sql("CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
        wh.sql("INSERT INTO t VALUES (1),(2)")
        wh.sql("CREATE TABLE s (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
        wh.sql("INSERT INTO s VALUES (1),(1)")
        with pytest.raises(CardinalityViolationError):
            wh.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
        assert wh.sql("SELECT count(*) AS n FROM t").column("n").to_pylist() == [2]
        assert _delete_events(tmp_path / "wh") == 0
