"""Issue 30, item 1: ``pip install acid_platform`` with no extra is the core — format,
metastore, table, compaction, SQL on the embedded engine, streaming and the ``acid`` command —
and installs neither PySpark nor Dagster; the optional parts say which extra they need.

A virtual environment of its own (no packages of this one), the project installed into it from
this checkout as a user would, then a script and the CLI run there on a fresh warehouse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acid_platform_tests.topology import ROOT

pytestmark = pytest.mark.slow

SCRIPT = r'''
import json, os
from acid_platform import Warehouse
from acid_platform.format import ValidWriteIdList, read_acid
from acid_platform.errors import MissingExtraError

out = {}
with Warehouse.open("wh") as wh:
    wh.sql("""CREATE TABLE t (id int, v string) STORED AS ORC
              TBLPROPERTIES ('transactional'='true')""")
    wh.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    wh.sql("UPDATE t SET v = 'B' WHERE id = 2")
    wh.sql("DELETE FROM t WHERE id = 3")
    wh.sql("MERGE INTO t USING (SELECT 4 AS id, 'd' AS v) s ON t.id = s.id "
           "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)")
    out["rows"] = wh.sql("SELECT id, v FROM t ORDER BY id").to_pylist()
    wh.sql("ALTER TABLE t COMPACT 'major' AND WAIT")
    out["after_compaction"] = wh.sql("SELECT id, v FROM t ORDER BY id").to_pylist()
    out["dirs"] = sorted(p for p in os.listdir("wh/t") if not p.startswith("."))
rows = read_acid("wh/t", ValidWriteIdList.parse("default.t:4:9223372036854775807::"),
                 columns=["id", "v"])
out["read_acid"] = sorted(rows.to_pylist(), key=lambda r: r["id"])
for module in ("acid_platform.orchestration", "acid_platform.engines.spark"):
    try:
        __import__(module)
    except MissingExtraError as exc:
        out[module] = str(exc)
try:
    Warehouse.open("wh2", "postgresql://nobody@127.0.0.1:1/none")
except MissingExtraError as exc:
    out["postgres"] = str(exc)
print(json.dumps(out))
'''


def test_the_core_installs_and_runs_without_spark_or_dagster(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run(
        [py, "-m", "pip", "install", "-q", str(ROOT)], env=env, capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr[-3000:]
    listed = subprocess.run(
        [py, "-m", "pip", "list", "--format", "json"], env=env, capture_output=True, text=True
    )
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "acid_platform" in names or "acid-platform" in names
    assert not names & {"pyspark", "dagster", "dagster-webserver", "dagster-pyspark", "psycopg"}

    done = subprocess.run([py, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 4, "v": "d"}]
    assert out["rows"] == out["after_compaction"] == out["read_acid"] == expected
    assert any(d.startswith("base_0000004") for d in out["dirs"]), out["dirs"]
    assert out["acid_platform.orchestration"] == (
        "acid_platform.orchestration needs dagster, which is not installed: "
        "pip install 'acid_platform[dagster]'"
    )
    assert "pip install 'acid_platform[spark]'" in out["acid_platform.engines.spark"]
    assert "pip install 'acid_platform[postgres]'" in out["postgres"]

    acid = str(venv / "bin" / "acid")
    cli = subprocess.run(
        [acid, "sql", "-w", "wh", "-e", "SELECT count(*) AS n FROM t", "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == [{"n": 3}]
    materialize = subprocess.run(
        [acid, "platform", "materialize"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert materialize.returncode == 1
    assert "pip install 'acid_platform[dagster]'" in materialize.stderr + materialize.stdout
    assert "Traceback" not in materialize.stderr
