"""Process-wide settings a process may opt into (importing the package sets none of them), and
the check that an optional part's extra is installed (:func:`require`).

:func:`tune_memory` sets two allocator settings, each only where the environment has no value
for it already (a user's own setting wins):

* ``MIMALLOC_PURGE_DELAY=-1``: pyarrow's allocator (mimalloc) keeps freed pages for reuse
  instead of handing them back after a short delay, so the next stripe of a scan does not fault
  them in and zero them again (a scan after 10 MERGEs spent ~15% of its time there;
  benchmarks/REPORT.md, issue 15). Processes keep their peak memory.
* ``NUMPY_MADVISE_HUGEPAGE=0``: numpy stops asking for transparent huge pages for arrays of
  4 MiB or more; a statement's arrays live for milliseconds and faulting in fresh 2 MiB pages
  for them cost more than it saved (a DELETE of 1% of store_sales SF1: 0.13 s with, 0.09 s
  without).

Both libraries read their setting once, when they load, so the call must come before pyarrow
and numpy are imported; processes started afterwards (Spark's JVM and its Python workers, child
processes) inherit it. Who opts in: the ``acid`` command (:func:`acid_platform.cli.run`, before
it imports anything else), the example platform's and ``acid new`` projects' code locations
(first line of ``definitions.py``), and the Spark sessions this project starts, whose executors
get the settings through ``spark.executorEnv.*`` (:func:`spark_executor_env`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import MutableMapping

from acid_platform.errors import MissingExtraError

#: The settings :func:`tune_memory` applies, and their values.
MEMORY_SETTINGS = {"MIMALLOC_PURGE_DELAY": "-1", "NUMPY_MADVISE_HUGEPAGE": "0"}


def tune_memory(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each of :data:`MEMORY_SETTINGS` that ``environ`` (default: this process's
    environment) does not set already; returns what it set. Call it first thing in a
    process's ``main`` (see module docs)."""
    env = os.environ if environ is None else environ
    applied = {k: v for k, v in MEMORY_SETTINGS.items() if k not in env}
    env.update(applied)
    return applied


def spark_executor_env(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings (``spark.executorEnv.<NAME>``) giving executors the memory settings this
    process runs with (its own, or :data:`MEMORY_SETTINGS` where it has none)."""
    env = os.environ if environ is None else environ
    return {f"spark.executorEnv.{k}": env.get(k, v) for k, v in MEMORY_SETTINGS.items()}


def require(package: str, extra: str, needed_by: str) -> None:
    """Raise :class:`~acid_platform.errors.MissingExtraError` — one line naming the extra —
    unless ``package`` (an importable name) is installed; ``needed_by`` says what needs it.

    >>> require("acid_platform_no_such_package", "spark", "acid_platform.engines.spark")
    Traceback (most recent call last):
    ...
    acid_platform.errors.MissingExtraError: acid_platform.engines.spark needs acid_platform_no_such_package, which is not installed: pip install 'acid_platform[spark]'
    """
    if importlib.util.find_spec(package) is None:
        raise MissingExtraError(
            f"{needed_by} needs {package}, which is not installed: "
            f"pip install 'acid_platform[{extra}]'"
        )


__all__ = ["MEMORY_SETTINGS", "require", "spark_executor_env", "tune_memory"]
