"""Compaction and cleaning of Hive ACID tables (Hive 4 semantics and layouts).

* :mod:`.rewrite` — the format-level rewrite of one partition directory: minor
  (``delta_<min>_<max>_v<T>`` + ``delete_delta_<min>_<max>_v<T>``) and major (``base_<N>_v<T>``).
* :mod:`.initiator` — Hive's thresholds decide what to queue.
* :mod:`.worker` — claims queue entries and runs rewrites under the compactor's own txn, on a
  pluggable executor (:mod:`.executors`: embedded now, Spark for large partitions).
* :mod:`.cleaner` — deletes obsolete and aborted directories once no reader needs them.
* :mod:`.api` — ``compact_table`` (``ALTER TABLE … COMPACT … [AND WAIT]``), ``run_initiator``,
  ``run_worker``, ``run_cleaner``, ``show_compactions``.
* :mod:`.housekeeper` — ``run_housekeeping``: reap transactions silent for ``hive.txn.timeout``.
* :mod:`.services` — ``Services``: initiator, workers, cleaner and housekeeper as threads of one
  long-running process (``acid services``), on Hive's settings (:class:`.config.ServiceConf`).
* :mod:`.insert_only` — an insert-only table's plain files compacted (Hive 4's MM compaction);
* :mod:`.rebalance` — Hive 4's ``'rebalance'`` compaction of an unbucketed full-ACID partition;
* :mod:`.staging` — Hive 3 compatible output names (``acid.compactor.hive3.compatible``): staged
  in hidden directories, renamed at commit; why that is safe, and its trade-offs;
* :mod:`.config` — ``CompactorConf`` and ``ServiceConf``: Hive's settings and per-table
  overrides; :mod:`.context` — what the three share;
* :mod:`.health` — a table's health report (``SHOW TABLE STATUS``, ``acid health``,
  ``Warehouse.health``); :mod:`.upkeep` — the WARN measures read from it;
* :mod:`.hooks` — named steps where tests pause or kill a worker or cleaner.

The package sits above ``table``: it writes through the table layer's event layout and reads
under its reader leases, like any other writer and reader.

>>> from acid_platform.compaction import compact_table, run_cleaner
>>> # compact_table(wh, "employee", kind="minor"); run_cleaner(wh)
"""

from acid_platform.compaction.api import (
    compact_table,
    run_cleaner,
    run_initiator,
    run_worker,
    show_compactions,
)
from acid_platform.compaction.cleaner import (
    CleanedEntry,
    Cleaner,
    CleanerReport,
)
from acid_platform.compaction.config import CompactorConf, ServiceConf
from acid_platform.compaction.context import CompactionContext
from acid_platform.compaction.executors import (
    CallableExecutor,
    CompactionExecutor,
    EmbeddedExecutor,
    ExecutorRouter,
    LazyExecutor,
)
from acid_platform.compaction.housekeeper import (
    HousekeepingReport,
    TimedOut,
    find_timed_out,
    run_housekeeping,
)
from acid_platform.compaction.initiator import (
    Initiator,
    InitiatorDecision,
    choose_compaction_type,
)
from acid_platform.compaction.rewrite import (
    BucketTask,
    RewritePlan,
    RewriteRequest,
    RewriteResult,
    execute_plan,
    plan_rewrite,
    rewrite_partition,
    run_task,
)
from acid_platform.compaction.services import ServiceCounts, Services
from acid_platform.compaction.worker import CompactionOutcome, Worker

__all__ = [
    "BucketTask",
    "CallableExecutor",
    "CleanedEntry",
    "Cleaner",
    "CleanerReport",
    "CompactionContext",
    "CompactionExecutor",
    "CompactionOutcome",
    "CompactorConf",
    "EmbeddedExecutor",
    "ExecutorRouter",
    "HousekeepingReport",
    "Initiator",
    "InitiatorDecision",
    "LazyExecutor",
    "RewritePlan",
    "RewriteRequest",
    "RewriteResult",
    "ServiceConf",
    "ServiceCounts",
    "Services",
    "TimedOut",
    "Worker",
    "choose_compaction_type",
    "compact_table",
    "execute_plan",
    "find_timed_out",
    "plan_rewrite",
    "rewrite_partition",
    "run_cleaner",
    "run_housekeeping",
    "run_initiator",
    "run_task",
    "run_worker",
    "show_compactions",
]
