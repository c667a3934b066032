"""``dagster dev`` serving the example platform, driven as a user drives it (issue 10).

One ``dagster dev`` (webserver and daemon) for the module, started from the repository's
``workspace.yaml`` on 127.0.0.1 with a ``DAGSTER_HOME`` of its own configured by the repository's
``dagster.yaml``, a fresh warehouse, and short maintenance intervals from the environment the
platform reads. Over GraphQL: the platform's materialization is launched, its metadata and check
results read back; the compaction sensor's runs compact the summary table, are observed on its
asset and turn its WARN check to PASS; eleven deltas committed to a table are compacted by the
run the compaction sensor requests; a client killed with kill -9 is reaped by the platform's maintenance (the
housekeeping run, or the initiator, which reaps first); the cleaner schedule's run deletes what the compaction made obsolete. In headless Chromium: the
asset page shows the plotted metadata and the check results (screenshots kept as artifacts,
with the server's log, in ``$ACID_TEST_ARTIFACTS`` or ``test-artifacts/``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from acid_platform import Warehouse
from acid_platform.errors import NoSuchTxnError
from acid_platform.metastore import TxnState
from acid_platform_example.data import PLATFORM_JOB, platform_run_tags
from acid_platform_tests.browser import headless_chromium
from acid_platform_tests.dagster_api import DagsterApi, RunInfo
from acid_platform_tests.dagster_server import DagsterServer, dagster_dev_command, dagster_home
from acid_platform_tests.helpers import acid_dirs, artifacts_dir
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import ROOT, platform_env

pytestmark = pytest.mark.slow

#: acid_table_checks per table: 7 blocking consistency checks (files_match_record among them)
#: and 4 WARN upkeep checks
CHECKS_PER_TABLE = 11
BLOCKING_CHECKS = 7
TXN_TIMEOUT_S = 20  # short; a live txn heartbeats every 10 s, so 10 s of slack under load
#: Maintenance every few seconds instead of minutes (what a user would set the same way).
ENV = {
    "ACID_CONF": f"hive.compactor.check.interval=1s,hive.txn.timeout={TXN_TIMEOUT_S}s",
    "ACID_CLEANER_CRON": "* * * * *",
    "ACID_COMPACTION_SENSOR_INTERVAL": "5",
    "ACID_HOUSEKEEPING_SENSOR_INTERVAL": "5",
}
AS_OF = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
TABLES = ["retail/stores", "retail/sales", "mail/email_events", "mail/email_summary"]
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
ARTIFACTS = "dagster-dev"


@dataclass(frozen=True)
class Platform:
    server: DagsterServer
    api: DagsterApi
    warehouse: str

    def wait_run(
        self, what: str, job: str, match: Callable[[RunInfo], bool], timeout_s: float
    ) -> RunInfo:
        """The first finished run of ``job`` that ``match``es, once there is one."""

        def finished() -> RunInfo | None:
            return next((r for r in self.api.runs(job) if r.finished and match(r)), None)

        return self.server.wait_for(what, finished, timeout_s)

    def open_warehouse(self) -> Warehouse:
        return Warehouse.open(self.warehouse, create=False, txn_timeout_s=TXN_TIMEOUT_S)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    tmp = tmp_path_factory.mktemp("dagster-dev")
    env = platform_env(dagster_home(tmp / "home"), tmp / "warehouse", **ENV)
    logs = artifacts_dir(ARTIFACTS)
    (logs / "dagster-dev.log").unlink(missing_ok=True)
    port = free_port()
    with DagsterServer(
        {"dagster-dev": dagster_dev_command(port)}, env=env, logs=logs, port=port
    ) as server:
        server.wait_ready()
        yield Platform(server, server.api, env["ACID_WAREHOUSE"])


@pytest.fixture(scope="module")
def materialized(platform: Platform) -> RunInfo:
    """The example platform's materialization, launched from the webserver."""
    run_id = platform.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags())
    run = platform.server.wait_for(
        f"run {run_id} of {PLATFORM_JOB} finished",
        lambda: (r := platform.api.run(run_id)).finished and r or None,
        timeout_s=300,
    )
    assert run.status == "SUCCESS", platform.server.log_tail(200)
    return run


