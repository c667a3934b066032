"""The ``acid`` command line against hostile and careless input (issue 13, items 9 and 10).

Names given as options never become statement text (no injection), and what goes wrong around
the warehouse (a file in its place, a read-only mount, a broken or newer metastore, an
unreachable PostgreSQL) is one clear line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.metastore.migrate import HEAD, VERSION_TABLE

TABLE = "CREATE TABLE t (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')"


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    """A warehouse with ``default.t`` holding one row."""
    path = str(tmp_path / "wh")
    for args in (["init", path], ["sql", "-w", path, "-e", f"{TABLE}; INSERT INTO t VALUES (1)"]):
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
    return path


def _rows(wh: str) -> str:
    done = CliRunner().invoke(app, ["sql", "-w", wh, "--format", "csv", "-e", "SELECT a FROM t"])
    assert done.exit_code == 0, done.output
    return done.stdout


def _one_clear_line(result: object, *needles: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 1, output  # type: ignore[attr-defined]
    assert "Traceback" not in output, output
    assert output.startswith("error: "), output
    for needle in needles:
        assert needle in output, output


# --------------------------------------------------------------------------- item 9: injection
@pytest.mark.parametrize(
    "args",
    [
        ["sql", "-d", "default`; DROP TABLE t; --", "-e", "SELECT 1"],
        ["sql", "-d", "default; DROP TABLE t", "-e", "SELECT 1"],
        ["compact", "t COMPACT 'major'; DROP TABLE t; --"],
        ["compact", "t; DROP TABLE t"],
        ["compact", "t", "-p", "a=1) COMPACT 'major'; DROP TABLE t; --"],
        ["compact", "t", "-p", "a=1; DROP TABLE t"],
        ["changes", "t; DROP TABLE t"],
    ],
)
def test_names_from_options_never_become_statement_text(wh: str, args: list[str]) -> None:
    result = CliRunner().invoke(app, [*args[:1], "-w", wh, *args[1:]])
    _one_clear_line(result)
    assert _rows(wh) == "a\n1\n"  # t is still there, with its row


def test_option_names_still_work(wh: str) -> None:
    done = CliRunner().invoke(app, ["sql", "-w", wh, "-e", "CREATE DATABASE other"])
    assert done.exit_code == 0, done.output
    used = CliRunner().invoke(app, ["sql", "-w", wh, "-d", "OTHER", "-e", TABLE])
    assert used.exit_code == 0, used.output
    shown = CliRunner().invoke(app, ["sql", "-w", wh, "-e", "SHOW TABLES IN other"])
    assert "t" in shown.stdout
    missing = CliRunner().invoke(app, ["sql", "-w", wh, "-d", "nope", "-e", "SELECT 1"])
    _one_clear_line(missing, "Database does not exist: nope")
    queued = CliRunner().invoke(app, ["compact", "default.t", "-w", wh, "--major"])
    assert queued.exit_code == 0 and "major compaction of default.t queued" in queued.output
    shown = CliRunner().invoke(app, ["show", "compactions", "-w", wh, "--format", "csv"])
    assert shown.exit_code == 0 and "MAJOR" in shown.stdout


# --------------------------------------------------------------------------- item 10: no tracebacks
def test_a_warehouse_path_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "afile"
    path.write_text("not a warehouse\n")
    _one_clear_line(
        CliRunner().invoke(app, ["init", str(path)]), "WarehouseLocationError", "is a file"
    )
    _one_clear_line(
        CliRunner().invoke(app, ["sql", "-w", str(path), "-e", "SELECT 1"]),
        "NoSuchWarehouseError",
    )
    assert path.read_text() == "not a warehouse\n"


def test_a_broken_metastore_file(tmp_path: Path) -> None:
    path = tmp_path / "wh"
    path.mkdir()
    (path / "_metastore.db").write_bytes(b"garbage, not SQLite" * 100)
    for args in (["sql", "-w", str(path), "-e", "SELECT 1"], ["show", "locks", "-w", str(path)]):
        _one_clear_line(
            CliRunner().invoke(app, args), "MetastoreUnavailableError", "file is not a database"
        )
    assert (path / "_metastore.db").read_bytes() == b"garbage, not SQLite" * 100


def test_a_metastore_of_a_newer_version_is_left_alone(wh: str) -> None:
    db = Path(wh) / "_metastore.db"
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE {VERSION_TABLE} SET version_num = '9999'")
    result = CliRunner().invoke(app, ["sql", "-w", wh, "-e", "SELECT a FROM t"])
    _one_clear_line(result, "MetastoreVersionError", "revision 9999", f"up to {HEAD}")
    with sqlite3.connect(db) as con:
        assert con.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall() == [("9999",)]


def test_an_unreachable_postgresql_metastore(tmp_path: Path) -> None:
    url = "postgresql://postgres:secret@127.0.0.1:1/test"  # nothing listens on port 1
    for args in (
        ["init", str(tmp_path / "wh"), "--metastore-url", url],
        ["sql", "-w", str(tmp_path / "wh"), "--metastore-url", url, "-e", "SELECT 1"],
    ):
        result = CliRunner().invoke(app, args)
        _one_clear_line(result, "MetastoreUnavailableError", "127.0.0.1", "port 1")
        assert "secret" not in result.output


def _acid() -> list[str]:
    exe = shutil.which("acid", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "acid_platform.cli"]


@pytest.mark.slow
def test_a_read_only_warehouse_answers_selects(wh: str, tmp_path: Path) -> None:
    """A real read-only mount (a bind mount remounted read-only, in a mount namespace of its
    own): SELECTs answer, every write is one clear line."""
    assert shutil.which("unshare"), "needs unshare(1) (util-linux) for a private read-only mount"
    mounted = tmp_path / "ro"
    mounted.mkdir()
    script = 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"'
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", wh,
         str(mounted), "touch", str(mounted / "probe")],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert "Read-only file system" in probe.stderr, (
        f"cannot make a read-only mount here: {probe.stderr.strip()}"
    )

    def acid(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", wh,
             str(mounted), *_acid(), *args],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip

    ro = str(mounted)
    done = acid("sql", "-w", ro, "--format", "csv", "-e", "SELECT a FROM t ORDER BY a")
    assert done.returncode == 0 and done.stdout == "a\n1\n", done.stderr
    joined = acid(
        "sql",
        "-w",
        ro,
        "--format",
        "csv",
        "-e",
        "SELECT count(*) AS n FROM t x JOIN t y ON x.a = y.a",
    )
    assert joined.returncode == 0 and joined.stdout == "n\n1\n", joined.stderr
    for args in (
        ["sql", "-w", ro, "-e", "INSERT INTO t VALUES (2)"],
        ["sql", "-w", ro, "-e", "BEGIN"],
        ["compact", "t", "-w", ro],
    ):
        failed = acid(*args)
        assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
        assert failed.stderr.startswith("error: ReadOnlyMetastoreError"), failed.stderr
    assert _rows(wh) == "a\n1\n"
    # a writer on the writable side keeps the SQLite WAL open: the read-only side reads it
    with Warehouse.open(wh, create=False) as writer:
        writer.sql("INSERT INTO t VALUES (2)")
        assert (Path(wh) / "_metastore.db-wal").exists()
        done = acid("sql", "-w", ro, "--format", "csv", "-e", "SELECT a FROM t ORDER BY a")
        assert done.returncode == 0 and done.stdout == "a\n1\n2\n", done.stderr


def test_a_location_no_file_system_serves(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    for args in (["init", "foo://x/wh"], ["init", "foo://x/wh", "--metastore-url", url]):
        _one_clear_line(CliRunner().invoke(app, args), "WarehouseLocationError", "foo://x/wh")


@pytest.mark.parametrize("value", ["abc", "0", "-5", "5 fortnights"])
def test_a_bad_setting_value(wh: str, value: str) -> None:
    result = CliRunner().invoke(app, ["sql", "-w", wh, "-e", f"SET hive.txn.timeout={value}"])
    _one_clear_line(result, "InvalidSettingError", "hive.txn.timeout")
