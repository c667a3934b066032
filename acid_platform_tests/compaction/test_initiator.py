"""The initiator's decisions at and around each of Hive's thresholds."""

from __future__ import annotations

import random

import numpy as np
import pytest

from acid_platform import Warehouse
from acid_platform.compaction import (
    CompactorConf,
    Initiator,
    InitiatorDecision,
    RewritePlan,
    RewriteResult,
    choose_compaction_type,
    compact_table,
    run_cleaner,
    run_worker,
)
from acid_platform.compaction.config import THRESHOLD_PREFIX
from acid_platform.metastore import OperationType
from acid_platform.table import Table
from acid_platform_tests.helpers import warehouse_fixture

from .conftest import KV

#: The initiator's decisions on local disk and on the S3 server (SQLite metastore).
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=["sqlite", "s3"])

NUM = THRESHOLD_PREFIX + "hive.compactor.delta.num.threshold"
PCT = THRESHOLD_PREFIX + "hive.compactor.delta.pct.threshold"


def _rows(n: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    return [{"k": rng.randrange(1 << 30), "v": f"{rng.getrandbits(64):016x}"} for _ in range(n)]


def _with_base(wh: Warehouse, name: str = "t", rows: int = 20_000, **kw: object) -> Table:
    """A table whose only directory is a compacted base of ``rows`` random rows."""
    t = wh.create_table(name, KV, **kw)  # type: ignore[arg-type]
    t.insert(_rows(rows // 2, 1))
    t.insert(_rows(rows - rows // 2, 2))
    compact_table(wh, name, kind="major")
    run_cleaner(wh)
    return t


def _add_deltas(t: Table, n: int, rows: int = 1) -> None:
    for i in range(n):
        t.insert(_rows(rows, 100 + i))


def _only(decisions: list[InitiatorDecision], table: str = "t") -> InitiatorDecision:
    (d,) = [d for d in decisions if d.table == table]
    return d


def _queue(wh: Warehouse) -> list[tuple[str, str, str]]:
    return [
        (r["Table"], r["Type"], r["State"])
        for r in wh.metastore.show_compactions()
        if r["State"] in ("initiated", "working")
    ]


def test_more_than_ten_deltas_over_a_base_asks_for_minor(wh: Warehouse) -> None:
    t = _with_base(wh)
    assert Initiator(wh).run() == []  # compacted and cleaned: no activity left
    _add_deltas(t, 10)
    d = _only(Initiator(wh).run())
    assert (d.type, d.deltas) == (None, 10) and d.delta_size / d.base_size < 0.1
    assert _queue(wh) == []
    _add_deltas(t, 1)
    d = _only(Initiator(wh).run())
    assert (d.type, d.deltas, d.cq_id is not None) == ("minor", 11, True)
    assert _queue(wh) == [("t", "MINOR", "initiated")]
    again = _only(Initiator(wh).run())  # no duplicate of a queued entry
    assert again.cq_id is None and again.reason == "a compaction is already queued"
    assert len(_queue(wh)) == 1


def test_delta_to_base_size_ratio_above_the_threshold_asks_for_major(wh: Warehouse) -> None:
    t = _with_base(wh, rows=4_000)
    _add_deltas(t, 1, rows=100)
    d = Initiator(wh).decide("default", "t")
    assert d.type is None and 0 < d.delta_size / d.base_size < 0.1
    ratio = np.float32(d.delta_size) / np.float32(d.base_size)
    # exactly at the (per-table) threshold: not above it
    wh.metastore.alter_table_properties("default", "t", {PCT: repr(float(ratio))})
    assert Initiator(wh).decide("default", "t").type is None
    below = float(np.nextafter(ratio, np.float32(0)))
    wh.metastore.alter_table_properties("default", "t", {PCT: repr(below)})
    assert Initiator(wh).decide("default", "t").type == "major"
    wh.metastore.alter_table_properties("default", "t", unset=[PCT])
    _add_deltas(t, 1, rows=1_000)  # now well above the default 0.1
    d = _only(Initiator(wh).run())
    assert d.type == "major" and d.delta_size / d.base_size > 0.1 and d.deltas == 2


def test_without_a_base_never_minor(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    _add_deltas(t, 10)
    assert _only(Initiator(wh).run()).type is None  # no base: the ratio does not apply
    _add_deltas(t, 1)
    d = _only(Initiator(wh).run())
    assert (d.type, d.base_size, d.deltas) == ("major", 0, 11)
    assert "no base" in d.reason


def test_table_property_overrides_the_delta_count(wh: Warehouse) -> None:
    t = _with_base(wh, properties={NUM: "2"})
    _add_deltas(t, 2)
    assert _only(Initiator(wh).run()).type is None
    _add_deltas(t, 1)
    assert _only(Initiator(wh).run()).type == "minor"
    # and the global setting moves it for tables without an override
    u = _with_base(wh, "u")
    _add_deltas(u, 4)
    conf = CompactorConf.from_conf({"hive.compactor.delta.num.threshold": "3"})
    assert _only(Initiator(wh, conf).run(), "u").type == "minor"


def test_the_warehouse_settings_reach_the_initiator(wh: Warehouse) -> None:
    t = _with_base(wh)
    _add_deltas(t, 3)
    assert _only(Initiator(wh).run()).type is None  # Hive's default: more than 10 deltas
    wh.sql("SET hive.compactor.delta.num.threshold=2")
    assert _only(Initiator(wh).run()).type == "minor"


def test_no_auto_compaction_is_respected(wh: Warehouse) -> None:
    t = wh.create_table("t", KV, properties={"NO_AUTO_COMPACTION": "true"})
    _add_deltas(t, 12)
    d = _only(Initiator(wh).run())
    assert d.type is None and d.reason == "no_auto_compaction=true"
    assert _queue(wh) == []
    compact_table(wh, "t", kind="major")  # manual compaction still works


def _aborted_txns(wh: Warehouse, n: int) -> None:
    ms = wh.metastore
    txns = ms.open_txns(n)
    ms.allocate_write_ids(txns, "default", "t")
    for txn in txns:
        ms.add_write_components(txn, "default", "t", [None], OperationType.INSERT)
    ms.abort_txns(txns)


def test_more_than_1000_aborted_txns_ask_for_major(wh: Warehouse) -> None:
    wh.create_table("t", KV)
    _aborted_txns(wh, 1000)
    d = _only(Initiator(wh).run())
    assert (d.type, d.aborted_txns) == (None, 1000)
    _aborted_txns(wh, 1)
    d = _only(Initiator(wh).run())
    assert (d.type, d.aborted_txns) == ("major", 1001)


def test_aborted_threshold_is_configurable(wh: Warehouse) -> None:
    wh.create_table("t", KV)
    conf = CompactorConf(aborted_txn_threshold=3)
    _aborted_txns(wh, 3)
    assert _only(Initiator(wh, conf).run()).type is None
    _aborted_txns(wh, 1)
    assert _only(Initiator(wh, conf).run()).type == "major"


def _failing(plan: RewritePlan) -> RewriteResult:
    raise RuntimeError("disk on fire")


def test_after_two_failed_compactions_the_initiator_does_not_initiate(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    _add_deltas(t, 11)
    for _ in range(2):  # one failure is not enough to stop
        assert _only(Initiator(wh).run()).type == "major"
        (outcome,) = run_worker(wh, executor=_failing)
        assert outcome.state.value == "failed" and "disk on fire" in outcome.message
    d = _only(Initiator(wh).run())
    assert d.type is None and "2 consecutive compaction attempts failed" in d.reason
    states = [r["State"] for r in wh.metastore.show_compactions()]
    assert states.count("failed") == 2 and states.count("did not initiate") == 1
    assert _queue(wh) == []


@pytest.mark.parametrize(
    ("base", "delta", "deltas", "expected"),
    [
        (1000, 100, 1, None),  # ratio 0.1 is not above 0.1
        (1000, 101, 1, "major"),
        (1000, 50, 10, None),
        (1000, 50, 11, "minor"),
        (0, 50, 11, "major"),
        (0, 50, 10, None),
        (0, 0, 0, None),
        (1000, 0, 0, None),
    ],
)
def test_choose_compaction_type(base: int, delta: int, deltas: int, expected: str | None) -> None:
    assert choose_compaction_type(base, delta, deltas)[0] == expected


def test_several_bases_and_no_delta_asks_for_major() -> None:
    assert choose_compaction_type(1000, 0, 0, multi_base=True)[0] == "major"
