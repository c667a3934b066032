"""A table's health report: what a reader merges, what compaction would reclaim, and what holds
the compactor and the cleaner back. One report serves ``SHOW TABLE STATUS`` (SQL),
``acid health`` (CLI), :meth:`acid_platform.Warehouse.health` (Python) and the platform's WARN
asset checks (:mod:`.upkeep`).

Per partition (:class:`PartitionHealth`, from one listing under a reader lease, judged by
:func:`~acid_platform.format.acid_state` exactly as a reader judges it; row counts from the ORC
footers, no data read):

* the current deltas and delete deltas a reader merges;
* the **delete ratio**: delete events per insert event still merged on read;
* the **read amplification**: bytes a reader reads per live byte. Live bytes are estimated as
  the insert files' bytes times the live share of their rows (insert events minus delete
  events, over insert events), so a partition right after a major compaction reads 1.0 and one
  whose rows are half deleted reads at least 2.0; ``None`` when no row is live;
* **small files**: visible files under ``small_file_bytes`` (Hive's
  ``hive.merge.smallfiles.avgsize``, 16 MB);
* what the initiator would do, and why (:meth:`.Initiator.preview`: the initiator's own checks).

Per table (:class:`HealthReport`): the warehouse's **oldest open transaction** (it holds back
every compaction's watermark and the cleaner) and how many of the table's compactions it keeps
from being cleaned; the **compaction backlog** (entries queued or working, entries ready for
cleaning, how long the oldest waited, obsolete or aborted directories still on disk).

>>> # wh.health("db.t").partitions[0].read_amplification
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.compaction.context import CompactionContext
from acid_platform.compaction.initiator import Initiator, InitiatorDecision
from acid_platform.format import AcidState, OrcDataFile, acid_state, list_partition_dirs
from acid_platform.format.fs import join
from acid_platform.format.plain_files import count_plain_rows
from acid_platform.metastore import CompactionState, TableSpec
from acid_platform.table import Table
from acid_platform.table.read_lease import ReadLease
from acid_platform.table.warehouse import TableWarehouse

#: Hive's ``hive.merge.smallfiles.avgsize``: a file under this many bytes is small.
SMALL_FILE_BYTES = 16_000_000


@dataclass(frozen=True)
class PartitionLayout:
    """What a snapshot reads in one partition (``partition`` None: an unpartitioned table).
    Event counts are ``None`` when rows were not counted."""

    partition: str | None
    deltas: int
    delete_deltas: int
    files: int
    bytes: int
    #: Bytes of the files holding rows (base, original files, insert deltas).
    insert_bytes: int
    small_files: int
    obsolete_paths: int
    insert_events: int | None = None
    delete_events: int | None = None

    @property
    def live_rows(self) -> int | None:
        """Rows a reader returns (insert events minus delete events)."""
        if self.insert_events is None or self.delete_events is None:
            return None
        return self.insert_events - self.delete_events

    @property
    def delete_ratio(self) -> float | None:
        """Delete events per insert event still merged on read (0 right after a major
        compaction; what compaction would reclaim)."""
        if self.insert_events is None or self.delete_events is None:
            return None
        return self.delete_events / self.insert_events if self.insert_events else 0.0

    @property
    def read_amplification(self) -> float | None:
        """Bytes read per live byte (see the module docs); ``None`` when no row is live."""
        live = self.live_rows
        if live is None or self.insert_events is None:
            return None
        if self.bytes == 0:
            return 1.0
        if live <= 0:
            return None
        return self.bytes / (self.insert_bytes * live / self.insert_events)


@dataclass(frozen=True)
class PartitionHealth(PartitionLayout):
    """One partition's layout and what the initiator would do with it now."""

    compaction: InitiatorDecision | None = None


@dataclass(frozen=True)
class OpenTxn:
    """The oldest open transaction of the warehouse."""

    txn_id: int
    age_s: float
    user: str | None
    host: str | None


@dataclass(frozen=True)
class CompactionBacklog:
    """The table's compaction queue and cleaner backlog."""

    queued: int
    oldest_queued_s: float
    ready_for_cleaning: int
    oldest_ready_s: float
    #: Entries ready for cleaning that the oldest open transaction keeps from the cleaner
    #: (it started before the compactor committed: Hive's ``CQ_NEXT_TXN_ID`` rule).
    held_by_open_txn: int
    obsolete_paths: int


