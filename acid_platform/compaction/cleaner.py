"""The cleaner: deletes what compactions made obsolete, once no reader can need it (Hive 4 rule).

For each entry the metastore offers as ready (no open txn older than the compaction's commit,
``CQ_NEXT_TXN_ID``, and no live reader lease whose snapshot misses the compactor's txn):

1. Build the cleaner's snapshot: the current ``ValidTxnList`` in which the compactor txns of
   compactions that are *not yet* safe to clean count as open (their output is not seen by
   every reader, so it must not make anything obsolete), and the table's write ids capped at
   the entry's highest write id (Hive's ``ValidCleanerWriteIdList``: a range above it is not
   valid, an aborted id above it is not aborted).
2. ``acid_state`` with that snapshot lists the obsolete directories (and original files) and
   the aborted ones (whole aborted deltas, and ``_v<T>`` output of failed or killed compactions,
   ``T`` aborted). They are deleted, with the hidden staging directories
   (``_tmp_compactor_<T>_…``, :mod:`.staging`) of compactor txns no longer open.
3. The same selection is taken again: only if nothing obsolete or aborted remains, and no
   current delta still holds an aborted write id at or below the entry's highest write id, is
   the entry marked cleaned (the metastore then forgets aborted write ids up to that id). Else
   it stays ready for cleaning and the next run finishes the job: cleaning is idempotent.

Besides, :meth:`Cleaner.clean_aborted` removes aborted-only directories (and orphaned output of
failed compactions) of partitions with aborted writes, without waiting for a compaction; it
never touches metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow.fs as pafs

from acid_platform.compaction.config import CompactorConf
from acid_platform.compaction.context import CompactionContext
from acid_platform.compaction.hooks import checkpoint
from acid_platform.compaction.staging import is_compacted_dir, leftover_staging
from acid_platform.errors import (
    FileRecordError,
    MetastoreError,
    NoSuchObjectError,
    NotEnoughHistoryError,
)
from acid_platform.format import (
    AcidDir,
    AcidState,
    CleanerWriteIdList,
    OriginalFile,
    RangeResponse,
    ValidTxnList,
    ValidWriteIdList,
    acid_state,
    parse_acid_dir_name,
)
from acid_platform.format.file_record import PartitionRecord
from acid_platform.format.fs import basename
from acid_platform.format.names import ParsedBase, is_hidden
from acid_platform.metastore import CompactionInfo, Metastore, TableSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CleanedEntry:
    """What the cleaner did for one ready-for-cleaning entry.

    ``cleaned``: the entry was marked cleaned (now ``succeeded``). ``removed``: paths deleted.
    """

    id: int
    db: str
    table: str
    partition: str | None
    cleaned: bool
    removed: tuple[str, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class CleanerReport:
    """One cleaner pass: entries handled and aborted directories swept."""

    entries: tuple[CleanedEntry, ...] = ()
    aborted_removed: tuple[str, ...] = ()

    @property
    def removed(self) -> tuple[str, ...]:
        """Every path deleted in this pass."""
        return tuple(p for e in self.entries for p in e.removed) + self.aborted_removed

    @property
    def cleaned_ids(self) -> tuple[int, ...]:
        return tuple(e.id for e in self.entries if e.cleaned)


class Cleaner:
    """Runs cleaning passes over the metastore's ready-for-cleaning entries."""

    def __init__(self, target: object, conf: CompactorConf | None = None) -> None:
        self.ctx = CompactionContext.of(target, conf)  # type: ignore[arg-type]

    @property
    def metastore(self) -> Metastore:
        return self.ctx.metastore

    def run(self, *, sweep_aborted: bool = True) -> CleanerReport:
        """Clean every ready entry (lowest write id first per partition, repeatedly), then
        sweep aborted directories, and purge the txn history no one needs any more (aborted
        txns whose writes the cleaning removed). Timed-out txns are reaped first: a dead
        client's open txn would otherwise hold back every entry."""
        self.metastore.reap_timed_out()
        entries: list[CleanedEntry] = []
        tried: set[int] = set()
        while True:
            ready = [c for c in self.metastore.find_ready_to_clean() if c.id not in tried]
            if not ready:
                break
            for info in ready:
                tried.add(info.id)
                entries.append(self.clean(info))
        swept = self.clean_aborted() if sweep_aborted else []
        self.metastore.purge_txn_history()
        return CleanerReport(tuple(entries), tuple(swept))

    def clean(self, info: CompactionInfo) -> CleanedEntry:
        """Clean one ready entry (see the module docs); never raises for a missing table."""
        ms = self.metastore
        try:
            spec = ms.get_table(info.db, info.table)
            if info.partition is not None and info.partition not in ms.list_partitions(
                spec.db, spec.name
            ):
                raise NoSuchObjectError(f"partition {info.partition} of {spec.full_name}")
        except NoSuchObjectError as exc:
            ms.mark_cleaned(info.id)  # dropped meanwhile: nothing left to clean (Hive does so)
            return _entry(info, True, (), f"{exc}; nothing to clean")
        txns = self._cleaner_txns()
        reader = ms.valid_write_ids(None, spec.db, spec.name, valid_txns=txns)
        location = self.ctx.location(spec, info.partition)
        fs, path = location.filesystem, location.path
        cap = info.highest_write_id or 0
        partition = info.partition or ""
        record = ms.recorded_files(spec.db, spec.name).partition(partition)
        try:
            state, cap = _cleaner_state(fs, path, reader, txns, cap, record, spec.is_insert_only)
        except FileRecordError as exc:
            # what the snapshot reads is not what was committed: deleting the obsolete files
            # could destroy the only copy left; `acid fsck` reports and repairs it first
            return _entry(info, False, (), f"refused: {type(exc).__name__}: {exc}")
        doomed = _doomed(state)
        checkpoint("cleaner.selected")
        removed = _delete(fs, doomed, "cleaner.deleted_one")
        removed += _delete(fs, leftover_staging(fs, path, _is_open(txns)), None)
        ms.forget_recorded(spec.db, spec.name, partition, [basename(p) for p in removed])
        checkpoint("cleaner.deleted_all")
        after, _ = _cleaner_state(fs, path, reader, txns, cap, None, spec.is_insert_only)
        left = _doomed(after)
        if left:
            return _entry(info, False, removed, f"{len(left)} obsolete path(s) remain: {left[:3]}")
        if _uncompacted_aborts(after, CleanerWriteIdList.from_reader(reader, cap)):
            return _entry(
                info,
                False,
                removed,
                "a current delta still holds aborted write ids at or below "
                f"{cap}; their metadata must stay, so the entry stays ready for cleaning",
            )
        try:
            ms.mark_cleaned(info.id)
        except MetastoreError as exc:  # another cleaner finished it meanwhile
            return _entry(info, False, removed, f"not marked cleaned: {exc}")
        checkpoint("cleaner.marked")
        log.info("cleaned compaction %s: removed %d path(s)", info.id, len(removed))
        return _entry(info, True, removed, f"removed {len(removed)} path(s)")

    def clean_aborted(self) -> list[str]:
        """Delete aborted-only directories and output of failed/killed compactions.

        Looks at partitions with writes of aborted txns and partitions with failed compactions.
        Deleting what only aborted txns wrote is always safe: no snapshot reads it.
        """
        ms = self.metastore
        places = {(a.db, a.table, a.partition) for a in ms.write_activity() if a.aborted_txns}
        places |= {
            (row["Database"], row["Table"], row["Partition"])
            for row in ms.show_compactions()
            if row["State"] == "failed"
        }
        removed: list[str] = []
        txns = self._cleaner_txns()
        for db, table, partition in sorted(places, key=lambda p: (p[0], p[1], p[2] or "")):
            spec = _table_or_none(ms, db, table)
            if spec is None:
                continue
            location = self.ctx.location(spec, partition)
            reader = ms.valid_write_ids(None, spec.db, spec.name, valid_txns=txns)
            try:
                state = acid_state(
                    location.path,
                    CleanerWriteIdList.from_reader(reader),
                    txns,
                    filesystem=location.filesystem,
                    ignore_empty_files=False,
                    insert_only=spec.is_insert_only,
                )
            except NotEnoughHistoryError:
                continue
            removed += _delete(location.filesystem, [d.path for d in state.aborted], None)
            staged = leftover_staging(location.filesystem, location.path, _is_open(txns))
            removed += _delete(location.filesystem, staged, None)
        return removed

    # ------------------------------------------------------------------ helpers
    def _cleaner_txns(self) -> ValidTxnList:
        """The current snapshot, with compactor txns of not-yet-cleanable entries as open."""
        ms = self.metastore
        ready = {c.txn_id for c in ms.find_ready_to_clean()}
        hidden = {
            int(row["TxnId"])
            for row in ms.show_compactions()
            if row["State"] == "ready for cleaning" and row["TxnId"] is not None
        } - ready
        now = ms.valid_txns()
        open_ids = sorted(set(now.open_txns) | {t for t in hidden if t <= now.high_watermark})
        return ValidTxnList(
            now.high_watermark, open_ids, now.aborted_txns, open_ids[0] if open_ids else None
        )


