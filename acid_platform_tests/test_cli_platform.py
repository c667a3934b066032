"""``acid platform materialize``: the README's first command materializes the example platform
in one Dagster run and prints what happened (assets, write ids, rows, checks, the layout of one
partition); the run is on the instance of DAGSTER_HOME, where ``dagster dev`` finds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance
from typer.testing import CliRunner

from acid_platform.cli import app
from acid_platform_tests.topology import ROOT, platform_env


@pytest.mark.slow
def test_materialize_prints_what_the_run_did(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    env = platform_env(home, tmp_path / "wh", COLUMNS="100")
    shown = ["--layout", "retail.sales:ds=2024-01-01"]
    result = CliRunner().invoke(app, ["platform", "materialize", *shown], env=env)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "SUCCESS" in text and "days 2024-01-01 to 2024-01-03" in text
    assets = text[text.index("assets (") : text.index("checks")]
    rows = {
        cells[0]: cells[1:]
        for line in assets.splitlines()
        if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) > 1
    }
    assert rows["retail/sales"] == ["overwrite", "1", "+600 ~0 -0", "600"]
    assert rows["retail/sales_restatement"][:2] == ["update", "2"]
    assert rows["privacy/forget_customers"][:2] == ["delete", "3,2"]
    assert rows["mail/email_summary"][:2] == ["merge", "1"]
    assert rows["retail/stores"][:2] == ["merge", "1"]
    checks = text[text.index("checks") :]
    assert "retail/stores" in checks and "deltas_below_threshold (WARN)" in checks
    layout = text[text.index("layout of retail.sales ds=2024-01-01") :]
    for name in ("base_0000001/", "delta_0000002_0000002_0000/", "delete_delta_0000003"):
        assert name in layout
    with DagsterInstance.from_config(str(home)) as instance:
        event = instance.get_latest_materialization_event(AssetKey(["mail", "email_summary"]))
        assert event is not None


def test_a_failed_run_exits_1(tmp_path: Path) -> None:
    wall = tmp_path / "file"
    wall.write_text("not a directory")
    env = platform_env(tmp_path / "home", wall / "wh")
    (tmp_path / "home").mkdir()
    result = CliRunner().invoke(app, ["platform", "materialize"], env=env)
    assert result.exit_code == 1
    assert "FAILURE" in result.output
