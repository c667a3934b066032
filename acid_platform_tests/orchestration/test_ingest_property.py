"""Property test: whatever lands, is rewritten or removed, however the sensor's ticks, its runs
and re-runs interleave (and even with its cursor lost), every file version is committed into
the table at most once, and once everything requested has run, every file present is loaded
exactly once."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance, RunRequest, SensorResult, build_sensor_context
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_platform import Warehouse
from acid_platform.orchestration import AcidWarehouseResource, ingest_sensor
from acid_platform.streaming.landing import load_files, stat_landing


@dataclass(frozen=True)
class Step:
    action: str  # land | remove | tick | run | rerun | reset
    file: int  # which file (0..2) or request
    rows: int  # rows of a landed version (1..3)


steps = st.lists(
    st.builds(
        Step,
        st.sampled_from(["land", "land", "remove", "tick", "tick", "run", "run", "rerun", "reset"]),
        st.integers(0, 2),
        st.integers(1, 3),
    ),
    max_size=14,
)


class Landing:
    """Files in a landing directory, each version's rows with ids of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.version = 0
        self.ids_by_key: dict[str, list[int]] = {}

    def land(self, file: int, rows: int) -> None:
        self.version += 1
        ids = [file * 10_000 + self.version * 10 + j for j in range(rows)]
        path = self.root / f"f{file}.csv"
        path.write_text("id\n" + "".join(f"{i}\n" for i in ids))
        stamp = 1_700_000_000_000_000_000 + self.version  # every version a time of its own
        os.utime(path, ns=(stamp, stamp))
        self.ids_by_key[stat_landing(path).key] = ids

    def remove(self, file: int) -> None:
        (self.root / f"f{file}.csv").unlink(missing_ok=True)

    def present_keys(self) -> set[str]:
        return {stat_landing(p).key for p in self.root.glob("f*.csv")}


def run(wh: Warehouse, request: RunRequest) -> None:
    """What the ingest op does with its config (a file gone by then: the run fails)."""
    files = request.run_config["ops"]["acid_ingest_files"]["config"]["files"]
    if all(os.path.exists(f) for f in files):
        load_files(wh, "t", files)


@pytest.mark.slow
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_every_file_version_is_loaded_at_most_once(
    instance: DagsterInstance, script: list[Step]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "landing").mkdir()
        landing = Landing(root / "landing")
        with Warehouse.open(root / "wh") as wh:
            wh.create_table("t", [("id", "bigint")])
            resource = AcidWarehouseResource(warehouse=str(root / "wh"))
            sensor = ingest_sensor(str(landing.root), "t", stable_listings=1)
            cursor: str | None = None
            pending: list[RunRequest] = []
            done: list[RunRequest] = []

            def tick() -> None:
                nonlocal cursor
                with build_sensor_context(
                    instance=instance, cursor=cursor, resources={"acid_warehouse": resource}
                ) as context:
                    result = sensor(context)
                assert isinstance(result, SensorResult)
                cursor = result.cursor
                keys = {r.run_key for r in pending + done}
                for request in result.run_requests or []:
                    assert isinstance(request, RunRequest)
                    if request.run_key not in keys:  # the daemon drops a repeated run key
                        pending.append(request)

            for step in script:
                if step.action == "land":
                    landing.land(step.file, step.rows)
                elif step.action == "remove":
                    landing.remove(step.file)
                elif step.action == "tick":
                    tick()
                elif step.action == "run" and pending:
                    request = pending.pop(0)
                    run(wh, request)
                    done.append(request)
                elif step.action == "rerun" and done:
                    run(wh, done[step.file % len(done)])
                elif step.action == "reset":
                    cursor = None
            tick()
            while pending:  # everything requested runs
                request = pending.pop(0)
                run(wh, request)
                done.append(request)

            committed = wh.table("t").committed_sources()
            keys = [s.key for s in committed]
            assert len(keys) == len(set(keys))
            assert landing.present_keys() <= set(keys)  # every file present loaded
            expected = Counter(i for k in keys for i in landing.ids_by_key[k])
            got = Counter(r["id"] for r in wh.table("t").scan().to_arrow().to_pylist())
            assert got == expected and max(got.values(), default=1) == 1