def _is_open(txns: ValidTxnList) -> Callable[[int], bool]:
    """Whether a txn may still be running: open in ``txns``, or opened after it was taken."""
    open_ids = set(txns.open_txns)
    return lambda txn: txn in open_ids or txn > txns.high_watermark


def _cleaner_state(
    fs: pafs.FileSystem,
    path: str,
    reader: ValidWriteIdList,
    txns: ValidTxnList,
    cap: int,
    record: PartitionRecord | None = None,
    insert_only: bool = False,
) -> tuple[AcidState, int]:
    """acid_state with the capped cleaner list.

    When the cap leaves only compacted bases newer than it (``NotEnoughHistoryError``), a later
    compaction visible to every reader already replaced everything: the cap rises to the oldest
    such base.
    """
    while True:
        try:
            state = acid_state(
                path,
                CleanerWriteIdList.from_reader(reader, cap),
                txns,
                filesystem=fs,
                ignore_empty_files=False,
                record=record,
                insert_only=insert_only,
            )
            return state, cap
        except NotEnoughHistoryError:
            bases = [b for b in _visible_compacted_bases(fs, path, txns) if b > cap]
            if not bases:
                raise
            cap = min(bases)


def _visible_compacted_bases(fs: pafs.FileSystem, path: str, txns: ValidTxnList) -> list[int]:
    out = []
    for entry in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        if entry.type != pafs.FileType.Directory or is_hidden(entry.base_name):
            continue
        parsed = parse_acid_dir_name(entry.base_name)
        if not isinstance(parsed, ParsedBase):
            continue
        if parsed.visibility_txn_id > 0:
            if txns.is_txn_valid(parsed.visibility_txn_id):
                out.append(parsed.write_id)
        elif is_compacted_dir(fs, entry.path):  # Hive 3 names: visible once renamed
            out.append(parsed.write_id)
    return out