@dataclass(frozen=True)
class HealthReport:
    """The health of one table (see the module docs)."""

    table: str
    partitions: tuple[PartitionHealth, ...]
    oldest_open_txn: OpenTxn | None
    backlog: CompactionBacklog
    #: The table's ``hive.compactor.delta.num.threshold`` (or its ``compactorthreshold.`` one).
    delta_threshold: int
    small_file_bytes: int = SMALL_FILE_BYTES

    @property
    def max_deltas(self) -> tuple[int, str | None]:
        """The most current deltas (insert and delete) of any partition, and that partition."""
        worst = max(self.partitions, key=lambda p: p.deltas + p.delete_deltas, default=None)
        return (0, None) if worst is None else (worst.deltas + worst.delete_deltas, worst.partition)

    def to_arrow(self) -> pa.Table:
        """:meth:`rows` under :data:`STATUS_SCHEMA`."""
        return pa.Table.from_pylist(self.rows(), STATUS_SCHEMA)

    def rows(self) -> list[dict[str, Any]]:
        """One row per partition, under :data:`STATUS_SCHEMA` (``SHOW TABLE STATUS``)."""
        txn = self.oldest_open_txn
        b = self.backlog
        return [
            {
                "tab_name": self.table,
                "partition": p.partition,
                "deltas": p.deltas,
                "delete_deltas": p.delete_deltas,
                "files": p.files,
                "small_files": p.small_files,
                "bytes": p.bytes,
                "live_rows": p.live_rows,
                "delete_events": p.delete_events,
                "delete_ratio": _round(p.delete_ratio),
                "read_amplification": _round(p.read_amplification),
                "compaction": (p.compaction.type if p.compaction else None) or "none",
                "compaction_reason": p.compaction.reason if p.compaction else None,
                "compactions_queued": b.queued,
                "oldest_queued_s": round(b.oldest_queued_s, 3),
                "ready_for_cleaning": b.ready_for_cleaning,
                "held_by_open_txn": b.held_by_open_txn,
                "oldest_open_txn": txn.txn_id if txn else None,
                "oldest_open_txn_age_s": round(txn.age_s, 3) if txn else None,
            }
            for p in self.partitions
        ]


#: The columns of ``SHOW TABLE STATUS`` (:meth:`HealthReport.rows`).
STATUS_SCHEMA = pa.schema(
    [
        ("tab_name", pa.string()),
        ("partition", pa.string()),
        ("deltas", pa.int64()),
        ("delete_deltas", pa.int64()),
        ("files", pa.int64()),
        ("small_files", pa.int64()),
        ("bytes", pa.int64()),
        ("live_rows", pa.int64()),
        ("delete_events", pa.int64()),
        ("delete_ratio", pa.float64()),
        ("read_amplification", pa.float64()),
        ("compaction", pa.string()),
        ("compaction_reason", pa.string()),
        ("compactions_queued", pa.int64()),
        ("oldest_queued_s", pa.float64()),
        ("ready_for_cleaning", pa.int64()),
        ("held_by_open_txn", pa.int64()),
        ("oldest_open_txn", pa.int64()),
        ("oldest_open_txn_age_s", pa.float64()),
    ]
)


def partition_layouts(
    table: Table,
    *,
    count_rows: bool = True,
    small_file_bytes: int = SMALL_FILE_BYTES,
    partitions: Collection[str] | None = None,
) -> list[PartitionLayout]:
    """Each partition of ``table`` (or those named in ``partitions``, ``""`` for an
    unpartitioned table: only their directories are listed, none walked to find them) as a
    fresh snapshot reads it (one listing per partition directory under a reader lease; rows
    from the footers with ``count_rows``)."""
    spec = table.refresh()
    location = table.location
    fs = location.filesystem
    layouts = []
    dirs = (
        list_partition_dirs(location.path, spec.partition_column_names, fs)
        if partitions is None
        else [(p, join(location.path, p) if p else location.path) for p in sorted(partitions)]
    )
    with ReadLease(table.warehouse, [spec]) as snapshots:
        snapshot = snapshots[spec.full_name]
        for part, path in dirs:
            state = acid_state(
                path,
                snapshot.write_ids,
                snapshot.valid_txns,
                filesystem=fs,
                insert_only=spec.is_insert_only,
            )
            plain = spec.file_format if spec.is_insert_only else None
            layouts.append(_layout(fs, part or None, state, count_rows, small_file_bytes, plain))
    return layouts


