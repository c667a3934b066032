"""Issue 29, items 3 and 4: every landing file exactly once. A file still being written is not
loaded until two listings in a row see it unchanged; a file changed between its listing and its
run is left for the sensor to list again; one file reached two ways (a symlinked directory, a
``file://`` URI beside a plain path) is one source; a symlink loop lists nothing twice; a
symlink leading out of the landing location is refused and named; a batch member that vanished
before its run does not stop the others."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dagster import DagsterInstance, RunRequest

from acid_platform import Warehouse
from acid_platform.orchestration import AcidWarehouseResource, ingest_job, ingest_sensor
from acid_platform.streaming.landing import list_landing, load_files
from acid_platform_tests.orchestration.conftest import requests, tick

CSV = "id,name\n1,a\n2,b\n"


@pytest.fixture
def table(wh: Warehouse) -> str:
    wh.create_table("t", [("id", "int"), ("name", "string")])
    return "t"


def run(instance: DagsterInstance, resource: AcidWarehouseResource, request: RunRequest) -> dict:
    result = ingest_job.execute_in_process(
        run_config=request.run_config,
        instance=instance,
        tags=request.tags,
        resources={"acid_warehouse": resource},
    )
    assert result.success
    (out,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    return {k: v.value for k, v in out.event_specific_data.metadata.items()}  # type: ignore[union-attr]


def ids(wh: Warehouse) -> list[int]:
    return sorted(r["id"] for r in wh.table("t").scan().to_arrow().to_pylist())


def test_a_growing_file_is_loaded_once_when_it_stops_changing(
    landing: Path,
    wh: Warehouse,
    table: str,
    resource: AcidWarehouseResource,
    instance: DagsterInstance,
) -> None:
    growing = landing / "a.csv"
    growing.write_text("id,name\n1,a\n12")  # a writer mid-line: "12" of "123"
    sensor = ingest_sensor(str(landing), table)
    first = tick(instance, resource, sensor, None)
    assert requests(first) == []  # seen once: maybe still being written
    with growing.open("a") as out:
        out.write("3,c\n")  # it grew: still not stable
    second = tick(instance, resource, sensor, first.cursor)
    assert requests(second) == []
    (request,) = requests(tick(instance, resource, sensor, second.cursor))  # unchanged twice
    meta = run(instance, resource, request)
    assert meta["rows"] == 2 and ids(wh) == [1, 123]

    # a file that changes between its listing and its run is not loaded then
    late = landing / "b.csv"
    late.write_text(CSV.replace("1,a", "7,g").replace("2,b", "8,h"))
    state = tick(instance, resource, sensor, tick(instance, resource, sensor, None).cursor)
    (pending,) = [r for r in requests(state) if "b.csv" in str(r.run_config)]
    with late.open("a") as out:
        out.write("9,i\n")
    meta = run(instance, resource, pending)
    assert meta["changed_since_listed"] == [str(late)] and meta["rows"] == 0
    assert 9 not in ids(wh)


def test_one_file_reached_two_ways_is_one_source(
    tmp_path: Path, landing: Path, wh: Warehouse, table: str
) -> None:
    (landing / "a.csv").write_text(CSV)
    alias = tmp_path / "alias"
    alias.symlink_to(landing, target_is_directory=True)
    names: list[str | Path] = [
        landing / "a.csv",
        alias / "a.csv",
        f"file://{landing}/a.csv",
        f"{landing}/../landing/a.csv",
    ]
    for name in names:
        load_files(wh, table, [name])
    assert ids(wh) == [1, 2]  # loaded once, whatever the spelling
    assert [f.uri for f in list_landing(alias) or []] == [str(landing / "a.csv")]


def test_links_out_of_the_landing_location_are_refused_and_loops_list_once(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "landing"
    (landing / "sub").mkdir(parents=True)
    (landing / "sub" / "a.csv").write_text(CSV)
    (landing / "sub" / "loop").symlink_to(landing, target_is_directory=True)  # a link loop
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$planted:19000:0:99999:7:::\n")
    (landing / "evil.csv").symlink_to(secret)
    refused: list[str] = []
    listed = list_landing(landing, "*", recursive=True, refused=refused)
    assert [f.uri for f in listed or []] == [str(landing / "sub" / "a.csv")]  # once
    assert len(refused) == 1 and "evil.csv" in refused[0] and "outside" in refused[0]


def test_a_vanished_batch_member_does_not_stop_the_others(
    landing: Path,
    wh: Warehouse,
    table: str,
    resource: AcidWarehouseResource,
    instance: DagsterInstance,
) -> None:
    for i in range(3):
        (landing / f"f{i}.csv").write_text(f"id,name\n{i},n\n")
    sensor = ingest_sensor(str(landing), table, batch_size=3, stable_listings=1)
    (request,) = requests(tick(instance, resource, sensor, None))
    os.remove(landing / "f1.csv")
    meta = run(instance, resource, request)
    assert meta["vanished"] == [str(landing / "f1.csv")] and ids(wh) == [0, 2]


# --------------------------------------------------------------------------- content identity


def rewrite_keeping_size_and_time(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` (same length) and put its old modification
    time back, as ``cp -p`` or ``touch -d`` would: only its status change time moves."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns


def test_a_rewrite_with_the_same_size_and_time_loads_its_new_content_once(
    landing: Path, wh: Warehouse, table: str
) -> None:
    path = landing / "a.csv"
    path.write_text(CSV)
    first = load_files(wh, table, [path])
    assert first.rows == 2 and ids(wh) == [1, 2]
    recorded = wh.table(table).committed_sources([first.loads[0].file.key])[0]
    assert len(str(recorded.info["sha256"])) == 64  # the loaded bytes' digest is recorded

    rewrite_keeping_size_and_time(path, CSV.replace("1,a", "5,e").replace("2,b", "6,f"))
    second = load_files(wh, table, [path])
    assert second.rows == 2 and ids(wh) == [1, 2, 5, 6]
    (loaded,) = second.loaded
    assert loaded.key.endswith(f"|sha256={second.loads[0].file.sha256}")
    assert load_files(wh, table, [path]).is_noop  # that content, once

    rewrite_keeping_size_and_time(path, CSV)  # the first content back: loaded already
    assert load_files(wh, table, [path]).is_noop
    assert ids(wh) == [1, 2, 5, 6]


def test_a_file_touched_but_not_rewritten_is_not_loaded_again(
    tmp_path: Path, landing: Path, wh: Warehouse, table: str
) -> None:
    path = landing / "a.csv"
    path.write_text(CSV)
    assert load_files(wh, table, [path]).rows == 2
    path.chmod(0o600)  # its status change time moves, its content does not
    os.link(path, tmp_path / "hard-link")
    assert load_files(wh, table, [path]).is_noop
    assert ids(wh) == [1, 2]


def test_a_file_changing_while_it_is_read_is_not_loaded_half_way(
    landing: Path, wh: Warehouse, table: str
) -> None:
    from acid_platform.streaming.landing import stat_landing

    path = landing / "a.csv"
    path.write_text("id,name\n1,a\n12")
    listed = stat_landing(path)  # listed mid-write
    with path.open("a") as out:
        out.write("3,c\n")
    result = load_files(wh, table, [listed])
    (failed,) = result.failed
    assert failed.error == "LandingFileError" and "changed since it was listed" in failed.message
    assert ids(wh) == []  # nothing of it
    assert load_files(wh, table, [path]).rows == 2 and ids(wh) == [1, 123]


def test_the_sensor_requests_a_same_size_and_time_rewrite_under_its_content(
    landing: Path,
    wh: Warehouse,
    table: str,
    resource: AcidWarehouseResource,
    instance: DagsterInstance,
) -> None:
    path = landing / "a.csv"
    path.write_text(CSV)
    sensor = ingest_sensor(str(landing), table, stable_listings=1)
    state = tick(instance, resource, sensor, None)
    (request,) = requests(state)
    assert run(instance, resource, request)["rows"] == 2
    state = tick(instance, resource, sensor, state.cursor)
    assert requests(state) == []

    rewrite_keeping_size_and_time(path, CSV.replace("1,a", "5,e"))
    state = tick(instance, resource, sensor, state.cursor)
    (again,) = requests(state)
    assert again.run_key != request.run_key and "|sha256=" in str(again.run_key)
    assert run(instance, resource, again)["rows"] == 2
    assert ids(wh) == [1, 2, 2, 5]
    assert requests(tick(instance, resource, sensor, state.cursor)) == []
