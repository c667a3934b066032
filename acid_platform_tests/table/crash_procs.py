"""Processes the crash-recovery tests kill with ``kill -9`` (issue 13 items 1 and 7)::

    python -m acid_platform_tests.table.crash_procs update <warehouse> <metastore url|-> <marker> <timeout>
    python -m acid_platform_tests.table.crash_procs reader <warehouse> <metastore url|-> <marker> <go> <out>

``update`` runs a real UPDATE of table ``t`` (``hive.txn.timeout`` = ``timeout``): it takes its
EXCL_WRITE lock, writes its delta files, then writes ``marker`` and stops before the commit,
waiting to be killed. Only the stop is injected; the lock, files and heartbeats are real.

``reader`` moves this process's wall clock 600 s back (every ``time.time()`` it makes),
opens a lazy scan of ``t`` (its snapshot registered with the cleaner through a reader lease),
writes ``marker``, waits for the file ``go``, then reads the scan and writes the row count
to ``out``.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from acid_platform import Warehouse
from acid_platform.table import dml_write

SKEW_S = 600.0


def _open(root: str, url: str, conf: dict[str, str] | None = None) -> Warehouse:
    return Warehouse.open(root, None if url == "-" else url, conf=conf)


def update_and_halt(root: str, url: str, marker: str, timeout: str) -> None:
    write = dml_write.run_writes

    def halting(*args: Any, **kwargs: Any) -> Any:
        write(*args, **kwargs)
        Path(marker).write_text("files written, not committed")
        while True:
            signal.pause()

    dml_write.run_writes = halting  # type: ignore[assignment]
    wh = _open(root, url, {"hive.txn.timeout": timeout})
    wh.table("t").update({"v": "'dead'"}, "k >= 0")


def skewed_reader(root: str, url: str, marker: str, go: str, out: str) -> None:
    real = time.time
    time.time = lambda: real() - SKEW_S  # this client's clock is 600 s behind
    wh = _open(root, url)
    scan = wh.table("t").scan()
    Path(marker).write_text("snapshot taken")
    while not Path(go).exists():
        time.sleep(0.01)
    Path(out).write_text(str(scan.to_arrow().num_rows))
    wh.close()


if __name__ == "__main__":
    if sys.argv[1] == "update":
        update_and_halt(*sys.argv[2:6])
    elif sys.argv[1] == "reader":
        skewed_reader(*sys.argv[2:7])
    else:
        raise SystemExit(f"unknown process {sys.argv[1]!r}")
