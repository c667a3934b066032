"""The asset checks of an ACID table: each consistency check passes on a healthy table and
fails on one corrupted on purpose; a failing blocking check stops the assets downstream."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from dagster import (
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
    MaterializeResult,
    asset,
    materialize,
)
from sqlalchemy import create_engine, delete

from acid_platform import Warehouse
from acid_platform.compaction.upkeep import UPKEEP_CHECKS, upkeep_findings
from acid_platform.format import EventWriter, delete_events, encode_bucket
from acid_platform.metastore.schema import txn_to_write_id
from acid_platform.orchestration import AcidWarehouseResource, acid_table_checks
from acid_platform.table.fsck import FILE_CHECK
from acid_platform.table.schema import data_schema
from acid_platform.table.verify import CHECKS
from acid_platform_tests.helpers import acid_dirs

KEY = AssetKey(["default", "t"])
CONSISTENCY = set(CHECKS)


@asset(key=KEY)
def table_asset() -> MaterializeResult:  # the table is written by the test itself
    return MaterializeResult()


@asset(deps=[KEY])
def downstream() -> None:
    pass


def healthy(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("name", "string")])
    t.insert([{"id": i, "name": f"n{i}"} for i in range(3)])
    t.update({"name": "'x'"}, "id = 1")
    t.delete("id = 2")
    t.insert([{"id": 9, "name": "n9"}])


def table_dir(wh: Warehouse, prefix: str) -> Path:
    root = Path(wh.root) / "t"
    (name,) = [d for d in acid_dirs(root) if d.startswith(prefix)]
    return root / name


def duplicate_row_id(wh: Warehouse) -> None:
    healthy(wh)  # delta_4's only file replaced by delta_1's: its ROW__IDs twice
    shutil.copyfile(
        table_dir(wh, "delta_0000001_") / "bucket_00000",
        table_dir(wh, "delta_0000004_") / "bucket_00000",
    )


def dangling_delete(wh: Warehouse) -> None:
    healthy(wh)  # delete_delta_3 names row 999 as well, which no insert wrote
    schema = data_schema(wh.table("t").spec)
    path = table_dir(wh, "delete_delta_0000003_") / "bucket_00000"
    os.remove(path)  # writers never replace a file
    with EventWriter(str(path), schema) as w:
        w.write(delete_events([1, 1], [encode_bucket(0)] * 2, [2, 999], 3, schema))


def missing_acid_version(wh: Warehouse) -> None:
    healthy(wh)
    os.remove(table_dir(wh, "delta_0000004_") / "_orc_acid_version")


def visible_aborted_dir(wh: Warehouse) -> None:
    healthy(wh)  # a txn writes delta_5 and aborts, delta_6 commits; the metastore forgets the abort
    t = wh.table("t")
    with pytest.raises(RuntimeError), wh.transaction():
        t.insert([{"id": 50, "name": "aborted"}])
        raise RuntimeError("abort")
    t.insert([{"id": 60, "name": "n60"}])  # write id 6
    engine = create_engine(wh.metastore.url)
    with engine.begin() as conn:
        conn.execute(delete(txn_to_write_id).where(txn_to_write_id.c.t2w_writeid == 5))
    engine.dispose()
    assert {r["id"] for r in t.scan().to_arrow().to_pylist()} == {
        0,
        1,
        9,
        50,
        60,
    }  # the aborted row reads


def evaluate(
    wh: Warehouse, instance: DagsterInstance, with_downstream: bool = False
) -> tuple[dict[str, bool], dict[str, AssetCheckSeverity], bool]:
    resource = AcidWarehouseResource(warehouse=wh.root)
    assets = [table_asset, downstream] if with_downstream else [table_asset]
    result = materialize(
        [*assets, *acid_table_checks(KEY, "default.t")],
        resources={"acid_warehouse": resource},
        instance=instance,
        raise_on_error=False,
    )
    evaluations = result.get_asset_check_evaluations()
    passed = {e.check_name: e.passed for e in evaluations}
    severity = {e.check_name: e.severity for e in evaluations}
    ran_downstream = bool(result.asset_materializations_for_node("downstream"))
    return passed, severity, ran_downstream


def test_healthy_table_passes_every_check(wh: Warehouse, instance: DagsterInstance) -> None:
    healthy(wh)
    wh.compact("t", kind="minor", wait=True)

    passed, severity, ran_downstream = evaluate(wh, instance, with_downstream=True)

    assert all(passed.values()), passed
    assert set(passed) == CONSISTENCY | {FILE_CHECK} | set(UPKEEP_CHECKS)
    assert severity[FILE_CHECK] == AssetCheckSeverity.ERROR
    assert {severity[c] for c in CONSISTENCY} == {AssetCheckSeverity.ERROR}
    assert severity["cleaner_backlog"] == AssetCheckSeverity.WARN
    assert ran_downstream


@pytest.mark.parametrize(
    ("corrupt", "failing"),
    [
        (duplicate_row_id, {"unique_row_ids", "row_count_matches_stats"}),
        (dangling_delete, {"deletes_name_rows", "row_count_matches_stats"}),
        (missing_acid_version, {"acid_version_present"}),
        (visible_aborted_dir, {"no_uncommitted_visible"}),
    ],
)
def test_a_corrupted_table_fails_its_check_and_blocks_downstream(
    wh: Warehouse,
    instance: DagsterInstance,
    corrupt: Callable[[Warehouse], None],
    failing: set[str],
) -> None:
    corrupt(wh)

    passed, _, ran_downstream = evaluate(wh, instance, with_downstream=True)

    assert {c for c in CONSISTENCY if not passed[c]} == failing
    assert not ran_downstream


def test_health_warns_about_deltas_above_the_threshold(
    wh: Warehouse, instance: DagsterInstance
) -> None:
    t = wh.create_table("t", [("id", "int")])
    for i in range(11):
        t.insert([{"id": i}])

    passed, severity, _ = evaluate(wh, instance)

    assert not passed["deltas_below_threshold"]
    assert severity["deltas_below_threshold"] == AssetCheckSeverity.WARN
    assert all(passed[c] for c in CONSISTENCY)


def test_a_missing_file_fails_the_files_check_and_blocks_downstream(
    wh: Warehouse, instance: DagsterInstance
) -> None:
    healthy(wh)
    os.remove(table_dir(wh, "delta_0000001_") / "bucket_00000")

    passed, severity, ran_downstream = evaluate(wh, instance, with_downstream=True)

    assert not passed[FILE_CHECK] and severity[FILE_CHECK] == AssetCheckSeverity.ERROR
    assert not ran_downstream


def test_health_checks_report_what_the_health_report_says(
    wh: Warehouse, instance: DagsterInstance
) -> None:
    healthy(wh)
    other = Warehouse.open(wh.root)
    txn = other.transaction()  # holds the cleaner back from the compaction below
    try:
        wh.compact("t", kind="major", wait=True)
        result = materialize(
            [table_asset, *acid_table_checks(KEY, "default.t")],
            resources={"acid_warehouse": AcidWarehouseResource(warehouse=wh.root)},
            instance=instance,
            raise_on_error=False,
        )
        report = wh.health("default.t")
    finally:
        other.rollback()
        other.close()
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    expected = {f.check: f for f in upkeep_findings(report)}
    for name in UPKEEP_CHECKS:
        assert checks[name].passed == expected[name].passed
        assert checks[name].severity == AssetCheckSeverity.WARN

    def meta(check: str, key: str) -> object:
        return checks[check].metadata[key].value

    assert meta("open_transactions_young", "oldest_open_txn") == txn.id
    assert meta("open_transactions_young", "held_by_open_txn") == 1
    assert meta("cleaner_backlog", "ready_for_cleaning") == report.backlog.ready_for_cleaning == 1
    assert meta("cleaner_backlog", "obsolete_paths") == report.backlog.obsolete_paths == 5
    assert meta("deltas_below_threshold", "max_deltas") == report.max_deltas[0] == 0
    assert meta("compaction_backlog", "compactions_queued") == 0
