"""The snapshot of one Spark query, agreed on by all its tasks, and the splits it reads.

Spark (4.0 – 4.3) plans a Python data source's read once per loaded relation and reuses that
plan — the reader and its partitions — for every later query on the DataFrame or view (see
:mod:`.datasource`). A snapshot taken while planning would therefore stay the relation's
forever. Instead, the tasks of each query take the query's snapshot themselves, keyed by what
Spark gives every task of one query and no other: the SQL execution id (the task's local
property ``spark.sql.execution.id``), together with the registration's ``query_scope`` (else
a token of the planned reader), which makes the key unique across Spark applications.

Tasks run in several processes, so they agree through the metastore: the first to ask opens a
reader lease registered under the key, on the transaction snapshot of that moment; every later
task of the query gets that lease and its snapshot
(:meth:`~acid_platform.metastore.Metastore.shared_read_lease`) and keeps it alive. One query
therefore reads every table (and every scan of one) at one snapshot, as a transaction would. Each Python worker then plans the table's splits under that snapshot once
per query (:func:`query_splits`), and each task reads its share of them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from acid_platform.engines.spark.options import SourceOptions, open_metastore, table_location
from acid_platform.format import Snapshot
from acid_platform.metastore.model import TableSpec
from acid_platform.table.scan import ScanTask, plan_scan
from acid_platform.table.scan_where import ScanFilter

#: The local property Spark sets on every task of one SQL execution (query).
EXECUTION_ID = "spark.sql.execution.id"
#: How many queries' plans a Python worker keeps.
_CACHE_SIZE = 16

#: (metastore url, txn timeout, lease id, time opened) — what a task needs to heartbeat a lease
Lease = tuple[str, float, int, float]


@dataclass(frozen=True)
class QuerySplits:
    """A query's snapshot, its reader lease, and the table's splits under it (in a fixed order,
    the same in every process)."""

    snapshot: Snapshot
    lease: Lease | None
    tasks: tuple[ScanTask, ...]

    def share(self, slot: int, slots: int) -> Sequence[ScanTask]:
        """The splits task ``slot`` of ``slots`` reads."""
        return self.tasks[slot::slots]


_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str], QuerySplits] = OrderedDict()


def execution_id() -> str | None:
    """The SQL execution id of the running Spark task (``None`` outside one, e.g. RDD jobs)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return None if ctx is None else ctx.getLocalProperty(EXECUTION_ID)


def query_key(scope: str, execution: str) -> str:
    """The lease key of one query (at most 128 characters): ``scope`` names the registration
    of the source (or one planned relation), unique across Spark applications; the execution
    id is unique within one."""
    return f"spark query {execution} {scope}"[:128]


def query_splits(
    options: SourceOptions,
    spec: TableSpec,
    relation: str,
    scope: str,
    execution: str,
    columns: Sequence[str],
    pruning: Callable[[pa.Table], Sequence[int]] | None = None,
) -> QuerySplits:
    """The splits of planned relation ``relation`` (of ``spec``; partitions pruned by the
    relation's ``pruning``) under the snapshot of query ``execution``, planned once per
    process. The snapshot is one ValidTxnList for every table and relation the query reads in
    ``scope``."""
    key = query_key(scope, execution)
    entry = (key, relation)
    with _lock:
        hit = _cache.get(entry)
        if hit is not None:
            _cache.move_to_end(entry)
            return hit
    ms = options.metastore()
    lease_id, txns = ms.shared_read_lease(key)
    write_ids = ms.valid_write_ids(None, spec.db, spec.name, valid_txns=txns)
    snapshot = Snapshot(txns, write_ids)
    lease = (options.metastore_url, options.txn_timeout_s, lease_id, time.time())
    splits = QuerySplits(snapshot, lease, tuple(planned_tasks(spec, snapshot, columns, pruning)))
    with _lock:
        _cache[entry] = splits
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return splits


def scanned_snapshot(metastore_url: str, txn_timeout_s: float, scope: str) -> str | None:
    """The snapshot (a ValidTxnList string) the scans of the running task's query read at —
    the lease :func:`query_splits` registered, extended — or ``None`` (no SQL execution, or
    no such lease: no scan ran, or its lease expired)."""
    execution = execution_id()
    if execution is None:
        return None
    found = open_metastore(metastore_url, txn_timeout_s).find_read_lease(
        query_key(scope, execution)
    )
    return None if found is None else str(found[1])


def planned_tasks(
    spec: TableSpec,
    snapshot: Snapshot,
    columns: Sequence[str],
    pruning: Callable[[pa.Table], Sequence[int]] | None = None,
) -> list[ScanTask]:
    """The table's splits under ``snapshot`` (partitions pruned by ``pruning``), ordered by
    (partition, bucket): a function of the snapshot alone, so every process lists the same
    splits in the same order."""
    where = ScanFilter(partitions=pruning) if pruning is not None else None
    scan = plan_scan(spec, table_location(spec.location), snapshot, columns=columns, where=where)
    tasks = scan.split_tasks()
    return sorted(tasks, key=lambda t: (t.split.partition or "", t.split.bucket_id))
