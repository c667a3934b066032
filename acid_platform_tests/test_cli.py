"""The ``acid`` command line: one real subprocess, the rest through typer's CliRunner."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform.cli import app
from acid_platform.cli.demo import next_command

SEED_000 = """
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
INSERT INTO employee VALUES
(1, 'Jerry', 5000),
(2, 'Tom',   8000),
(3, 'Kate',  6000);
UPDATE employee SET salary = 7000 WHERE id = 2;
SELECT row__id, id, name, salary FROM employee ORDER BY id;
"""


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def wh(runner: CliRunner, tmp_path: Path) -> str:
    """A warehouse made by ``acid init``."""
    path = str(tmp_path / "wh")
    result = runner.invoke(app, ["init", path])
    assert result.exit_code == 0, result.output
    return path


def test_acid_sql_in_a_real_process(tmp_path: Path) -> None:
    exe = shutil.which("acid", path=os.path.dirname(sys.executable))
    command = [exe] if exe else [sys.executable, "-m", "acid_platform.cli"]
    warehouse = tmp_path / "wh"
    init = subprocess.run(
        [*command, "init", str(warehouse)], capture_output=True, text=True, timeout=120, check=False
    )
    assert init.returncode == 0 and f"warehouse created at {warehouse}" in init.stderr, init.stderr
    done = subprocess.run(
        [*command, "sql", "-w", str(warehouse), "--format", "json", "-e", SEED_000],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {
            "row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 0},
            "id": 1,
            "name": "Jerry",
            "salary": 5000,
        },
        {
            "row__id": {"writeid": 2, "bucketid": 536870912, "rowid": 0},
            "id": 2,
            "name": "Tom",
            "salary": 7000,
        },
        {
            "row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 2},
            "id": 3,
            "name": "Kate",
            "salary": 6000,
        },
    ]
    assert "delete_delta_0000002_0000002_0000" in done.stderr
    assert sorted(p.name for p in (warehouse / "employee").iterdir()) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]


def test_script_file_and_csv(runner: CliRunner, wh: str, tmp_path: Path) -> None:
    script = tmp_path / "seed.sql"
    script.write_text(SEED_000, encoding="utf-8")
    result = runner.invoke(app, ["sql", "-w", wh, "-f", str(script), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["row__id", "id", "name", "salary"]
    assert rows[1] == ['{"writeid":1,"bucketid":536870912,"rowid":0}', "1", "Jerry", "5000"]


def test_seed_000_merge_through_the_cli(runner: CliRunner, wh: str, tmp_path: Path) -> None:
    warehouse = Path(wh)
    script = tmp_path / "merge.sql"
    script.write_text(
        """
        CREATE TABLE employee (id int, name string, salary int)
        STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
        INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000);
        CREATE TABLE employee_update (id int, name string, salary int);
        INSERT INTO employee_update VALUES (2, 'Tom', 7000), (4, 'Mary', 9000);
        MERGE INTO employee AS a
        USING employee_update AS b ON a.id = b.id
        WHEN MATCHED THEN UPDATE SET salary = b.salary
        WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary);
        SELECT row__id, id, name, salary FROM employee ORDER BY id;
        """,
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["sql", "-w", str(warehouse), "-f", str(script), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert [(r["row__id"], r["id"], r["salary"]) for r in json.loads(result.stdout)] == [
        ({"writeid": 1, "bucketid": 536870912, "rowid": 0}, 1, 5000),
        ({"writeid": 2, "bucketid": 536870913, "rowid": 0}, 2, 7000),
        ({"writeid": 1, "bucketid": 536870912, "rowid": 2}, 3, 6000),
        ({"writeid": 2, "bucketid": 536870912, "rowid": 0}, 4, 9000),
    ]
    assert sorted(p.name for p in (warehouse / "employee").iterdir()) == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]


def test_table_output(runner: CliRunner, wh: str) -> None:
    result = runner.invoke(app, ["sql", "-w", wh, "-e", "SELECT 1 AS one, NULL AS nothing"])
    assert result.exit_code == 0, result.output
    assert "one" in result.stdout and "nothing" in result.stdout and "NULL" in result.stdout


@pytest.mark.parametrize("output", ["json", "csv", "table"])
def test_query_results_print_as_they_stream(
    runner: CliRunner, wh: str, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    """Rows are printed page by page as the query streams; JSON and CSV are exactly what the
    whole result prints, a table longer than a page prints one box per page."""
    monkeypatch.setattr("acid_platform.cli.output.PAGE_ROWS", 2)
    setup = (
        "CREATE TABLE t (id int, name string) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true');"
        "INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, 'c'), (4, 'd'), (5, 'e');"
    )
    assert runner.invoke(app, ["sql", "-w", wh, "-e", setup]).exit_code == 0
    query = "SELECT id, name FROM t WHERE id > 1 ORDER BY id"
    result = runner.invoke(app, ["sql", "-w", wh, "-e", query, "--format", output])
    assert result.exit_code == 0, result.output
    rows = [(2, None), (3, "c"), (4, "d"), (5, "e")]
    if output == "json":
        assert result.stdout == json.dumps([{"id": i, "name": n} for i, n in rows]) + "\n"
    elif output == "csv":
        assert list(csv.reader(io.StringIO(result.stdout))) == [
            ["id", "name"],
            *([str(i), "NULL" if n is None else n] for i, n in rows),
        ]
    else:
        assert result.stdout.count("┃ id") == 2  # two pages of two rows, each with its header
        assert "4 row(s)" in result.stderr
    empty = runner.invoke(
        app, ["sql", "-w", wh, "-e", "SELECT id FROM t WHERE id > 9", "--format", output]
    )
    assert empty.exit_code == 0, empty.output
    assert {"json": "[]\n", "csv": "id\n"}.get(output, empty.stdout) == empty.stdout


def test_syntax_error_exits_1_with_position_and_no_traceback(runner: CliRunner, wh: str) -> None:
    result = runner.invoke(app, ["sql", "-w", wh, "-e", "SELECT 1;\nSELECT a FROM t WHERE;"])
    assert result.exit_code == 1
    assert "error: line 2, column 17" in result.stderr
    assert "SELECT a FROM t WHERE;" in result.stderr
    assert "Traceback" not in result.output


def test_user_error_is_one_red_line(runner: CliRunner, wh: str) -> None:
    result = runner.invoke(
        app, ["sql", "-w", wh, "-e", "UPDATE people SET salary = 6000 WHERE id = 2"]
    )
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert (
        len(lines) == 1
        and lines[0].startswith("error: NoSuchObjectError:")
        and "people" in lines[0]
    )


def test_takes_at_most_one_of_execute_and_file(runner: CliRunner, wh: str) -> None:
    result = runner.invoke(app, ["sql", "-w", wh, "-e", "SELECT 1", "-f", "-"])
    assert result.exit_code == 2
    # neither: the shell, reading statements from stdin (test_cli_shell.py)
    result = runner.invoke(app, ["sql", "-w", wh, "--format", "csv"], input="SELECT 1 AS x;\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["x", "1"]


def test_show_transactions_and_locks(runner: CliRunner, wh: str) -> None:
    warehouse = wh
    result = runner.invoke(app, ["show", "transactions", "-w", warehouse, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "Transaction ID,Transaction State,Started Time,Last Heartbeat Time,User,Hostname"
    ]
    result = runner.invoke(app, ["show", "locks", "-w", warehouse, "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_open_transaction_at_exit_is_rolled_back(runner: CliRunner, wh: str) -> None:
    warehouse = wh
    script = "CREATE TABLE t (a int); BEGIN; INSERT INTO t VALUES (1);"
    result = runner.invoke(app, ["sql", "-w", warehouse, "-e", script])
    assert result.exit_code == 0 and "rolled back" in result.stderr
    result = runner.invoke(
        app, ["sql", "-w", warehouse, "-e", "SELECT count(*) AS n FROM t", "--format", "json"]
    )
    assert json.loads(result.stdout) == [{"n": 0}]


def test_compact_show_compactions_clean_and_initiate(runner: CliRunner, wh: str) -> None:
    warehouse = wh
    script = (
        "CREATE TABLE t (a int) PARTITIONED BY (ds string); "
        "INSERT INTO t PARTITION (ds='x') VALUES (1), (2); UPDATE t SET a = 3 WHERE a = 2"
    )
    assert runner.invoke(app, ["sql", "-w", warehouse, "-e", script]).exit_code == 0
    result = runner.invoke(
        app, ["compact", "t", "-w", warehouse, "-p", "ds='x'", "--major", "--wait"]
    )
    assert result.exit_code == 0, result.output
    assert "major compaction of default.t done" in result.stderr
    # SHOW COMPACTIONS has 20 columns (Hive 4.0's): on an 80-column terminal each row prints as a record.
    result = runner.invoke(app, ["show", "compactions", "-w", warehouse], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "-[ RECORD 1 ]-" in result.stdout
    record = dict(line.split() for line in result.stdout.splitlines()[1:6])
    assert record == {
        "CompactionId": "1",
        "Database": "default",
        "Table": "t",
        "Partition": "ds=x",
        "Type": "MAJOR",
    }
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    result = runner.invoke(app, ["clean", "-w", warehouse])
    assert result.exit_code == 0, result.output
    assert "compaction 1 of default.t ds=x: cleaned" in result.stderr
    assert "removed 3 path(s)" in result.stderr  # the delta, the delete delta, the new delta
    assert result.stderr.count("   removed ") == 3
    assert "nothing to clean" in runner.invoke(app, ["clean", "-w", warehouse]).stderr
    result = runner.invoke(app, ["initiate", "-w", warehouse])
    assert result.exit_code == 0 and "OK" in result.stderr


def test_demo(runner: CliRunner, tmp_path: Path) -> None:
    warehouse = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "-w", str(warehouse)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in (
        "delta_0000001_0000001_0000",
        "delete_delta_0000002_0000002_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delete_delta_0000003_0000003_0001",
        "delta_0000003_0000003_0001",
    ):
        assert name in result.stdout
        assert (warehouse / "employee" / name).is_dir()
    assert "reader's snapshot" in result.stdout and "latest snapshot" in result.stdout
    assert (
        '{"writeid":3,"bucketid":536870912,"rowid":0}' in result.stdout
    )  # Mary, MERGE statement 0
    # status lines go with the tables, to stdout
    assert "OK table default.employee created" in result.stdout
    assert "OK merged into default.employee (1 inserted, 1 updated, 0 deleted)" in result.stdout
    assert "3 row(s)" in result.stdout
    assert result.stderr == ""
    rerun = runner.invoke(app, ["demo", "-w", str(warehouse)])
    assert rerun.exit_code == 1 and "use another -w" in rerun.stderr


def test_the_demo_suggests_a_command_that_runs_in_a_new_shell(
    runner: CliRunner, tmp_path: Path
) -> None:
    warehouse = tmp_path / "demo"
    # the demo runs where `acid` is not on the PATH (as `bash scripts/demo` runs .venv/bin/acid)
    bare = {"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": None, "COLUMNS": "300"}
    result = runner.invoke(app, ["demo", "-w", str(warehouse)], env=bare)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-2].startswith(f"warehouse left at {warehouse}; look again with:")
    command = lines[-1]
    assert " sql -w " in command and str(warehouse) in command
    # a new shell: a plain PATH, no activated venv, in another directory
    shell_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "300"}
    if "PYTHONPATH" in os.environ:  # the checkout under test, when it is not the installed one
        shell_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        env=shell_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Mary" in done.stdout and "4 row(s)" in done.stderr


def test_next_command_names_acid_only_when_a_new_shell_finds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = Path(sys.executable).parent
    ours = bin_dir / "acid"
    if not ours.is_file():  # not installed as a script: the module through this interpreter
        assert next_command("/w").startswith(f"{sys.executable} -m acid_platform.cli sql -w /w")
        return
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert (
        next_command("/w")
        == "acid sql -w /w -e 'SELECT row__id, id, name, salary FROM employee ORDER BY id'"
    )
    monkeypatch.setenv("VIRTUAL_ENV", str(bin_dir.parent))  # on the PATH only while activated
    assert next_command("/w").startswith(f"{ours} sql -w /w -e ")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("VIRTUAL_ENV")
    assert next_command("/w", "sqlite:////m.db").startswith(
        f"{ours} sql -w /w --metastore-url sqlite:////m.db -e "
    )


@pytest.mark.parametrize(
    "args",
    [
        ["sql", "-e", "SELECT 1"],
        ["show", "transactions"],
        ["compact", "t"],
        ["clean"],
        ["initiate"],
        ["worker"],
    ],
)
def test_a_path_without_a_warehouse_is_refused_not_created(
    runner: CliRunner, tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "typo"
    result = runner.invoke(app, [*args, "-w", str(missing)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: NoSuchWarehouseError: no warehouse at {missing}")
    assert f"acid init {missing}" in result.stderr
    assert not missing.exists()


def test_init_creates_a_warehouse_once(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "wh"
    result = runner.invoke(app, ["init", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == f"OK warehouse created at {path}"
    assert (path / "_metastore.db").is_file()
    again = runner.invoke(app, ["init", str(path)])
    assert again.exit_code == 0 and "already exists" in again.stderr
    result = runner.invoke(app, ["sql", "-w", str(path), "-e", "SHOW DATABASES", "--format", "csv"])
    assert result.exit_code == 0 and result.stdout.splitlines() == ["database_name", "default"]
    # one metastore serves one warehouse
    url = f"sqlite:///{path / '_metastore.db'}"
    other = runner.invoke(app, ["init", str(tmp_path / "other"), "--metastore-url", url])
    assert other.exit_code == 1 and f"holds the warehouse at {path}" in other.stderr
    assert not (tmp_path / "other").exists()


def test_hive_builtins_through_acid_sql(runner: CliRunner, wh: str) -> None:
    """Issue 14 item 9 through ``acid sql``: Hive's values (a map prints as its key/value pairs)."""
    query = (
        "SELECT date_format(DATE '2024-01-07', 'u') AS dow,"
        " unix_timestamp('2024-01-01 00:00:00') AS secs, size(map(1, 2)) AS n,"
        " isnull(NULL) AS i, map(CAST(NULL AS bigint), CAST(NULL AS bigint)) AS m"
    )
    result = runner.invoke(app, ["sql", "-w", wh, "--format", "json", "-e", query])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"dow": "7", "secs": 1704067200, "n": 1, "i": True, "m": {}}  # Hive's {}, not []
    ]
    result = runner.invoke(app, ["sql", "-w", wh, "--format", "csv", "-e", query])
    assert result.stdout.splitlines()[1] == "7,1704067200,1,true,{}"
