"""Ingest: landing files loaded into ACID tables, each exactly once.

* :mod:`.landing` — landing files in a local directory or under a URI (``pyarrow.fs``), each
  with its identity (URI, size, modification time; its content's SHA-256 once a local file
  was rewritten keeping both);
* :mod:`.readers` — Parquet, CSV and JSON lines, read and fitted to the table;
* :mod:`.load` — :func:`load_files`: the files not yet loaded, streamed through one Ingest V2
  connection — one transaction per file, a transaction batch for many files (one delta per
  partition and batch) — each file's identity committed with its transaction (a re-run is a
  no-op; of two concurrent loads one commits; a bad file aborts only its own transaction).

The Dagster sensor and job that run it by themselves are in
:mod:`acid_platform.orchestration.ingest`; ``acid ingest`` runs it from the shell.

>>> # load_files(wh, "retail.returns", ["/landing/returns-2024-01-01.csv"]).rows
"""

from acid_platform.streaming.landing.landing import LandingFile, list_landing, stat_landing
from acid_platform.streaming.landing.load import (
    DEFAULT_BATCH_SIZE,
    FailedFile,
    FileLoad,
    LoadResult,
    ensure_table,
    identify,
    load_files,
)
from acid_platform.streaming.landing.readers import FileFormat, format_of

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "FailedFile",
    "FileFormat",
    "FileLoad",
    "LandingFile",
    "LoadResult",
    "ensure_table",
    "format_of",
    "identify",
    "list_landing",
    "load_files",
    "stat_landing",
]
