"""Spark's Python workers: which interpreter runs them, and what their errors say.

Spark runs the ``acid`` data source and the engine's tasks in Python processes of its own, started
with ``SparkContext.pythonExec`` — ``PYSPARK_PYTHON`` as the driver process had it when the
session started, else a bare ``python3`` from the ``PATH``. From a virtual environment that is not
activated, that ``python3`` is not the venv's and cannot import ``acid_platform`` (nor pyarrow).
:func:`use_driver_python` settles it once per SparkContext, when the source is registered:

* an interpreter chosen explicitly (``spark.pyspark.python``, else ``PYSPARK_PYTHON``) is used;
* otherwise, when the executors run on this host (``local[…]``, or a standalone master on this
  host), the driver's own interpreter (``sys.executable``) is used;
* any interpreter other than the driver's is checked with a one-task job that imports the
  project; a failure raises :class:`~acid_platform.errors.EngineError` at once, naming
  ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` and the worker's own error.

:func:`worker_error` turns a failed Spark job back into its Python cause: the innermost Python
exception (type and message) and the notes a task added to it (table, partition, file).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acid_platform.errors import EngineError

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

#: Modules a Python worker must import for the ``acid`` source and the engine's tasks.
REQUIRED_MODULES = ("pyarrow", "acid_platform.engines.spark.datasource")
_settled: weakref.WeakSet[Any] = weakref.WeakSet()


def use_driver_python(spark: SparkSession) -> str:
    """Choose (and, if it is not the driver's, check) the interpreter of ``spark``'s Python
    workers, once per SparkContext; return it. Raises :class:`EngineError` when the chosen
    interpreter cannot import the project."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: its server decides
        return ""
    if sc in _settled:
        return str(sc.pythonExec)
    chosen = _chosen_python(sc)
    if chosen is None and executors_on_this_host(sc.master or ""):
        chosen = sys.executable
    if chosen is not None:
        sc.pythonExec = chosen
    if not _same_interpreter(str(sc.pythonExec)):
        check_workers(sc)
    _settled.add(sc)
    return str(sc.pythonExec)


def check_workers(sc: SparkContext) -> None:
    """Run one task that imports :data:`REQUIRED_MODULES` in a Python worker; raise
    :class:`EngineError` naming the interpreter settings if it cannot."""
    python = str(sc.pythonExec)
    modules = REQUIRED_MODULES

    def probe(_: object) -> str:  # pickled by value: the worker needs no acid_platform for it
        import importlib
        import sys as worker_sys

        for module in modules:
            importlib.import_module(module)
        return worker_sys.executable

    try:
        sc.parallelize([0], 1).map(probe).collect()
    except Exception as exc:  # noqa: BLE001 - py4j and Spark raise many types
        cause = worker_error(exc)
        raise EngineError(
            f"Spark's Python workers run {python!r}, which cannot run acid_platform: "
            f"{cause.summary}. Set PYSPARK_PYTHON (in the environment, before the session "
            f"starts) or spark.pyspark.python to a Python that has acid_platform installed "
            f"(this driver runs {sys.executable})"
        ) from exc


def executors_on_this_host(master: str) -> bool:
    """Whether ``master`` runs its executors on this machine: ``local[…]``,
    ``local-cluster[…]``, or a standalone master (``spark://``) whose hosts are this host."""
    if master.startswith("local"):
        return True
    if not master.startswith("spark://"):
        return False
    hosts = [hp.rsplit(":", 1)[0].strip("[]") for hp in master[len("spark://") :].split(",")]
    return all(_is_this_host(h) for h in hosts)


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class WorkerError:
    """The Python cause of a failed Spark job: exception type (unqualified), message, and the
    notes the task added (table, partition, file)."""

    kind: str
    message: str
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """``Kind: message (note; note)`` on one line."""
        text = f"{self.kind}: {self.message}" if self.kind else self.message
        return f"{text} ({'; '.join(self.notes)})" if self.notes else text


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")
_FRAME = re.compile(r"^\s+(File \"|\^|~)")
_JAVA_FRAME = re.compile(r"^\s+at |^\s*\.\.\. \d+ more")


def worker_error(exc: BaseException) -> WorkerError:
    """The innermost Python error in a failed Spark job's message (PySpark puts the worker's
    traceback there), with the notes that follow its line; else the first meaningful line."""
    lines = str(exc).splitlines()
    last: WorkerError | None = None
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            found = _after_traceback(lines, i + 1)
            if found is not None:
                last = found
    if last is not None:
        return last
    for line in lines:
        match = _EXC_LINE.match(line.strip())
        if match:
            last = WorkerError(match.group(1).rsplit(".", 1)[-1], match.group(2).strip())
    if last is not None:
        return last
    text = next((ln.strip() for ln in lines if ln.strip()), repr(exc))
    return WorkerError(type(exc).__name__, text)


def _after_traceback(lines: list[str], start: int) -> WorkerError | None:
    for j in range(start, len(lines)):
        line = lines[j]
        if _FRAME.match(line) or line.startswith("    "):
            continue
        match = _EXC_LINE.match(line.strip())
        if not match:
            return None
        notes: list[str] = []
        for extra in lines[j + 1 :]:
            if not extra.strip() or _JAVA_FRAME.match(extra) or extra.startswith(("\tat", "\t")):
                break
            if extra.startswith(("Traceback", "During handling", "The above exception")):
                break
            if extra.startswith(("org.apache.spark", "java.", "py4j", "JVM stacktrace")):
                break
            notes.append(extra.strip())
        return WorkerError(match.group(1).rsplit(".", 1)[-1], match.group(2).strip(), tuple(notes))
    return None


# --------------------------------------------------------------------------- helpers


def _chosen_python(sc: SparkContext) -> str | None:
    conf = sc.getConf().get("spark.pyspark.python")
    if conf:
        return str(conf)
    env = os.environ.get("PYSPARK_PYTHON")
    current = str(sc.pythonExec)
    # the session took PYSPARK_PYTHON from the environment when it started; "python3" is
    # Spark's default, not a choice, unless the environment says so
    if current != "python3" or env == "python3":
        return current
    return None


def _same_interpreter(python: str) -> bool:
    """Whether ``python`` names this very interpreter (by path: a venv's ``python`` is a
    symlink to a base interpreter that has none of the venv's packages)."""
    import shutil

    found = shutil.which(python)
    return found is not None and os.path.abspath(found) == os.path.abspath(sys.executable)


def _is_this_host(host: str) -> bool:
    names = {"localhost", socket.gethostname(), socket.getfqdn()}
    if host in names:
        return True
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return False
    if address.startswith("127."):
        return True
    mine: set[str] = set()
    for name in names:
        try:
            mine.update(socket.gethostbyname_ex(name)[2])
        except OSError:
            continue
    return address in mine


__all__ = [
    "REQUIRED_MODULES",
    "WorkerError",
    "check_workers",
    "executors_on_this_host",
    "use_driver_python",
    "worker_error",
]
