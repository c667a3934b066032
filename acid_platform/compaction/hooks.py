"""Named steps of the worker, the cleaner and ingest, where tests can stop or observe them.

The worker and the cleaner call :func:`checkpoint` at each step that leaves a distinct state on
disk or in the metastore. A checkpoint does nothing unless a callback was registered with
:func:`on_checkpoint` in this process — nothing here reads the environment, so no setting can
make a production process stop. Tests register one in-process (concurrent writes or reads run
exactly there), or in a child process they start themselves, which pauses at a step so that a
``kill -9`` lands there deterministically, never by timing (``acid_platform_tests.helpers``).

Steps of the worker: ``worker.claimed``, ``worker.planned``, ``worker.dirs_created``,
``worker.batch_written`` (first batch of the first bucket file written, file not closed),
``worker.bucket_written`` (first bucket file closed), ``worker.files_written`` (everything
written, compactor txn still open), ``worker.committed``; with Hive 3 compatible names
(:mod:`.staging`) also ``worker.staged`` (all output written under hidden staging names) and
``worker.renamed_one`` (after each rename to the final name, before the commit). Steps of the cleaner:
``cleaner.selected``, ``cleaner.deleted_one``, ``cleaner.deleted_all``, ``cleaner.marked``.
Step of ingest: ``ingest.file_written`` (once per landing file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

WORKER_STEPS = (
    "worker.claimed",
    "worker.planned",
    "worker.dirs_created",
    "worker.batch_written",
    "worker.bucket_written",
    "worker.files_written",
    "worker.committed",
)
#: Steps only a worker writing Hive 3 compatible names reaches (between files_written's
#: predecessors and worker.files_written).
HIVE3_WORKER_STEPS = ("worker.staged", "worker.renamed_one")
CLEANER_STEPS = ("cleaner.selected", "cleaner.deleted_one", "cleaner.deleted_all", "cleaner.marked")
#: Steps of an ingest (:mod:`acid_platform.streaming.landing.load`): a file's rows written in
#: its transaction (of a transaction batch), its identity recorded, the transaction not committed.
INGEST_STEPS = ("ingest.file_written",)

_callbacks: list[Callable[[str], None]] = []


def checkpoint(step: str) -> None:
    """Mark that the caller reached ``step``: run the registered callbacks (none: nothing)."""
    for callback in list(_callbacks):
        callback(step)


@contextmanager
def on_checkpoint(callback: Callable[[str], None]) -> Iterator[None]:
    """Call ``callback(step)`` at every checkpoint inside the ``with`` block (tests)."""
    _callbacks.append(callback)
    try:
        yield
    finally:
        _callbacks.remove(callback)
