"""``acid platform materialize``: the README's first command materializes the example platform
in one Dagster run and prints what happened (a line as each step starts and ends, then assets,
write ids, rows, checks, the layout of one partition); the run is on the instance of
DAGSTER_HOME, where ``dagster dev`` finds it. It runs the code locations the project's
``workspace.yaml`` names, so your own module once you name it there; the process's standard
error (Spark's JVM, Dagster's log lines) goes to a log file the summary names; the closing hints
are command lines a new shell runs as printed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.cli.materialize import main_job, main_keys
from acid_platform.cli.progress import stderr_to
from acid_platform.cli.workspace import WorkspaceError, workspace_locations
from acid_platform_tests.dagster_server import DagsterServer
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import ROOT, platform_env
from acid_platform_tests.venvs import fresh_venv

#: A step's end line: ``[  1.2s] ✓ retail/sales  2024-01-01…2024-01-03  +600 ~0 -0  600 rows  0.07s``.
END_LINE = r"^\[ *\d+\.\ds\] ✓ {asset}  (.*  )?{what}.*  \d+\.\d\ds$"


def ended(text: str, asset: str, what: str) -> bool:
    """Whether ``text`` has the end line of ``asset``'s step, with ``what`` in it."""
    pattern = END_LINE.format(asset=re.escape(asset), what=re.escape(what))
    return re.search(pattern, text, re.MULTILINE) is not None


def acid_by_path() -> str:
    """How the hints name this installation's ``acid`` where a new shell's PATH has not it."""
    ours = Path(sys.executable).parent / "acid"
    return str(ours) if ours.is_file() else f"{sys.executable} -m acid_platform.cli"


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
    tables = text.index("assets (")  # the summary, after the steps' lines
    assets = text[tables : text.index("\nchecks", tables)]
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
    # each step as it starts and ends: asset, partitions, rows, seconds
    assert "▶ retail/sales  2024-01-01…2024-01-03" in text
    assert ended(text, "retail/sales", "2024-01-01…2024-01-03  +600 ~0 -0  600 rows")
    assert ended(text, "privacy/forget_customers", "+0 ~0 -91")
    assert ended(text, "mail/email_summary", "not passed: deltas_below_threshold (WARN)")
    (log,) = re.findall(r"^Spark's and Dagster's log lines: (\S+)$", text, re.MULTILINE)
    assert Path(log).parent == home / "logs" and Path(log).is_file()
    checks = text[text.index("\nchecks", tables) :]
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


#: A user's code location: one asset the ACID IO manager writes to ``mine.greetings``.
USER_MODULE = """
import dagster as dg
import pyarrow as pa

from acid_platform.orchestration import AcidWarehouseResource, acid_definitions


@dg.asset(key=["mine", "greetings"], metadata={"write_mode": "overwrite"})
def greetings() -> pa.Table:
    return pa.table({"id": pa.array([1, 2, 3], pa.int64()), "word": ["hi", "hello", "hey"]})


defs = acid_definitions(assets=[greetings], warehouse=AcidWarehouseResource(warehouse=WAREHOUSE))
"""
#: Another, as a Python file: an asset of no table.
OTHER_FILE = """
import dagster as dg


@dg.asset(key=["other", "count"])
def count() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"dagster/row_count": 7})


defs = dg.Definitions(assets=[count])
"""


