"""Spark from any virtual environment: the workers' interpreter, their errors' causes, and the
README's Spark example run as a new user runs it (the venv's Python by path, not activated, no
``PYSPARK_PYTHON``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.engines.spark.dml import task_error
from acid_platform.engines.spark.python_workers import executors_on_this_host, worker_error
from acid_platform.errors import EngineError, NotNullViolationError

README = Path(__file__).resolve().parents[3] / "README.md"


def _readme_example() -> str:
    text = README.read_text()
    marker = text.index("<!-- spark-example:")
    block = re.search(r"```python\n(.*?)```", text[marker:], re.DOTALL)
    assert block is not None, "the README's Spark section has no python block after its marker"
    return block.group(1)


def _new_user_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a shell where the venv was never activated: no PYSPARK_PYTHON, no
    VIRTUAL_ENV, the venv's bin/ not on PATH (so ``python3`` there is another interpreter)."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    )
    env["HOME"] = str(tmp_path)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _run(script: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_the_readme_example_runs_from_an_unactivated_venv(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_readme_example())
    done = _run(script, _new_user_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    last = done.stdout.strip().splitlines()[-1]
    # ids 1 and 2 written, 2 updated to 25.0 and 3 inserted by the MERGE
    assert last == (
        "[Row(id=1, amount=10.0, ds='2024-01-01'), Row(id=2, amount=25.0, ds='2024-01-01'), "
        "Row(id=3, amount=30.0, ds='2024-01-02')]"
    ), done.stdout


@pytest.mark.slow
def test_a_worker_python_without_the_project_fails_at_registration(tmp_path: Path) -> None:
    """A chosen interpreter that lacks the venv's packages (here: this Python with ``-S``, so no
    site-packages) fails when the source is registered, naming the settings and the cause."""
    wrong = tmp_path / "python-without-packages"
    wrong.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrong.chmod(0o755)
    script = tmp_path / "example.py"
    script.write_text(_readme_example())
    env = _new_user_env(tmp_path)
    env["PYSPARK_PYTHON"] = str(wrong)
    done = _run(script, env, tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("acid_platform.errors.EngineError: Spark's Python workers run "), last
    assert "PYSPARK_PYTHON" in last and "spark.pyspark.python" in last
    assert "ModuleNotFoundError: No module named" in last


def _raise_in_task(error: Exception) -> Any:
    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:  # shipped by value
        for _ in batches:
            error.add_note("while writing table default.t, partition ds=1, file /wh/t/b_00000")
            raise error
        yield from ()

    return task


def test_a_worker_error_keeps_its_type_message_and_where(spark: Any, tmp_path: Path) -> None:
    wh = Warehouse.open(tmp_path / "wh")
    try:
        spec = wh.create_table("t", [("id", "int")]).spec
    finally:
        wh.close()
    with pytest.raises(Exception) as failed:  # noqa: B017 - whatever PySpark raises
        spark.range(1).mapInArrow(_raise_in_task(ValueError("bad value 7")), "id long").collect()
    assert "An exception was thrown from the Python worker" in str(failed.value)
    error = task_error(failed.value, spec)
    assert isinstance(error, EngineError)
    assert str(error) == (
        "Spark job writing default.t failed: ValueError: bad value 7 (while writing table "
        "default.t, partition ds=1, file /wh/t/b_00000)"
    )
    # the project's own errors come back as themselves
    with pytest.raises(Exception) as typed:  # noqa: B017
        spark.range(1).mapInArrow(
            _raise_in_task(NotNullViolationError("column id is NULL")), "id long"
        ).collect()
    error = task_error(typed.value, spec)
    assert isinstance(error, NotNullViolationError)
    assert str(error) == "column id is NULL"


def test_worker_error_reads_the_innermost_python_cause() -> None:
    text = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 3, in main\n'
        "    raise ValueError('first')\n"
        "ValueError: first\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 5, in main\n'
        "    raise acid_platform.errors.EngineError('second')\n"
        "acid_platform.errors.EngineError: second: it broke\n"
        "while writing table db.t, file /wh/db.db/t/delta_1_1_0000/bucket_00000\n"
        "\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(...)\n"
    )
    cause = worker_error(RuntimeError(text))
    assert cause.kind == "EngineError"
    assert cause.message == "second: it broke"
    assert cause.notes == (
        "while writing table db.t, file /wh/db.db/t/delta_1_1_0000/bucket_00000",
    )
    plain = worker_error(RuntimeError("Connection refused\nmore"))
    assert plain.summary == "RuntimeError: Connection refused"


def test_which_masters_run_executors_on_this_host() -> None:
    assert executors_on_this_host("local[2]")
    assert executors_on_this_host("local-cluster[2,1,1024]")
    assert executors_on_this_host("spark://127.0.0.1:7077")
    assert executors_on_this_host("spark://localhost:7077,127.0.0.1:7078")
    assert not executors_on_this_host("spark://host.invalid:7077")
    assert not executors_on_this_host("yarn")
    assert not executors_on_this_host("k8s://https://10.0.0.1:443")
