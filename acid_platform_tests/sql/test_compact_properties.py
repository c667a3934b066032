"""``ALTER TABLE … COMPACT … WITH OVERWRITE TBLPROPERTIES (…)``: the properties are stored
with the queue entry and honoured by the worker for that compaction only — ``tblprops.<key>``
overrides a table property (the ORC codec), ``compactor.<key>`` a compactor setting (Hive's
``overrideTblProps`` / ``overrideConfProps``) (issue 14 item 7)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.orc as po
import pytest

from acid_platform import Warehouse
from acid_platform.compaction import run_worker
from acid_platform.errors import InvalidSettingError, SqlSyntaxError
from acid_platform.format.orc_tail import parse_tail
from acid_platform.sql import SqlSession
from acid_platform.sql import statements as st
from acid_platform.sql.parser import parse_statement
from acid_platform_tests.helpers import acid_dirs


def _codec(path: Path) -> str:
    (bucket,) = sorted(path.glob("bucket_*"))
    return parse_tail(bucket.read_bytes()).compression


def _table(wh: Warehouse, sql: SqlSession) -> Path:
    sql.execute(
        "CREATE TABLE t (k int, v string) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true', 'orc.compress'='ZLIB')"
    )
    sql.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    sql.execute("INSERT INTO t VALUES (3, 'c')")
    return Path(wh.table("t").spec.location)


def test_tblprops_override_the_codec_of_that_compaction_only(
    wh: Warehouse, sql: SqlSession
) -> None:
    d = _table(wh, sql)
    sql.execute(
        "ALTER TABLE t COMPACT 'major' AND WAIT "
        "WITH OVERWRITE TBLPROPERTIES ('tblprops.orc.compress'='SNAPPY', "
        "'compactor.mapreduce.map.memory.mb'='2048')"
    )
    (entry,) = wh.metastore.show_compactions()
    info = wh.metastore.get_compaction(entry["CompactionId"])
    assert info.properties == {
        "tblprops.orc.compress": "SNAPPY",
        "compactor.mapreduce.map.memory.mb": "2048",
    }
    (base,) = [n for n in acid_dirs(d) if n.startswith("base_")]
    assert _codec(d / base) == "SNAPPY"
    assert wh.table("t").spec.properties["orc.compress"] == "ZLIB"  # the table keeps its own

    sql.execute("INSERT INTO t VALUES (4, 'd')")
    sql.execute("ALTER TABLE t COMPACT 'major' AND WAIT")  # no override: the table's codec
    newest = max(n for n in acid_dirs(d) if n.startswith("base_"))
    assert _codec(d / newest) == "ZLIB"
    rows = sorted((r["k"], r["v"]) for r in sql.execute("SELECT k, v FROM t").to_pylist())
    assert rows == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_compactor_keys_override_a_setting_of_that_compaction(
    wh: Warehouse, sql: SqlSession
) -> None:
    d = _table(wh, sql)
    sql.execute(
        "ALTER TABLE t COMPACT 'major' AND WAIT WITH OVERWRITE TBLPROPERTIES "
        "('compactor.acid.compactor.hive3.compatible'='true')"
    )
    assert [n for n in acid_dirs(d) if n.startswith("base_")] == ["base_0000002"]
    assert po.ORCFile(str(d / "base_0000002" / "bucket_00000")).nrows == 3


def test_a_bad_override_fails_the_entry_with_its_key(wh: Warehouse, sql: SqlSession) -> None:
    _table(wh, sql)
    sql.execute(
        "ALTER TABLE t COMPACT 'major' WITH OVERWRITE TBLPROPERTIES "
        "('compactor.acid.compactor.orc.stripe.size'='lots')"
    )
    (outcome,) = run_worker(wh)
    assert outcome.state.value == "failed"
    assert "acid.compactor.orc.stripe.size='lots' is not a valid value" in outcome.message
    assert InvalidSettingError.__name__ in outcome.message


def test_the_clause_follows_hive_4s_order() -> None:
    stmt = parse_statement(
        "ALTER TABLE db.t PARTITION (ds='x') COMPACT 'minor' AND WAIT POOL 'p' "
        "WITH OVERWRITE TBLPROPERTIES ('compactor.a'='1', 'tblprops.b'='2')"
    )
    assert isinstance(stmt, st.Compact)
    assert (stmt.kind, stmt.wait, stmt.pool) == ("minor", True, "p")
    assert stmt.properties == (("compactor.a", "1"), ("tblprops.b", "2"))
    with pytest.raises(SqlSyntaxError):
        parse_statement("ALTER TABLE t COMPACT 'major' WITH TBLPROPERTIES ('a'='1')")


def test_the_python_api_takes_the_same_properties(wh: Warehouse, sql: SqlSession) -> None:
    d = _table(wh, sql)
    (info,) = wh.compact("t", wait=True, properties={"tblprops.orc.compress": "NONE"})
    assert info.properties == {"tblprops.orc.compress": "NONE"}
    (base,) = [n for n in acid_dirs(d) if n.startswith("base_")]
    assert _codec(d / base) == "NONE"