def user_project(root: Path, module: str, warehouse: Path, *, other: bool = False) -> Path:
    """A project whose ``workspace.yaml`` names ``src/<module>.py`` (and ``jobs/counts_b.py``)."""
    (root / "src").mkdir(parents=True)
    code = USER_MODULE.replace("WAREHOUSE", repr(str(warehouse)))
    (root / "src" / f"{module}.py").write_text(code)
    workspace = f"""
        load_from:
          - python_module:
              module_name: {module}
              location_name: mine
              working_directory: src
        """
    if other:
        (root / "jobs").mkdir()
        (root / "jobs" / "counts_b.py").write_text(OTHER_FILE)
        workspace += "  - python_file: jobs/counts_b.py\n"
    (root / "workspace.yaml").write_text(textwrap.dedent(workspace))
    return root


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """sys.path as it was after the test (loading a workspace puts its directories first)."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_materialize_runs_the_code_location_workspace_yaml_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_imports: None
) -> None:
    # a warehouse path longer than a line: the hint must still be one line when piped
    warehouse = tmp_path / ("a-warehouse-whose-path-is-longer-than-a-line-" * 2 + "wh")
    project = user_project(tmp_path / "project", "mine_defs_a", warehouse)
    monkeypatch.chdir(project)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    # a new shell: acid's directory not on the PATH, no environment activated; a pipe (80 cols)
    env = {"DAGSTER_HOME": str(home), "PATH": "/usr/bin:/bin", "VIRTUAL_ENV": None}
    result = CliRunner().invoke(app, ["platform", "materialize"], env={**env, "COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "code       mine_defs_a (location mine), from workspace.yaml" in text
    assert "▶ mine/greetings" in text
    assert ended(text, "mine/greetings", "+3 ~0 -0  3 rows")
    assert ended(text, "mine/greetings", "checks passed: unique_row_ids")
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_latest_materialization_event(AssetKey(["mine", "greetings"]))
    with Warehouse.open(str(warehouse), create=False) as wh:
        assert wh.table("mine.greetings").scan().to_arrow().num_rows == 3
    # the hints: whole lines, acid and dagster by their full path, the settings as variables
    hints = text[text.index("─ next ─") :].splitlines()[1:]
    query = f"{acid_by_path()} sql -w {warehouse} -e 'SELECT * FROM mine.greetings LIMIT 10'"
    assert f"  {query}" in hints, hints
    dagster = Path(sys.executable).parent / "dagster"
    serve = f"{dagster if dagster.is_file() else 'dagster'} dev -w workspace.yaml"
    ui = f"cd {project} && DAGSTER_HOME={home} {serve}"
    assert f"  {ui}" in hints, hints
    assert "scripts/platform" not in text  # not this repository's project


@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")  # main_job() unfiltered
def test_several_code_locations_run_in_one_run_or_one_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_imports: None
) -> None:
    project = user_project(tmp_path / "p", "mine_defs_b", tmp_path / "wh", other=True)
    monkeypatch.chdir(project)
    env = {"DAGSTER_HOME": None, "COLUMNS": "120"}  # an ephemeral instance
    result = CliRunner().invoke(app, ["platform", "materialize"], env=env)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "mine_defs_b (location mine), " in text and "counts_b.py (location counts_b)" in text
    assert ended(text, "mine/greetings", "3 rows") and ended(text, "other/count", "7 rows")
    assert len(re.findall(r"^run \S+: SUCCESS", text, re.MULTILINE)) == 1  # ONE run
    (log,) = re.findall(r"^Spark's and Dagster's log lines: (\S+)$", text, re.MULTILINE)
    assert Path(log).is_file()  # in the temporary directory: there is no DAGSTER_HOME
    Path(log).unlink()
    only = main_job(project, location="counts_b")
    assert only.asset_keys is None and only.job_name is None
    assert {k.to_user_string() for k in only.definitions.resolve_all_asset_keys()} == {
        "other/count"
    }
    named = main_job(project, module="mine_defs_b")  # --module: that module, not the workspace
    assert named.serve == ("dagster", "dev", "-m", "mine_defs_b", "-d", "src")
    refused = CliRunner().invoke(app, ["platform", "materialize", "--location", "nope"], env=env)
    assert refused.exit_code == 2 and "names no code location nope" in refused.output


def test_workspace_entries_are_read_as_dagster_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "workspace.yaml"
    path.write_text(
        textwrap.dedent(
            """
            load_from:
              - python_file: defs/one.py
              - python_file: {relative_path: two.py, attribute: make, working_directory: lib}
              - python_package: pkg
              - python_module: {module_name: a.b, location_name: ab}
            """
        )
    )
    one, two, package, module = workspace_locations(path)
    assert (one.name, one.kind, one.target) == ("one", "python_file", str(tmp_path / "defs/one.py"))
    assert one.working_directory == tmp_path
    assert (two.attribute, two.working_directory) == ("make", tmp_path / "lib")
    assert (package.name, package.kind, package.target) == ("pkg", "python_package", "pkg")
    assert (module.name, module.target) == ("ab", "a.b")
    for bad in ("load_from: []", "load_from:\n  - grpc_server: {host: h, port: 4266}", "[1"):
        path.write_text(bad)
        with pytest.raises(WorkspaceError):
            workspace_locations(path)


def test_the_process_standard_error_goes_to_the_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """What a JVM started inside writes (to the file descriptor it inherits) is in the log."""
    log = tmp_path / "logs" / "run.log"
    with stderr_to(log):
        subprocess.run(["sh", "-c", "echo 'WARN Utils: Your hostname' >&2"], check=True)
        os.write(2, b"WARN DataSourceManager: replaced\n")
        print("to stdout")
    os.write(2, b"after\n")
    captured = capfd.readouterr()
    assert captured.out == "to stdout\n" and captured.err == "after\n"
    assert log.read_text() == "WARN Utils: Your hostname\nWARN DataSourceManager: replaced\n"


#: A new user's shell: the system's PATH (java on it), no environment activated, no settings.
NEW_SHELL_UNSET = ("DAGSTER_HOME", "VIRTUAL_ENV", "PYTHONPATH", "COLUMNS", "ACID_WAREHOUSE",
                   "ACID_METASTORE_URL", "ACID_SPARK_MASTER", "ACID_CONF")  # fmt: skip


def new_shell(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NEW_SHELL_UNSET}
    return env | {"PATH": "/usr/bin:/bin"} | settings


def copy_checkout(root: Path, to: Path) -> None:
    """What a clone of ``root`` as it is now holds: its tracked files and its new ones (not
    ignored), as they are in the working tree; nothing it ignores (no .venv, no .dagster)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = root / name
        if source.is_file() or source.is_symlink():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name, follow_symlinks=False)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")  # main_job() unfiltered