def test_the_materialization_reports_its_metadata_and_checks(
    platform: Platform, materialized: RunInfo
) -> None:
    api = platform.api
    summary = [
        m for m in api.materializations("mail/email_summary") if m["run_id"] == materialized.run_id
    ]
    assert sorted(m["partition"] for m in summary) == DAYS  # one run over the three days
    for m in summary:
        assert m["operation"] == "merge" and m["write_id"] == 1
        order = [step["source_rows"] for step in m["merge_order"]]
        assert order == sorted(order) and len(order) == 6  # smallest source first
        assert m["delta_count"] > 10 and m["dagster/row_count"] == m["rows_inserted"]
    (sales, *_) = api.materializations("retail/sales")
    assert sales["operation"] == "overwrite" and sales["partition_range_row_count"] == 600
    assert "dagster/partition_row_count" not in sales  # each day holds 200, not the range's 600
    (stores, *_) = api.materializations("retail/stores")
    assert (stores["rows_inserted"], stores["dagster/row_count"]) == (6, 6)

    for table in TABLES:
        checks = api.checks(table)
        assert len(checks) == CHECKS_PER_TABLE, (table, sorted(checks))
        blocking = {c.name: (c.status, c.severity) for c in checks.values() if c.blocking}
        assert set(blocking.values()) == {("SUCCEEDED", "ERROR")}, (table, blocking)
        assert len(blocking) == BLOCKING_CHECKS
    # the run's own evaluation (compactions evaluate it again later: see the next test)
    (upkeep,) = [
        e
        for e in api.check_executions("mail/email_summary", "deltas_below_threshold")
        if e.run_id == materialized.run_id
    ]
    assert (upkeep.status, upkeep.severity) == ("FAILED", "WARN")  # 13 deltas > threshold 10
    assert upkeep.description and "threshold 10" in upkeep.description


def test_compactions_are_reported_on_the_table_asset_and_turn_its_warn_to_pass(
    platform: Platform, materialized: RunInfo
) -> None:
    """The summary's 13 deltas per day make its WARN check fail in the materialization run; the
    compaction sensor's runs compact each day, observe the compaction on the table's asset and
    evaluate its health checks again: the last one passes."""
    api = platform.api

    def passed() -> str | None:
        latest = api.check_executions("mail/email_summary", "deltas_below_threshold", 1)
        if latest and latest[0].status == "SUCCEEDED" and latest[0].run_id != materialized.run_id:
            return latest[0].run_id
        return None

    run_id = platform.server.wait_for("the summary's WARN check passing", passed, 300)
    run = api.run(run_id)
    assert run.job == "acid_compaction" and run.tags["acid/table"] == "mail.email_summary"
    assert run.tags["dagster/sensor_name"] == "acid_compaction_sensor"
    observed = [
        o for o in api.observations("mail/email_summary", 25) if "compaction/compaction_id" in o
    ]
    assert {o["compaction/partition"] for o in observed} == {f"ds={d}" for d in DAYS}
    for o in observed:
        assert o["compaction/table"] == "mail.email_summary"
        assert o["compaction/deltas_before"] + o["compaction/delete_deltas_before"] > 10
        assert o["compaction/deltas_after"] + o["compaction/delete_deltas_after"] <= 2
        assert o["compaction/bytes_before"] > 0 and o["compaction/duration_s"] >= 0
        assert o["compaction/worker"]


def test_eleven_deltas_are_compacted_by_the_run_the_sensor_requests(
    platform: Platform, materialized: RunInfo
) -> None:
    with platform.open_warehouse() as wh:
        table = wh.create_table("deltas", [("id", "int")])
        for i in range(11):
            table.insert([{"id": i}])
        location = os.path.join(wh.root, "deltas")
    assert len(acid_dirs(location)) == 11

    run = platform.wait_run(
        "a compaction run of default.deltas",
        "acid_compaction",
        lambda r: r.tags.get("acid/table") == "default.deltas",
        300,
    )
    assert run.status == "SUCCESS", platform.server.log_tail(200)
    assert run.tags["dagster/sensor_name"] == "acid_compaction_sensor"
    assert run.tags["dagster/run_key"] == "default.deltas::11"
    ticks = platform.api.sensor_ticks("acid_compaction_sensor")
    assert any(run.run_id in t.run_ids and t.status == "SUCCESS" for t in ticks)
    compacted = platform.api.output_metadata(run.run_id)["acid_compact"]
    assert compacted["table"] == "default.deltas" and compacted["claimed"] is True
    assert compacted["rows_written"] == 11
    (output,) = compacted["output_dirs"]
    assert os.path.basename(output) in acid_dirs(location)
    with platform.open_warehouse() as wh:
        ids = wh.table("deltas").scan(["id"]).to_arrow().column("id").to_pylist()
        assert sorted(ids) == list(range(11))


