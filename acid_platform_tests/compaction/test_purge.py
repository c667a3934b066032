"""Issue 13 item 3: aborted-transaction history stays bounded. Aborted txns that wrote nothing are
purged by the abort itself; those whose writes were compacted away, or whose table is gone, by the
maintenance passes, so the snapshot every statement reads does not grow. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import CompactorConf, run_cleaner, run_initiator, run_worker
from acid_platform_tests.helpers import warehouse_fixture

from .conftest import KV

wh = warehouse_fixture(backends=["sqlite", "postgresql"])
pytestmark = pytest.mark.slow


def _rolled_back_insert(wh: Warehouse, table: str, k: int) -> None:
    wh.transaction()
    wh.table(table).insert([{"k": k, "v": "gone"}])
    wh.rollback()


def test_aborted_history_is_purged_and_the_snapshot_stays_small(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert([{"k": 0, "v": "kept"}])
    ms = wh.metastore
    empty = ms.open_txns(300)
    ms.abort_txns(empty)  # aborted before writing anything: purged by the abort itself
    assert not set(empty) & set(ms.valid_txns().aborted_txns)
    for k in range(1, 13):
        _rolled_back_insert(wh, "t", k)  # aborted writes, compacted away below
    wh.create_table("gone", KV)
    for k in range(5):
        _rolled_back_insert(wh, "gone", k)  # aborted writes of a table then dropped
    wh.drop_table("gone")
    before = ms.valid_txns()
    assert len(before.aborted_txns) >= 17

    conf = CompactorConf(aborted_txn_threshold=10)
    decisions = [d for d in run_initiator(wh, conf) if d.cq_id is not None]
    assert [d.table for d in decisions] == ["t"]  # the aborted-txn threshold asks for it
    run_worker(wh, conf=conf)
    run_cleaner(wh, conf)

    after = ms.valid_txns()
    assert after.aborted_txns == ()
    assert len(str(after)) < 40, str(after)
    assert not [r for r in ms.show_transactions() if r["Transaction State"] == "ABORTED"]
    assert [(r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist()] == [(0, "kept")]


def test_empty_aborts_are_purged_at_once_and_a_cleaner_pass_keeps_it_so(wh: Warehouse) -> None:
    ms = wh.metastore
    ms.abort_txns(ms.open_txns(50))
    assert ms.valid_txns().aborted_txns == ()
    assert not [r for r in ms.show_transactions() if r["Transaction State"] == "ABORTED"]
    run_cleaner(wh)
    assert ms.valid_txns().aborted_txns == ()
