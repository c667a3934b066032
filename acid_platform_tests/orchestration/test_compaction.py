"""The compaction sensor and job on a real warehouse and a real Dagster instance."""

from __future__ import annotations

import os
import re

import pytest
from dagster import DagsterInstance, RunRequest, SensorResult, build_sensor_context

from acid_platform import Warehouse
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.metastore import CompactionState, LockComponent, LockType
from acid_platform.orchestration import AcidWarehouseResource, compaction_job, compaction_sensor
from acid_platform.orchestration.compaction import (
    ENTRY_TAG,
    KEY_TAG,
    CompactionCursor,
    initiator_status,
)
from acid_platform.table.transaction import ledger_of
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.orchestration.conftest import insert_deltas


def tick(
    instance: DagsterInstance, resource: AcidWarehouseResource, cursor: str | None
) -> SensorResult:
    with build_sensor_context(
        instance=instance, cursor=cursor, resources={"acid_warehouse": resource}
    ) as context:
        result = compaction_sensor()(context)
    assert isinstance(result, SensorResult)
    return result


def run(instance: DagsterInstance, resource: AcidWarehouseResource, request: RunRequest) -> bool:
    result = compaction_job.execute_in_process(
        run_config=request.run_config,
        resources={"acid_warehouse": resource},
        instance=instance,
        tags=request.tags,
        raise_on_error=False,
    )
    return result.success


def eleven_deltas(wh: Warehouse, name: str = "t") -> None:
    """Table ``name`` with 11 deltas: over the initiator's delta threshold (10)."""
    wh.create_table(name, [("id", "int"), ("name", "string")])
    insert_deltas(wh, name, 11)


def unclaimable(request: RunRequest) -> RunRequest:
    """``request`` naming an entry that is gone: its run fails before the worker claims its
    own entry."""
    return RunRequest(
        run_key=request.run_key,
        run_config={"ops": {"acid_compact": {"config": {"compaction_id": 999}}}},
        tags=request.tags,
    )


