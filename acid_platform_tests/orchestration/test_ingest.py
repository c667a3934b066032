"""The ingest sensor and job on a real warehouse, real landing files and a real Dagster
instance: one run per new file or batch (run key = its identity), nothing requested twice,
each file loaded exactly once in a transaction of its own (a run's files: one transaction
batch), bad files failing the run with nothing of them written."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    RunRequest,
    SensorDefinition,
)

from acid_platform import Warehouse
from acid_platform.orchestration import AcidWarehouseResource, ingest_job, ingest_sensor
from acid_platform.orchestration.ingest import FILES_TAG, TABLE_TAG, IngestCursor
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.orchestration.conftest import requests, skipped, tick
from acid_platform_tests.orchestration.ingest_workers import run_ingest_job

COLUMNS = [("id", "int"), ("name", "string")]


def listing_once(*args: Any, **kwargs: Any) -> SensorDefinition:
    """An ingest sensor requesting a file on the first listing that sees it (these tests are
    about exactly-once loading; the two-listing default has a test of its own)."""
    return ingest_sensor(*args, stable_listings=1, **kwargs)


def land(landing: Path, name: str, ids: range, *, mtime_ns: int | None = None) -> Path:
    """A CSV landing file of rows ``ids`` (its modification time set, when given)."""
    path = landing / name
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in ids))
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def files_of(request: RunRequest) -> list[str]:
    return list(request.run_config["ops"]["acid_ingest_files"]["config"]["files"])


def execute(
    instance: DagsterInstance, resource: AcidWarehouseResource, request: RunRequest
) -> tuple[bool, dict[str, Any], str]:
    """Run the request's run in process: (success, the op's output metadata, failure text)."""
    result = ingest_job.execute_in_process(
        run_config=request.run_config,
        resources={"acid_warehouse": resource},
        instance=instance,
        tags=request.tags,
        raise_on_error=False,
    )
    metadata: dict[str, Any] = {}
    failure = ""
    for event in result.all_events:
        if event.is_successful_output:
            data = event.step_output_data
            metadata = {k: v.value for k, v in data.metadata.items()}
        if event.is_step_failure:
            failure = str(event.step_failure_data.error.message)  # type: ignore[union-attr]
    return result.success, metadata, failure


def ids_in(wh: Warehouse, table: str = "t") -> list[int]:
    return sorted(r["id"] for r in wh.table(table).scan().to_arrow().to_pylist())


def test_a_new_file_is_requested_once_under_its_identity(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    wh.create_table("t", COLUMNS)
    path = land(landing, "a.csv", range(3), mtime_ns=1_700_000_000_000_000_000)
    sensor = listing_once(str(landing), "t")

    first = tick(instance, resource, sensor, None)

    (request,) = requests(first)
    assert request.run_key == f"{path}|size={path.stat().st_size}|mtime_ns=1700000000000000000"
    assert files_of(request) == [str(path)]
    assert request.tags[TABLE_TAG] == "t" and request.tags[FILES_TAG] == "1"
    again = tick(instance, resource, sensor, first.cursor)  # the same tick once more
    assert requests(again) == [] and "no new file" in skipped(again)
    assert again.cursor == first.cursor


def test_the_cursor_carries_across_ticks(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    wh.create_table("t", COLUMNS)
    sensor = listing_once(str(landing), "t", pattern="*.csv")
    a = land(landing, "a.csv", range(2))
    first = tick(instance, resource, sensor, None)
    assert [files_of(r) for r in requests(first)] == [[str(a)]]

    b, c = land(landing, "b.csv", range(2, 4)), land(landing, "c.csv", range(4, 6))
    (landing / "notes.txt").write_text("not a landing file")
    (landing / ".b.csv.tmp").write_text("still being written")
    (landing / "_SUCCESS").write_text("")
    second = tick(instance, resource, sensor, first.cursor)
    assert sorted(files_of(r)[0] for r in requests(second)) == [str(b), str(c)]  # two runs
    assert len({r.run_key for r in requests(second)}) == 2

    assert requests(tick(instance, resource, sensor, second.cursor)) == []
    a.unlink()  # a file loaded and removed from the landing area leaves the cursor
    after = tick(instance, resource, sensor, second.cursor)
    assert set(IngestCursor.parse(after.cursor).seen) == {str(b), str(c)}

    land(landing, "b.csv", range(2, 5))  # rewritten in place: a new file
    (rewritten,) = requests(tick(instance, resource, sensor, after.cursor))
    assert files_of(rewritten) == [str(b)] and rewritten.run_key not in {
        r.run_key for r in requests(second)
    }


def test_the_run_loads_the_file_exactly_once(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    t = wh.create_table("t", COLUMNS)
    path = land(landing, "a.csv", range(5))
    (request,) = requests(tick(instance, resource, listing_once(str(landing), "t"), None))

    ok, meta, _ = execute(instance, resource, request)

    assert ok and ids_in(wh) == list(range(5))
    assert (meta["skipped"], meta["rows"], meta["write_ids"]) == (False, 5, [1])
    assert meta["files_loaded"] == [str(path)] and meta["failed"] == []
    (source,) = t.committed_sources()
    assert ([source.txn_id], source.write_id, source.key) == (meta["txn_ids"], 1, request.run_key)
    dirs = acid_dirs(Path(wh.root) / "t")

    ok, again, _ = execute(instance, resource, request)  # the same run once more

    assert ok and again["skipped"] is True and again["rows"] == 0
    (committed,) = again["already_committed"]
    assert [committed["txn_id"]] == meta["txn_ids"]  # the transaction that loaded it
    assert ids_in(wh) == list(range(5)) and acid_dirs(Path(wh.root) / "t") == dirs


def test_a_batch_is_one_run_and_one_transaction_batch(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    t = wh.create_table("t", COLUMNS)
    for i in range(5):
        land(landing, f"f{i}.csv", range(10 * i, 10 * i + 2), mtime_ns=(1_700_000_000 + i) * 10**9)
    sensor = listing_once(str(landing), "t", batch_size=2, max_runs_per_tick=2)

    first = tick(instance, resource, sensor, None)

    batches = [files_of(r) for r in requests(first)]
    assert [[Path(f).name for f in b] for b in batches] == [
        ["f0.csv", "f1.csv"],
        ["f2.csv", "f3.csv"],
    ]
    second = tick(instance, resource, sensor, first.cursor)  # the one left over
    assert [[Path(f).name for f in files_of(r)] for r in requests(second)] == [["f4.csv"]]
    for request in [*requests(first), *requests(second)]:
        assert execute(instance, resource, request)[0]
    assert ids_in(wh) == [0, 1, 10, 11, 20, 21, 30, 31, 40, 41]
    assert len({s.txn_id for s in t.committed_sources()}) == 5  # a transaction per file
    assert acid_dirs(Path(wh.root) / "t") == [  # a delta per run: its transaction batch
        "delta_0000001_0000002",
        "delta_0000003_0000004",
        "delta_0000005_0000005",
    ]


def test_files_committed_already_are_not_requested(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    wh.create_table("t", COLUMNS)
    land(landing, "a.csv", range(2))
    sensor = listing_once(str(landing), "t")
    (request,) = requests(tick(instance, resource, sensor, None))
    assert execute(instance, resource, request)[0]

    reset = tick(instance, resource, sensor, None)  # the cursor lost (sensor reset)

    assert requests(reset) == [] and "1 found loaded already" in skipped(reset)
    assert IngestCursor.parse(reset.cursor).seen  # and remembered now


def test_a_missing_landing_directory_is_skipped(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, tmp_path: Path
) -> None:
    sensor = listing_once(str(tmp_path / "nowhere"), "t")
    result = tick(instance, resource, sensor, None)
    assert requests(result) == [] and "does not exist" in skipped(result)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id,name\n1,a\nnot-a-number,b\n", "does not parse as csv"),
        ("id,name\n1,a\n2,b,extra\n", "does not parse as csv"),
        ("id,label\n1,a\n", "lacks column(s) ['name']"),
        ("", "does not parse as csv"),
    ],
)
def test_a_bad_landing_file_fails_the_run_and_writes_nothing_of_it(
    wh: Warehouse,
    resource: AcidWarehouseResource,
    instance: DagsterInstance,
    landing: Path,
    text: str,
    expected: str,
) -> None:
    t = wh.create_table("t", COLUMNS)
    bad = landing / "bad.csv"
    bad.write_text(text)
    (request,) = requests(tick(instance, resource, listing_once(str(landing), "t"), None))

    ok, _, failure = execute(instance, resource, request)

    assert not ok
    assert str(bad) in failure and expected in failure and "nothing of them written" in failure
    assert ids_in(wh) == [] and t.committed_sources() == []
    (txn,) = wh.metastore.show_transactions()  # its transaction, aborted
    assert txn["Transaction State"] == "ABORTED"


def test_an_unparseable_parquet_file_fails_the_run_and_the_good_one_loads(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    t = wh.create_table("t", COLUMNS)
    pq.write_table(pa.table({"id": [1], "name": ["a"]}), landing / "good.parquet")
    (landing / "bad.parquet").write_bytes(b"PAR1 this is not parquet")
    sensor = listing_once(str(landing), "t", batch_size=10)
    (request,) = requests(tick(instance, resource, sensor, None))

    ok, _, failure = execute(instance, resource, request)

    assert not ok and "bad.parquet does not parse as parquet" in failure
    assert "good.parquet" not in failure and "1 other file(s) loaded" in failure
    assert ids_in(wh) == [1]  # the good file, in its own transaction of the batch
    assert [s.key.rpartition("|size")[0] for s in t.committed_sources()] == [
        str(landing / "good.parquet")
    ]


def test_the_table_is_created_on_the_first_load_and_its_asset_materialized(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    (landing / "a.jsonl").write_text(
        "\n".join(json.dumps({"id": i, "name": f"n{i}", "ds": "2024-01-0" + str(1 + i % 2)})
                  for i in range(4))
    )  # fmt: skip
    sensor = listing_once(
        str(landing),
        "db1.events",
        columns={"id": "int", "name": "string"},
        partition_columns={"ds": "date"},
        asset_key=AssetKey(["db1", "events"]),
    )
    (request,) = requests(tick(instance, resource, sensor, None))

    ok, meta, _ = execute(instance, resource, request)

    assert ok and meta["rows"] == 4
    assert wh.list_partitions("db1.events") == ["ds=2024-01-01", "ds=2024-01-02"]
    event = instance.get_latest_materialization_event(AssetKey(["db1", "events"]))
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.metadata["rows"].value == 4


@pytest.mark.slow
def test_two_runs_loading_one_file_at_once_commit_it_once(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    """Two OS processes run the same request; both read the file before either writes (they
    meet at ``ingest.file_written``): one commits the rows, the other's transaction is refused
    and its run reports ``skipped``."""
    t = wh.create_table("t", COLUMNS)
    land(landing, "a.csv", range(20))
    (request,) = requests(tick(instance, resource, listing_once(str(landing), "t"), None))
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=run_ingest_job, args=(wh.root, request.run_config, barrier, out))
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    outcomes = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)

    assert [ok for ok, _ in outcomes] == [True, True]
    assert sorted((m["skipped"], m["rows"]) for _, m in outcomes) == [(False, 20), (True, 0)]
    assert ids_in(wh) == list(range(20))
    (source,) = t.committed_sources()
    loaded, skipped = sorted(outcomes, key=lambda o: o[1]["skipped"])
    assert loaded[1]["txn_ids"] == [source.txn_id]
    assert [c["txn_id"] for c in skipped[1]["already_committed"]] == [source.txn_id]


def test_a_landing_uri_is_watched_and_loaded_through_pyarrow_fs(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance, landing: Path
) -> None:
    wh.create_table("t", COLUMNS)
    land(landing, "a.csv", range(3))
    sensor = listing_once(f"file://{landing}", "t")

    first = tick(instance, resource, sensor, None)

    (request,) = requests(first)
    assert files_of(request) == [f"{landing}/a.csv"]  # one URI form: the resolved path
    assert (request.run_key or "").startswith(f"{landing}/a.csv|size=")
    assert execute(instance, resource, request)[0]
    assert ids_in(wh) == [0, 1, 2]
    assert requests(tick(instance, resource, sensor, first.cursor)) == []
    assert requests(tick(instance, resource, sensor, None)) == []  # committed already
