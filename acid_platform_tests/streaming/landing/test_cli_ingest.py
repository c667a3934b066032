"""``acid ingest``: load landing files from the shell, each exactly once."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app


def test_acid_ingest_loads_once_and_refuses_a_bad_file(tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(tmp_path / "wh")
    with Warehouse.open(root) as wh:
        wh.create_table("t", [("id", "int"), ("name", "string")])
    good = tmp_path / "a.csv"
    good.write_text("id,name\n1,a\n2,b\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 3, "name": "c"}\n{oops\n')
    args = ["ingest", str(good), "--table", "t", "-w", root]

    first = runner.invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    result = json.loads(first.stdout)
    assert (result["rows"], result["skipped"], result["write_ids"]) == (2, False, [1])
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "nothing to load" in again.output
    assert "committed by txnid:1 already" in again.output
    failed = runner.invoke(app, ["ingest", str(bad), "-t", "t", "-w", root])
    assert failed.exit_code == 1
    assert (
        "LandingFileError" in failed.output and "bad.jsonl does not parse as json" in failed.output
    )
    assert "nothing of it written" in failed.output

    with Warehouse.open(root, create=False) as wh:
        assert sorted(r["id"] for r in wh.table("t").scan().to_arrow().to_pylist()) == [1, 2]
