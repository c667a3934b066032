"""``acid``: the command line of acid_platform.

* ``acid init PATH`` creates a warehouse (the other commands refuse a path that holds none);
* ``acid sql -w WAREHOUSE -e "STATEMENT"`` (or ``-f script.sql``, ``-f -`` for stdin) runs HiveQL
  and prints query results as a table (records when too wide, or with ``--format vertical``), or
  as ``--format json|csv``; without ``-e``/``-f`` it is an interactive shell (:mod:`.shell`:
  multi-line statements ending at ``;``, history; Ctrl-D discards an unfinished statement);
* ``acid --version`` prints the version;
* ``acid show transactions|locks|compactions -w WAREHOUSE``;
* ``acid health [db.table] -w WAREHOUSE`` prints the health report of a table (or of every table:
  of ``-d DATABASE``, else of every database), as ``SHOW TABLE STATUS`` does, in the same output
  modes;
* ``acid ingest FILE… --table db.t -w WAREHOUSE`` loads landing files (Parquet, CSV, JSON
  lines) into a table, each exactly once;
* ``acid new PATH`` writes a platform project of your own (Dagster's ``dg`` layout);
* ``acid platform materialize`` materializes the current project's main Dagster job (of the
  code locations its ``workspace.yaml`` names: the example platform in this repository) in one
  run, a line as each step starts and ends, and prints what happened;
* ``acid demo`` walks through the seed example (INSERT, UPDATE, MERGE) on a fresh warehouse and
  shows the directories written and the rows under two snapshots;
* ``acid compact`` / ``acid clean`` hand over to the warehouse's compactor and cleaner;
  ``acid initiate`` queues what needs compacting; ``acid worker`` works the compaction queue
  (``--spark-master URL``: large partitions on Spark); ``acid housekeep`` reaps transactions
  silent for ``hive.txn.timeout``; ``acid services`` runs all four until SIGTERM / Ctrl-C;
* ``acid fsck [db.table…]`` checks each table's files against what its commits recorded and,
  with ``--repair``, quarantines strays and forgets what is missing.

Query rows go to stdout; status lines and notes to stderr (the demo and ``acid platform``
print everything to stdout).
A user error (any :class:`~acid_platform.errors.AcidError`: a warehouse path that is a file, a
metastore that is unreachable, broken or of a newer version, a write to a read-only warehouse …),
and an ``OSError`` or metastore database failure, prints one red line (plus the quoted source
line of a syntax error) and exits with status 1; no traceback. A read-only warehouse answers
SELECTs. Names given as options (``-d``, a table, a partition spec) become statement values,
never statement text.

Modules: :mod:`.commands` (the typer app), :mod:`.maintenance` (the compactor, cleaner and
housekeeper commands, ``acid fsck``, ``acid services``), :mod:`.ingest` (``acid ingest``),
:mod:`.options` (shared options, opening a warehouse), :mod:`.output` (printing), :mod:`.shell`
(the interactive ``acid sql``), :mod:`.demo`, :mod:`.materialize` (``acid platform``; the code
locations of a ``workspace.yaml`` in :mod:`.workspace`, its step lines and log in
:mod:`.progress`),
:mod:`.new` (``acid new``: a platform project written from ``template/``, whose ``*.py.tmpl``
files are not modules of the package) and :mod:`.__main__` (``python -m acid_platform.cli``).

The package imports nothing until it is used: :func:`run` (the ``acid`` program) first opts
into the allocator settings of :func:`acid_platform.runtime.tune_memory` — before pyarrow or
numpy load — then builds the app. Building it imports typer and the option modules only (each
command imports what it needs when it runs), so ``acid --help`` answers in about 0.1 s;
``acid_platform_tests/test_cli_startup.py`` checks what it imports.
"""

from __future__ import annotations

from typing import Any

from acid_platform.runtime import tune_memory


def run() -> None:
    """The ``acid`` program: the process's memory settings, then the command line."""
    tune_memory()
    __getattr__("main")()


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from acid_platform.cli import (
            commands,
            ingest,  # noqa: F401 - registers `acid ingest`
            maintenance,  # noqa: F401 - registers the maintenance commands
            materialize,  # noqa: F401 - registers `acid platform`
            new,  # noqa: F401 - registers `acid new`
        )

        return getattr(commands, name)
    raise AttributeError(f"module 'acid_platform.cli' has no attribute {name!r}")


__all__ = ["app", "main", "run"]