def test_a_new_user_runs_the_readme_first_commands(tmp_path: Path, isolated_imports: None) -> None:
    """The README's set-up from a fresh clone: ``bash scripts/platform`` installs into ./.venv
    (a line per phase, pip's progress) and runs the main job — with Spark — printing a line as
    each step starts and ends, every asset and check of the job named, Spark's start-up lines in
    the log file the summary names and not on the console, and hints a new shell runs as
    printed; ``bash scripts/platform dev`` then serves that run. (The second command, ``bash
    .ci/run``, is the whole suite this test belongs to: not run from inside it.)

    The clone's ./.venv is made first as a fresh environment that sees this one's packages, so
    the install downloads nothing but the build backend (as ``test_new_project`` does)."""
    assert shutil.which("java", path="/usr/bin:/bin"), "the main job's Spark step needs java"
    clone = tmp_path / "clone" / "acid_platform"
    copy_checkout(ROOT, clone)
    fresh_venv(clone / ".venv")
    assert not (clone / ".venv" / "bin" / "acid").exists()  # so the script installs
    env = new_shell(PYTHON=sys.executable)
    done = subprocess.run(
        ["bash", "scripts/platform"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    text, errors = done.stdout, done.stderr
    assert done.returncode == 0, text[-6000:] + errors[-4000:]
    # the install: a line per phase with the seconds since the start, and pip's own lines
    for phase in ("creating ./.venv", "installing .[dagster-spark]", "installed", "running "):
        assert re.search(rf"^scripts/platform \[ *\d+s\] {re.escape(phase)}", text, re.M), text
    assert re.search(r"^Successfully installed .*acid.platform", text, re.M | re.I), text
    where = subprocess.run(
        [".venv/bin/python", "-c", "import acid_platform as a; print(a.__file__)"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(clone)  # the clone's code ran
    # the run: a line as each step of the main job starts and ends, every asset and check named
    expected = main_job(ROOT).definitions
    assets = main_keys(expected)
    assert "retail/store_sales_daily" in {k.to_user_string() for k in assets}  # the Spark step
    for key in assets:
        assert f"▶ {key.to_user_string()}" in text and ended(text, key.to_user_string(), "")
    for check in expected.resolve_asset_graph().asset_check_keys:
        if check.asset_key in assets:
            asset = re.escape(check.asset_key.to_user_string())
            assert re.search(rf"✓ {asset}  .*\b{check.name}\b", text), check
    assert ended(text, "retail/store_sales_daily", "2024-01-01…2024-01-03")
    # Spark's and Dagster's lines: in the log the summary names, not on the console
    (log,) = re.findall(r"^Spark's and Dagster's log lines: (\S+)$", text, re.MULTILINE)
    assert Path(log).parent == clone / ".dagster" / "logs"
    logged = Path(log).read_text()
    assert "Setting default log level" in logged and "WARN DataSourceManager" in logged
    for noise in ("WARN Utils", "WARN DataSourceManager", "log4j", "dagster - WARNING"):
        assert noise not in text and noise not in errors, noise
    # the hints: whole lines (stdout is a pipe, 80 columns), runnable in a new shell as printed
    hints = text[text.index("─ next ─") :].splitlines()[1:]
    acid = clone / ".venv" / "bin" / "acid"
    (query,) = [h.strip() for h in hints if h.strip().startswith(f"{acid} sql -w ")]
    assert "SELECT * FROM " in query
    dagster = clone / ".venv" / "bin" / "dagster"
    ui = f"  cd {clone} && DAGSTER_HOME={clone / '.dagster'} {dagster} dev -w workspace.yaml"
    assert ui in hints, hints
    assert f"  (or: bash {clone / 'scripts/platform'} dev)" in hints
    again = subprocess.run(
        ["bash", "-c", query], cwd=tmp_path, env=new_shell(), capture_output=True, text=True
    )
    assert again.returncode == 0 and "10 row(s)" in again.stderr, again.stderr
    # the third command: the UI on the same instance shows the run
    (run_id,) = re.findall(r"^run (\S+): SUCCESS", text, re.MULTILINE)
    port = free_port()
    unset = [arg for name in NEW_SHELL_UNSET for arg in ("-u", name)]
    command = ["env", *unset, "bash", "scripts/platform", "dev", "-p", str(port)]
    with DagsterServer(
        {"platform-dev": command}, env={"PATH": "/usr/bin:/bin"}, logs=tmp_path / "logs",
        port=port, cwd=clone,
    ) as server:  # fmt: skip
        server.wait_ready(timeout_s=300)
        runs = {r.run_id: r for r in server.api.runs(job="acid_platform")}
        assert runs[run_id].status == "SUCCESS"
