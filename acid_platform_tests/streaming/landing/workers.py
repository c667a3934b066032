"""Code the concurrent-ingest tests run in separate OS processes (importable by spawned
children)."""

from __future__ import annotations

from typing import Any

from acid_platform import Warehouse
from acid_platform.streaming.landing import load_files


def load_at_once(root: str, url: str, table: str, path: str, barrier: Any, out: Any) -> None:
    """Wait for every worker at ``barrier``, then load ``path`` into ``table``; put
    ``(rows inserted, files loaded, files skipped)`` on ``out``."""
    with Warehouse.open(root, metastore_url=url, create=False) as wh:
        barrier.wait(timeout=120)
        result = load_files(wh, table, [path])
        out.put((result.rows, len(result.loaded), len(result.skipped)))


def load_then_die(root: str, table: str, paths: list[str], kill_at: int) -> None:
    """Load ``paths`` into ``table`` and ``kill -9`` this process when the ``kill_at``-th file
    is written (its transaction not committed; the earlier files' are)."""
    import os
    import signal

    from acid_platform.compaction.hooks import on_checkpoint

    written = 0

    def die(step: str) -> None:
        nonlocal written
        if step == "ingest.file_written":
            written += 1
            if written == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    with Warehouse.open(root, create=False) as wh, on_checkpoint(die):
        load_files(wh, table, paths)