def _uncompacted_aborts(state: AcidState, ids: ValidWriteIdList) -> bool:
    """Whether a current delta not written by a compactor mixes aborted and committed ids (at or
    below the list's watermark). Compactor output never holds aborted events."""
    return any(
        not d.is_compacted  # a _v suffix or Hive 3's compacted marker (acid.compactor.hive3.*)
        and ids.is_write_id_range_aborted(d.min_write_id, d.max_write_id) is RangeResponse.SOME
        for d in state.deltas
    )


def _doomed(state: AcidState) -> list[str]:
    paths: list[str] = []
    for item in (*state.obsolete, *state.aborted):
        if isinstance(item, AcidDir | OriginalFile) and item.path not in paths:
            paths.append(item.path)
    return paths


def _delete(fs: pafs.FileSystem, paths: Iterable[str], step: str | None) -> list[str]:
    removed: list[str] = []
    for path in paths:
        info = fs.get_file_info(path)
        try:
            if info.type == pafs.FileType.Directory:
                fs.delete_dir(path)
            elif info.type == pafs.FileType.File:
                fs.delete_file(path)
            else:
                continue
        except FileNotFoundError:
            continue
        removed.append(path)
        if step is not None and len(removed) == 1:
            checkpoint(step)
    return removed


def _table_or_none(ms: Metastore, db: str, table: str) -> TableSpec | None:
    try:
        return ms.get_table(db, table)
    except NoSuchObjectError:
        return None


def _entry(
    info: CompactionInfo, cleaned: bool, removed: Iterable[str], message: str
) -> CleanedEntry:
    return CleanedEntry(
        info.id, info.db, info.table, info.partition, cleaned, tuple(removed), message
    )


__all__ = ["CleanedEntry", "Cleaner", "CleanerReport"]