def health_report(
    warehouse: TableWarehouse, name: str, *, small_file_bytes: int = SMALL_FILE_BYTES
) -> HealthReport:
    """The health of table ``name`` (``db.table``) now."""
    table = warehouse.table(name)
    layouts = partition_layouts(table, small_file_bytes=small_file_bytes)
    spec = table.spec
    ctx = CompactionContext.of(warehouse)
    ms = ctx.metastore
    decisions = Initiator(ctx).preview(spec.db, spec.name, [p.partition for p in layouts])
    partitions = tuple(
        PartitionHealth(**{**vars(layout), "compaction": decision})
        for layout, decision in zip(layouts, decisions, strict=True)
    )
    now_ms = ms.now_ms()
    opened = [r for r in ms.show_transactions() if r["Transaction State"] == "OPEN"]
    oldest = min(opened, key=lambda r: r["Transaction ID"], default=None)
    txn = (
        None
        if oldest is None
        else OpenTxn(
            oldest["Transaction ID"],
            max(0.0, (now_ms - oldest["Started Time"]) / 1000),
            oldest["User"],
            oldest["Hostname"],
        )
    )
    return HealthReport(
        spec.full_name,
        partitions,
        txn,
        _backlog(ctx, spec, now_ms, txn, sum(p.obsolete_paths for p in layouts)),
        ctx.conf.delta_num_threshold_for(spec.properties),
        small_file_bytes,
    )


# --------------------------------------------------------------------------- helpers
def _backlog(
    ctx: CompactionContext, spec: TableSpec, now_ms: int, txn: OpenTxn | None, obsolete: int
) -> CompactionBacklog:
    entries = [
        c
        for c in ctx.metastore.queued_compactions(
            CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING
        )
        if (c.db, c.table) == (spec.db, spec.name)
    ]
    queued = [c for c in entries if c.state != CompactionState.READY_FOR_CLEANING]
    ready = [c for c in entries if c.state == CompactionState.READY_FOR_CLEANING]

    def waited(times: list[int | None]) -> float:
        return max(((now_ms - (t if t is not None else now_ms)) / 1000 for t in times), default=0.0)

    held = [c for c in ready if txn is not None and (c.next_txn_id or 0) > txn.txn_id]
    return CompactionBacklog(
        len(queued),
        waited([c.enqueue_time for c in queued]),
        len(ready),
        waited([c.commit_time or c.end for c in ready]),
        len(held),
        obsolete,
    )


def _layout(
    fs: pafs.FileSystem,
    partition: str | None,
    state: AcidState,
    count_rows: bool,
    small_file_bytes: int,
    plain: str | None = None,
) -> PartitionLayout:
    dirs = ([state.base] if state.base is not None else []) + list(state.insert_deltas)
    inserts = [(f.path, f.size, False) for f in state.original_files]
    inserts += [(f.path, f.size, not d.is_raw) for d in dirs for f in d.files]
    deletes = [(f.path, f.size, True) for d in state.delete_deltas for f in d.files]
    sizes = [size for _, size, _ in inserts + deletes]
    count: Callable[[list[tuple[str, int, bool]]], int | None] = (
        (lambda files: None)
        if not count_rows
        else (lambda files: sum(count_plain_rows(fs, p, plain) for p, _, _ in files))
        if plain is not None  # an insert-only table's plain files
        else (lambda files: sum(OrcDataFile(fs, p, expect_acid=a).num_rows for p, _, a in files))
    )
    return PartitionLayout(
        partition,
        len(state.insert_deltas),
        len(state.delete_deltas),
        len(sizes),
        sum(sizes),
        sum(size for _, size, _ in inserts),
        sum(1 for s in sizes if s < small_file_bytes),
        len(state.obsolete) + len(state.aborted),
        count(inserts),
        count(deletes),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


__all__ = [
    "SMALL_FILE_BYTES",
    "STATUS_SCHEMA",
    "CompactionBacklog",
    "HealthReport",
    "OpenTxn",
    "PartitionHealth",
    "PartitionLayout",
    "health_report",
    "partition_layouts",
]
