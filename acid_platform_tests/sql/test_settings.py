"""SET of Hive keys: implemented keys take effect, keys without effect and misspelled keys
get a note naming them."""

from __future__ import annotations

from acid_platform import Warehouse
from acid_platform.compaction import CompactionContext
from acid_platform.sql import SqlSession


def _notes(sql: SqlSession, text: str) -> tuple[str, ...]:
    (result,) = sql.execute_script(text)
    return result.notes


def test_an_implemented_setting_takes_effect_without_a_note(wh: Warehouse, sql: SqlSession) -> None:
    assert _notes(sql, "SET hive.txn.timeout=7m") == ()
    assert wh.metastore.txn_timeout_s == 420
    assert _notes(sql, "SET hive.merge.cardinality.check=false") == ()
    assert wh.conf["hive.merge.cardinality.check"] == "false"


def test_a_hive_setting_without_effect_is_accepted_with_a_note(
    wh: Warehouse, sql: SqlSession
) -> None:
    for key in ("hive.support.concurrency", "hive.txn.manager", "hive.txn.strict.locking.mode"):
        (note,) = _notes(sql, f"SET {key}=true")
        assert note.startswith(f"{key} has no effect here")
        assert wh.conf[key] == "true"
    (note,) = _notes(sql, "SET hive.exec.dynamic.partition.mode=nonstrict")
    assert "hive.exec.dynamic.partition.mode" in note
    (note,) = _notes(sql, "SET hive.compactor.worker.threads=4")
    assert note.startswith("hive.compactor.worker.threads has no effect here: the maintenance")


def test_a_compactor_setting_reaches_the_compactor(wh: Warehouse, sql: SqlSession) -> None:
    assert _notes(sql, "SET hive.compactor.delta.num.threshold=3") == ()
    assert CompactionContext.of(wh).conf.delta_num_threshold == 3


def test_a_misspelled_hive_key_warns_with_the_nearest_known_key(
    wh: Warehouse, sql: SqlSession
) -> None:
    (note,) = _notes(sql, "SET hive.txn.timout=10s")
    assert note == (
        "warning: hive.txn.timout is not a setting known here; did you mean hive.txn.timeout?"
    )
    assert wh.metastore.txn_timeout_s != 10
    (note,) = _notes(sql, "SET hive.lock.manger=x")
    assert "did you mean hive.lock.manager?" in note


def test_variables_and_keys_outside_hive_get_no_note(sql: SqlSession) -> None:
    assert _notes(sql, "SET hivevar:hive.txn.timout=1") == ()
    assert _notes(sql, "SET mapreduce.job.queuename=etl") == ()
