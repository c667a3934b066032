"""The maintenance services without Dagster: initiator, workers, cleaner and housekeeper as
threads of one process (``acid services``), on Hive's settings (:class:`~.config.ServiceConf`).

* the **initiator** (when ``hive.compactor.initiator.on``) every ``hive.compactor.check.interval``;
* ``hive.compactor.worker.threads`` **workers**, each claiming queue entries one after the other
  and sleeping ``hive.compactor.worker.sleep.time`` when the queue is empty (an explicit
  ``ALTER TABLE … COMPACT`` is claimed like an initiated entry);
* the **cleaner** every ``hive.compactor.cleaner.run.interval``;
* the **housekeeper** every half ``hive.txn.timeout`` (at most every 60 s), aborting
  transactions silent for ``hive.txn.timeout`` and releasing their locks.

:meth:`Services.stop` (the CLI calls it on SIGTERM / SIGINT) lets each service finish the pass
it is in (a worker finishes and commits its current compaction) and returns when all have
stopped. A failing pass is logged and the service goes on with the next one.

>>> # with Services(wh, ServiceConf(txn_timeout_s=60)) as services: services.wait()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acid_platform.compaction.cleaner import Cleaner
from acid_platform.compaction.config import CompactorConf, ServiceConf
from acid_platform.compaction.context import CompactionContext, default_worker_id
from acid_platform.compaction.executors import ExecutorLike, ExecutorRouter
from acid_platform.compaction.housekeeper import run_housekeeping
from acid_platform.compaction.initiator import Initiator
from acid_platform.compaction.worker import Worker

log = logging.getLogger(__name__)


@dataclass
class ServiceCounts:
    """Passes and results so far (read while the services run; for status lines and tests)."""

    initiator_passes: int = 0
    queued: int = 0
    compactions: int = 0
    failed_compactions: int = 0
    cleaner_passes: int = 0
    removed_paths: int = 0
    housekeeping_passes: int = 0
    aborted_txns: int = 0
    errors: list[str] = field(default_factory=list)


class Services:
    """Runs the four services on threads until :meth:`stop` (see the module docs).

    ``target`` is a warehouse or a metastore (as for :func:`~.api.run_worker`); ``executor``
    rewrites partitions as for the worker (an :class:`~.executors.ExecutorRouter` sends large
    ones to Spark). ``on_event`` receives one line per notable event (queued, compacted, cleaned,
    reaped, failed), from the service threads.
    """

    def __init__(
        self,
        target: Any,
        settings: ServiceConf | None = None,
        *,
        conf: CompactorConf | None = None,
        executor: ExecutorRouter | ExecutorLike | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.ctx = CompactionContext.of(target, conf)
        self.settings = settings or ServiceConf()
        self.counts = ServiceCounts()
        self._executor = executor
        self._on_event = on_event or (lambda line: log.info("%s", line))
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Services:
        """Start every service thread (once)."""
        if self._threads:
            raise RuntimeError("the services are already started")
        s = self.settings
        if s.initiator_on:
            self._spawn("initiator", self._initiate, s.check_interval_s)
        for n in range(s.worker_threads):
            self._spawn(f"worker-{n}", self._work_factory(n), s.worker_sleep_s)
        self._spawn("cleaner", self._clean, s.cleaner_interval_s)
        self._spawn("housekeeper", self._housekeep, s.housekeeping_interval_s)
        return self

    def request_stop(self) -> None:
        """Ask every service to stop after its current pass (safe from a signal handler)."""
        self._stop.set()

    def stop(self, timeout_s: float | None = None) -> None:
        """Ask every service to stop after its current pass, and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until :meth:`stop` is called (True) or ``timeout_s`` passes (False)."""
        return self._stop.wait(timeout_s)

    def __enter__(self) -> Services:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the services
    def _initiate(self) -> bool:
        decisions = Initiator(self.ctx).run()
        queued = [d for d in decisions if d.cq_id is not None]
        with self._lock:
            self.counts.initiator_passes += 1
            self.counts.queued += len(queued)
        for d in queued:
            where = f"{d.db}.{d.table}" + (f" {d.partition}" if d.partition else "")
            self._on_event(f"initiator: queued {d.type} compaction {d.cq_id} of {where}")
        return False

    def _work_factory(self, n: int) -> Callable[[], bool]:
        worker = Worker(
            self.ctx, executor=self._executor, worker_id=f"{default_worker_id()}.services{n}"
        )

        def work() -> bool:
            worker.metastore.reap_timed_out()
            worker.metastore.revoke_timed_out_workers(self.ctx.conf.worker_timeout_s)
            outcome = worker.run_once()
            if outcome is None:
                return False  # nothing queued: sleep
            where = f"{outcome.db}.{outcome.table}" + (
                f" {outcome.partition}" if outcome.partition else ""
            )
            with self._lock:
                self.counts.compactions += 1
                self.counts.failed_compactions += 0 if outcome.succeeded else 1
            self._on_event(
                f"worker: {outcome.type} compaction {outcome.id} of {where}: "
                f"{outcome.state.value}; {outcome.message}"
            )
            return True  # look at the queue again at once

        return work

    def _clean(self) -> bool:
        report = Cleaner(self.ctx).run()
        with self._lock:
            self.counts.cleaner_passes += 1
            self.counts.removed_paths += len(report.removed)
        for entry in report.entries:
            if entry.cleaned:
                self._on_event(
                    f"cleaner: compaction {entry.id} cleaned, {len(entry.removed)} path(s) removed"
                )
        if report.aborted_removed:
            self._on_event(f"cleaner: {len(report.aborted_removed)} aborted path(s) removed")
        return False

    def _housekeep(self) -> bool:
        report = run_housekeeping(self.ctx, self.settings.txn_timeout_s)
        with self._lock:
            self.counts.housekeeping_passes += 1
            self.counts.aborted_txns += len(report.aborted_txns)
        if report.aborted_txns:
            self._on_event(
                f"housekeeper: aborted timed-out txn(s) {list(report.aborted_txns)}, "
                f"freed lock(s) {list(report.freed_locks)}"
            )
        return False

    # ------------------------------------------------------------------ plumbing
    def _spawn(self, name: str, step: Callable[[], bool], interval_s: float) -> None:
        thread = threading.Thread(
            target=self._loop, args=(name, step, interval_s), name=f"acid-{name}", daemon=True
        )
        self._threads.append(thread)
        thread.start()

    def _loop(self, name: str, step: Callable[[], bool], interval_s: float) -> None:
        while not self._stop.is_set():
            busy = False
            try:
                busy = step()
            except Exception as exc:  # noqa: BLE001 - a service survives a failing pass
                text = f"{name}: {type(exc).__name__}: {exc}"
                log.warning("%s", text)
                with self._lock:
                    self.counts.errors.append(text)
                self._on_event(text)
            if not busy:
                self._stop.wait(interval_s)


__all__ = ["ServiceCounts", "Services"]