def test_the_platform_reaps_a_client_killed_with_kill_9(
    platform: Platform, materialized: RunInfo
) -> None:
    with platform.open_warehouse() as wh:
        wh.create_table("held", [("id", "int")])
    command = [sys.executable, "-m", "acid_platform_tests.orchestration.procs", "hold-lock"]
    client = subprocess.Popen(
        [*command, platform.warehouse, "held", str(TXN_TIMEOUT_S)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = client.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("ready "), line
        txn_id = int(line.split()[1])
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()

    with platform.open_warehouse() as wh:
        assert [r["Transaction ID"] for r in wh.metastore.show_locks()] == [txn_id]
        # The platform's maintenance reaps it once its time-out passes: the housekeeping
        # sensor's run, or the compaction sensor's initiator, which reaps before it decides.
        deadline = time.monotonic() + TXN_TIMEOUT_S + 180
        while [r for r in wh.metastore.show_locks() if r["Transaction ID"] == txn_id]:
            assert time.monotonic() < deadline, platform.server.log_tail(200)
            time.sleep(0.5)  # polling the metastore for the platform's work, not a result
        # aborted; an aborted txn that wrote nothing may be purged in the same pass
        with contextlib.suppress(NoSuchTxnError):
            assert wh.metastore.get_txn_state(txn_id) == TxnState.ABORTED
        wh.conf["acid.lock.wait.timeout.s"] = "0"
        assert wh.table("held").insert([{"id": 1}]).rows_inserted == 1  # the table is free


def test_the_cleaner_schedules_run_deletes_what_compaction_made_obsolete(
    platform: Platform, materialized: RunInfo
) -> None:
    location = os.path.join(platform.warehouse, "deltas")
    if not os.path.isdir(location):
        pytest.fail("needs test_eleven_deltas_are_compacted_by_the_run_the_sensor_requests")

    def removed_from_deltas(run: RunInfo) -> list[str]:
        removed = platform.api.output_metadata(run.run_id)["acid_clean"]["removed"]
        return [p for p in removed if p.startswith(location + os.sep)]

    def cleaned() -> tuple[RunInfo, list[str]] | None:
        if len(acid_dirs(location)) > 1:
            return None  # not yet
        runs = platform.api.runs("acid_cleaner", {"dagster/schedule_name": "acid_cleaner_schedule"})
        done = [(r, removed_from_deltas(r)) for r in runs if r.status == "SUCCESS"]
        return next(((r, paths) for r, paths in done if paths), None)

    run, removed = platform.server.wait_for(
        "the cleaner schedule's run cleaning default.deltas", cleaned, 240
    )
    assert len(removed) == 11 and run.tags["acid/removed_paths"] != "0"
    (kept,) = acid_dirs(location)
    assert not any(os.path.basename(p) == kept for p in removed)
    ticks = platform.api.schedule_ticks("acid_cleaner_schedule")
    assert any(run.run_id in t.run_ids for t in ticks)
    assert not [r for r in platform.api.runs("acid_cleaner") if r.status == "FAILURE"]


def test_the_asset_page_shows_the_plotted_metadata_and_the_check_results(
    platform: Platform, materialized: RunInfo
) -> None:
    # no "Join the Dagster community" dialog: dagster.yaml turns it off (nux.enabled: false)
    shots = artifacts_dir(ARTIFACTS)
    with headless_chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 2200})
        page.goto(f"{platform.server.url}/assets/mail/email_summary")
        expect(page.get_by_text("Latest check results")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Plots").click()
        page.get_by_role("button", name="Events").click()  # plotted over the materializations
        for label in ("rows_inserted", "rows_updated", "delta_count", "delete_ratio"):
            expect(page.get_by_text(label, exact=True)).to_be_visible(timeout=60_000)
        expect(page.locator("canvas").first).to_be_visible()
        assert page.locator("canvas").count() >= 10
        overview = screenshot(page, shots / "asset-overview-plots.png", "rows_inserted")

        page.goto(f"{platform.server.url}/assets/mail/email_summary?view=checks")
        expect(page.get_by_text(f"Checks ({CHECKS_PER_TABLE})")).to_be_visible(timeout=60_000)
        for name in ("deltas_below_threshold", "unique_row_ids", "row_count_matches_stats"):
            expect(page.get_by_text(name, exact=True).first).to_be_visible()
        # the WARN check passed after the compactions (the test before this one waited for it)
        expect(page.get_by_text("Succeeded", exact=True).first).to_be_visible()
        assert page.get_by_text("Succeeded", exact=True).count() >= CHECKS_PER_TABLE
        checks = screenshot(page, shots / "asset-checks.png", "deltas_below_threshold")
    print(f"screenshots: {overview} {checks}")


def screenshot(page: Page, path: Path, anchor: str) -> Path:
    """The page, scrolled to ``anchor``'s first occurrence, saved at ``path``."""
    page.get_by_text(anchor, exact=True).first.scroll_into_view_if_needed()
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
    return path