def test_sensor_requests_one_run_per_queued_entry_and_never_twice(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    eleven_deltas(wh)

    first = tick(instance, resource, None)
    assert [r.run_key for r in first.run_requests or []] == ["default.t::11"]
    (entry,) = wh.metastore.queued_compactions()
    assert first.run_requests[0].tags[ENTRY_TAG] == str(entry.id)  # type: ignore[index]

    again = tick(instance, resource, first.cursor)  # the same tick once more
    assert not again.run_requests
    assert again.skip_reason is not None
    assert wh.metastore.queued_compactions()[0].id == entry.id  # nothing queued twice


def test_compaction_job_runs_the_worker_on_eleven_deltas(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    t = wh.create_table("t", [("id", "int"), ("name", "string")])
    insert_deltas(wh, "t", 11)
    before = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    (request,) = tick(instance, resource, None).run_requests or []

    assert run(instance, resource, request)

    entry = wh.metastore.get_compaction(int(request.tags[ENTRY_TAG]))
    assert entry.state == CompactionState.READY_FOR_CLEANING
    table_dir = os.path.join(wh.root, "t")
    assert any(d.startswith("base_0000011_v") for d in acid_dirs(table_dir))
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before
    (dagster_run,) = instance.get_runs()
    assert dagster_run.tags[KEY_TAG] == "default.t::11"


def test_explicit_compact_request_is_picked_up(wh: Warehouse, instance: DagsterInstance) -> None:
    wh.create_table("p", [("id", "int"), ("name", "string")], partition_columns=[("ds", "string")])
    insert_deltas(wh, "p", 2, partition="2024-01-01")
    wh.compact("p", partition={"ds": "2024-01-01"}, kind="minor")  # ALTER TABLE … COMPACT
    manual = AcidWarehouseResource(warehouse=wh.root, conf={"hive.compactor.initiator.on": "false"})

    (request,) = tick(instance, manual, None).run_requests or []

    assert request.run_key == "default.p:ds=2024-01-01:2"
    assert request.tags["acid/compaction_type"] == "minor"
    assert run(instance, manual, request)
    table_dir = os.path.join(wh.root, "p", "ds=2024-01-01")
    assert "delta_0000001_0000002_v" in " ".join(acid_dirs(table_dir))


def test_entry_whose_run_ended_without_claiming_it_is_requested_again(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    eleven_deltas(wh)
    first = tick(instance, resource, None)
    (request,) = first.run_requests or []
    assert not run(instance, resource, unclaimable(request))  # fails before claiming the entry

    retry = tick(instance, resource, first.cursor)

    assert [r.run_key for r in retry.run_requests or []] == ["default.t::11#retry1"]
    assert run(instance, resource, (retry.run_requests or [])[0])
    assert not tick(instance, resource, retry.cursor).run_requests


def test_finished_entries_leave_the_cursor(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    eleven_deltas(wh)
    first = tick(instance, resource, None)
    assert run(instance, resource, (first.run_requests or [])[0])

    after = tick(instance, resource, first.cursor)

    assert not after.run_requests
    assert after.cursor is not None and '"requested": {}' in after.cursor


def test_a_writer_commits_while_the_compaction_job_runs(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    t = wh.create_table("t", [("id", "int"), ("name", "string")])
    insert_deltas(wh, "t", 11)
    (request,) = tick(instance, resource, None).run_requests or []
    wh.conf["acid.lock.wait.timeout.s"] = "0"  # a writer that would wait fails instead
    inserted = []

    def write(step: str) -> None:  # the compactor's files are written, its txn still open
        if step == "worker.files_written":
            inserted.append(t.insert([{"id": 100, "name": "during"}]).rows_inserted)

    with on_checkpoint(write):
        assert run(instance, resource, request)

    assert inserted == [1]
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [*range(11), 100]


def test_the_compaction_job_is_not_held_up_by_a_writers_lock(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    eleven_deltas(wh)
    (request,) = tick(instance, resource, None).run_requests or []
    holder = wh.transaction()  # a writer holds an exclusive lock on the table throughout
    ledger_of(holder).lock([LockComponent(LockType.EXCLUSIVE, "default", "t")])

    assert run(instance, resource, request)

    assert holder.is_open
    holder.rollback()
    assert any(d.startswith("base_0000011_v") for d in acid_dirs(os.path.join(wh.root, "t")))


@pytest.mark.slow
def test_one_tick_requests_new_entries_and_retries_of_many_tables(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    # The runs of all the tick's keys come from one query of the run storage.
    eleven_deltas(wh, "a")
    eleven_deltas(wh, "b")
    first = tick(instance, resource, None)
    by_key = {r.run_key or "": r for r in first.run_requests or []}
    assert sorted(by_key) == ["default.a::11", "default.b::11"]
    # a's run fails before its worker claims the entry; b's is not launched yet
    assert not run(instance, resource, unclaimable(by_key["default.a::11"]))
    eleven_deltas(wh, "c")

    second = tick(instance, resource, first.cursor)

    assert sorted(r.run_key or "" for r in second.run_requests or []) == [
        "default.a::11#retry1",
        "default.c::11",
    ]


def test_an_entry_whose_key_an_earlier_run_had_gets_a_key_of_its_own(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    eleven_deltas(wh)
    first = tick(instance, resource, None)
    assert run(instance, resource, (first.run_requests or [])[0])
    wh.compact("t", kind="major")  # asked again with no write since: the same high-water mark
    (entry,) = wh.metastore.queued_compactions(CompactionState.INITIATED)

    (request,) = tick(instance, resource, first.cursor).run_requests or []

    assert request.run_key == f"default.t::11#{entry.id}"


def test_a_tick_between_initiator_runs_says_when_it_ran_and_runs_next(
    wh: Warehouse, instance: DagsterInstance
) -> None:
    """The sensor ticks every 30 s, the initiator runs every hive.compactor.check.interval:
    a tick on which it did not run must not say that it queued nothing (issue 33)."""
    every_300s = AcidWarehouseResource(
        warehouse=wh.root, conf={"hive.compactor.check.interval": "300"}
    )
    eleven_deltas(wh)
    first = tick(instance, every_300s, None)  # the initiator runs, queues, the sensor requests
    assert len(first.run_requests or []) == 1
    second = tick(instance, every_300s, first.cursor)  # seconds later: it does not run
    reason = str(second.skip_reason.skip_message) if second.skip_reason else ""
    assert not reason.startswith("initiator queued 0"), reason
    assert re.match(
        r"initiator last ran \d+s ago \(at \d\d:\d\d:\d\d UTC\) and queued 1; next run in "
        r"(4m5\ds|5m00s), at \d\d:\d\d:\d\d UTC \(hive\.compactor\.check\.interval 300s\); "
        r"no new queue entry \(1 requested entry pending\)",
        reason,
    ), reason
    off = AcidWarehouseResource(warehouse=wh.root, conf={"hive.compactor.initiator.on": "false"})
    skipped = tick(instance, off, second.cursor).skip_reason
    assert skipped is not None and str(skipped.skip_message).startswith("initiator off")


def test_the_initiators_status_line() -> None:
    cursor = CompactionCursor(initiated_at=1_000_000.0, initiator_queued=2)
    assert initiator_status(True, 300, cursor, 1_000_000.0, ran=True) == (
        "initiator ran now and queued 2; next run in 5m00s (hive.compactor.check.interval 300s)"
    )
    assert initiator_status(True, 300, cursor, 1_000_130.0, ran=False) == (
        "initiator last ran 2m10s ago (at 13:46:40 UTC) and queued 2; next run in 2m50s, "
        "at 13:51:40 UTC (hive.compactor.check.interval 300s)"
    )
    assert CompactionCursor.parse(cursor.dump()) == cursor
    assert CompactionCursor.parse('{"requested": {}, "initiated_at": 5.0}').initiator_queued == 0
