"""Directory selection: which base, deltas and original files make up a snapshot.

This is Hive's ``AcidUtils.getAcidState``. Readers, writers, the compactor and the cleaner all
decide what exists by running it over one listing of a partition directory with a snapshot:

* the best **base**: the newest ``base_N`` usable by the snapshot; a compactor base (``_v`` suffix
  or ``_metadata_acid`` saying ``compacted``) wins over an INSERT OVERWRITE base with the same N;
* the **deltas** (insert and delete) that add to it, widest first, shadowing the narrower deltas
  a minor compaction covered;
* the **original files** (pre-ACID data) when there is no base, sorted by path;
* what became **obsolete** (covered by something newer) and what was **aborted**, for the cleaner.

One recursive listing is taken through ``pyarrow.fs``; files are opened only to read a
``_metadata_acid`` marker where one exists. ORC files are never opened.

>>> from acid_platform.format.write_id_list import ValidWriteIdList
>>> state = acid_state("/no/such/table", ValidWriteIdList.parse("db.t:5:9223372036854775807::"))
>>> state.base is None and state.deltas == ()
True
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from acid_platform.errors import InvalidNameError, NotEnoughHistoryError
from acid_platform.format.file_record import (
    MISSING,
    UNEXPECTED,
    FileProblem,
    PartitionRecord,
    RecordedDir,
    compare_files,
)
from acid_platform.format.fs import basename, join, resolve
from acid_platform.format.id_list import RangeResponse
from acid_platform.format.listing import (
    AcidDir,
    AcidDirBuilder,
    AcidFile,
    OriginalFile,
    list_partition,
)
from acid_platform.format.names import (
    LONG_MIN,
    is_acid_dir_name,
    is_hidden,
    parse_acid_dir_name,
)
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidWriteIdList

__all__ = [
    "AcidDir",
    "AcidFile",
    "AcidState",
    "OriginalFile",
    "acid_state",
    "is_acid_dir_name",
    "list_partition_dirs",
    "record_problems",
]


@dataclass(frozen=True)
class AcidState:
    """What a snapshot reads in one partition directory, and what the cleaner may remove.

    ``deltas`` holds insert and delete deltas in Hive's order (min write id, then wider first,
    then statement id, then path). ``obsolete`` lists bases and deltas covered by newer ones and,
    when a base exists, the original files. ``aborted`` lists directories written by aborted
    transactions. ``has_uncompacted_aborts`` is set when a delta mixes aborted and committed
    write ids, so the aborted ids' metadata must outlive the directory cleanup.
    """

    base: AcidDir | None
    deltas: tuple[AcidDir, ...]
    original_files: tuple[OriginalFile, ...]
    obsolete: tuple[AcidDir | OriginalFile, ...] = ()
    aborted: tuple[AcidDir, ...] = ()
    has_uncompacted_aborts: bool = False

    @property
    def insert_deltas(self) -> tuple[AcidDir, ...]:
        """The ``delta_…`` directories, in order."""
        return tuple(d for d in self.deltas if not d.is_delete)

    @property
    def delete_deltas(self) -> tuple[AcidDir, ...]:
        """The ``delete_delta_…`` directories, in order."""
        return tuple(d for d in self.deltas if d.is_delete)


def acid_state(
    path: str | os.PathLike[str],
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
    ignore_empty_files: bool = True,
    record: PartitionRecord | None = None,
    insert_only: bool = False,
) -> AcidState:
    """Select the base, deltas and original files of one partition for a snapshot.

    ``write_ids`` is the table's snapshot (a ``ValidCompactorWriteIdList`` for the compactor).
    ``txns`` is needed to judge ``_v<txn>`` suffixes; ``None`` treats every suffix as visible.
    ``ignore_empty_files`` drops 0-byte original files, as Hive's and Trino's readers do; the
    cleaner passes ``False``.

    A missing directory gives an empty state (a table or partition with no data yet). A
    directory named like a base/delta whose name does not parse raises ``InvalidNameError``.
    Raises ``NotEnoughHistoryError`` when the only bases are compactor bases newer than what
    the snapshot may see. ``insert_only``: the directory is an insert-only table's, whose
    base and delta directories hold plain data files (every non-hidden file). With ``record`` (what committed writes recorded in this partition,
    see :mod:`.file_record`) the selection is checked against it: a missing, unexpected or
    resized file raises a :class:`~acid_platform.errors.FileRecordError` naming it.
    """
    state, problems = _state_and_problems(
        path, write_ids, txns, filesystem, ignore_empty_files, record, insert_only
    )
    if problems:
        raise problems[0].error()
    return state


def record_problems(
    path: str | os.PathLike[str],
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None,
    record: PartitionRecord,
    *,
    filesystem: pafs.FileSystem | None = None,
    insert_only: bool = False,
) -> list[FileProblem]:
    """Every difference between the partition at ``path`` and its ``record``, for the
    snapshot (what ``acid fsck`` reports; :func:`acid_state` raises the first)."""
    return _state_and_problems(path, write_ids, txns, filesystem, True, record, insert_only)[1]


def _state_and_problems(
    path: str | os.PathLike[str],
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None,
    filesystem: pafs.FileSystem | None,
    ignore_empty_files: bool,
    record: PartitionRecord | None,
    insert_only: bool = False,
) -> tuple[AcidState, list[FileProblem]]:
    location = resolve(path, filesystem)
    listing = list_partition(location.filesystem, location.path)
    builder = AcidDirBuilder(location.filesystem, insert_only=insert_only)
    selection = _Selection(write_ids, txns)
    built = [builder.build(e) for e in sorted(listing.acid_dirs.values(), key=lambda e: e.name)]
    for acid_dir in built:
        if acid_dir.is_base:
            selection.add_base(acid_dir)
        else:
            selection.add_delta(acid_dir)

    originals = sorted(
        (f for f in listing.original_files if f.size > 0 or not ignore_empty_files),
        key=lambda f: f.path,
    )
    selection.check_history()
    obsolete: list[AcidDir | OriginalFile] = list(selection.obsolete)
    if selection.base is not None:
        obsolete.extend(originals)
        originals = []
    deltas, shadowed = selection.best_working_deltas()
    obsolete.extend(shadowed)
    state = AcidState(
        base=selection.base,
        deltas=tuple(deltas),
        original_files=tuple(originals),
        obsolete=tuple(obsolete),
        aborted=tuple(selection.aborted),
        has_uncompacted_aborts=selection.has_uncompacted_aborts,
    )
    if record is None:
        return state, []
    return state, _check_record(location.path, built, state, record, write_ids, txns)


def _check_record(
    root: str,
    built: Sequence[AcidDir],
    state: AcidState,
    record: PartitionRecord,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None,
) -> list[FileProblem]:
    """What the snapshot should read by the record (recorded directories, plus those of write
    ids nobody recorded) against what it reads on disk."""
    expected = _Selection(write_ids, txns)
    compacted = {d.name for d in built if d.is_compacted}
    for acid_dir in [
        *(_recorded_dir(root, r, r.name in compacted) for r in record.dirs.values()),
        *(d for d in built if d.name not in record.dirs and not _stray(d, record)),
    ]:
        if acid_dir.is_base:
            expected.add_base(acid_dir)
        else:
            expected.add_delta(acid_dir)
    wanted = [expected.base] if expected.base is not None else []
    wanted += expected.best_working_deltas()[0]
    on_disk = {d.name for d in built}
    problems = [
        FileProblem(MISSING, d.path, "committed directory is missing")
        for d in wanted
        if d.name not in on_disk
    ]
    wanted_names = {d.name for d in wanted}
    read = [state.base] if state.base is not None else []
    for acid_dir in [*read, *state.deltas]:
        recorded = record.dirs.get(acid_dir.name)
        if acid_dir.name not in wanted_names:
            problems.append(
                FileProblem(UNEXPECTED, acid_dir.path, "no committed write wrote this directory")
            )
        elif recorded is not None:
            sizes = {f.name: f.size for f in acid_dir.files}
            still_written = [f.name for f in acid_dir.files if f.flush_length_path]
            problems += compare_files(acid_dir.path, sizes, recorded, still_written)
    return problems


def _stray(acid_dir: AcidDir, record: PartitionRecord) -> bool:
    """An unrecorded directory holding the very write ids of a recorded one is a stray copy,
    unless a compactor wrote it under Hive 3's names (``_metadata_acid`` says ``compacted``, no
    ``_v``): the output of a compaction killed between its rename and its commit, which holds
    the rows of the directories it replaces."""
    hive3_output = acid_dir.is_compacted and acid_dir.visibility_txn_id <= 0
    return record.covers(acid_dir.name) and not hive3_output


def _recorded_dir(root: str, recorded: RecordedDir, compacted: bool = False) -> AcidDir:
    """A recorded directory as the selection sees it (``compacted``: its ``_metadata_acid`` on
    disk says so; the record does not keep it)."""
    parsed = parse_acid_dir_name(recorded.name)
    if parsed is None:
        raise InvalidNameError(f"recorded directory {recorded.name!r} is not a base/delta name")
    path = join(root, recorded.name)
    files = tuple(
        AcidFile(join(path, name), size, -1) for name, size in sorted(recorded.files.items())
    )
    return AcidDir(path, parsed, files, False, compacted or parsed.visibility_txn_id > 0)


def list_partition_dirs(
    table_path: str | os.PathLike[str],
    partition_columns: Sequence[str],
    filesystem: pafs.FileSystem | None = None,
) -> list[tuple[str, str]]:
    """The ``k1=v1/k2=v2`` partition directories of a table, as ``(partition_name, path)``.

    Walks one level per partition column, keeping directories named ``<column>=<value>``
    (column compared case-insensitively, values left escaped as Hive wrote them), sorted by
    partition name. An unpartitioned table gives ``[("", table_path)]``.
    """
    location = resolve(table_path, filesystem)
    fs = location.filesystem
    level = [("", location.path)]
    for column in partition_columns:
        next_level: list[tuple[str, str]] = []
        for name, path in level:
            selector = pafs.FileSelector(path, allow_not_found=True)
            for info in fs.get_file_info(selector):
                child = basename(info.path)
                key, sep, _ = child.partition("=")
                if (
                    info.type == pafs.FileType.Directory
                    and not is_hidden(child)
                    and sep
                    and key.lower() == column.lower()
                ):
                    next_level.append((f"{name}/{child}" if name else child, info.path))
        level = next_level
    return sorted(level)


# --------------------------------------------------------------------------- selection


class _Selection:
    """The running state of getAcidState over the directories of one partition."""

    def __init__(self, write_ids: ValidWriteIdList, txns: ValidTxnList | None) -> None:
        self.write_ids = write_ids
        self.txns = txns
        self.base: AcidDir | None = None
        self.oldest_base: AcidDir | None = None
        self.candidates: list[AcidDir] = []
        self.obsolete: list[AcidDir] = []
        self.aborted: list[AcidDir] = []
        self.has_uncompacted_aborts = False

    def add_base(self, base: AcidDir) -> None:
        """Hive's processBaseDir."""
        if not self._is_visible(base):
            return
        if self.oldest_base is None or self.oldest_base.write_id > base.write_id:
            self.oldest_base = base
        if self.write_ids.is_write_id_aborted(base.write_id) and not base.is_compacted:
            self.aborted.append(base)  # an aborted INSERT OVERWRITE
            return
        best = self.base
        if (
            best is None
            or best.write_id < base.write_id
            # Compactor output wins over an INSERT OVERWRITE base of the same write id.
            or (best.write_id == base.write_id and base.is_compacted and self._txn_valid(base))
        ):
            if self._is_valid_base(base):
                if best is not None:
                    self.obsolete.append(best)
                self.base = base
            # A better base the snapshot cannot use is neither current nor obsolete.
        else:
            self.obsolete.append(base)

    def add_delta(self, delta: AcidDir) -> None:
        """Hive's processDeltaDir."""
        if not self._is_visible(delta):
            return
        low, high = delta.min_write_id, delta.max_write_id
        aborted = self.write_ids.is_write_id_range_aborted(low, high)
        if aborted is RangeResponse.ALL:
            self.aborted.append(delta)
            return
        if aborted is RangeResponse.SOME:
            self.has_uncompacted_aborts = True
        if self.write_ids.is_write_id_range_valid(low, high) is not RangeResponse.NONE:
            self.candidates.append(delta)

    def check_history(self) -> None:
        """Fail when only compactor bases exist and none is usable by the snapshot."""
        oldest = self.oldest_base
        if self.base is not None or oldest is None or not oldest.is_compacted:
            return
        exceptions = self.write_ids.exceptions
        first = str(exceptions[0]) if exceptions else "x"
        raise NotEnoughHistoryError(
            f"Not enough history available for ({self.write_ids.high_watermark},{first}). "
            f"Oldest available base: {oldest.path}. The snapshot {self.write_ids} is older "
            "than the compaction that wrote it; read again with a newer snapshot"
        )

    def best_working_deltas(self) -> tuple[list[AcidDir], list[AcidDir]]:
        """Hive's findBestWorkingDeltas: the deltas to read and the ones they shadow."""
        ordered = sorted(self.candidates, key=_delta_order)
        current = 0 if self.base is None else self.base.write_id
        last_statement_id = -1
        prev: AcidDir | None = None
        kept: list[AcidDir] = []
        shadowed: list[AcidDir] = []
        for delta in ordered:
            if delta.max_write_id > current:
                # Does it hold any write id past what we have that the snapshot sees?
                new_range = self.write_ids.is_write_id_range_valid(current + 1, delta.max_write_id)
                if new_range is not RangeResponse.NONE:
                    kept.append(delta)
                    current = delta.max_write_id
                    last_statement_id = delta.statement_id
                    prev = delta
            elif delta.max_write_id == current and last_statement_id >= 0:
                # Another statement of the same multi-statement transaction.
                kept.append(delta)
                prev = delta
            elif prev is not None and _same_range(prev, delta):
                # The delete_delta twin of a kept delta (or the other way round).
                kept.append(delta)
                prev = delta
            else:
                shadowed.append(delta)
        return kept, shadowed

    def _is_valid_base(self, base: AcidDir) -> bool:
        # Hive 4's isValidBase without its "write id <= min open write id" shortcut, which Hive
        # removed (HIVE-29601): it let a base of an open write id be read.
        if base.write_id == LONG_MIN:
            return True  # the first compaction after a non-ACID to ACID conversion
        if base.is_compacted:
            return self.write_ids.is_valid_base(base.write_id)
        return self.write_ids.is_write_id_valid(base.write_id)  # INSERT OVERWRITE

    def _is_visible(self, acid_dir: AcidDir) -> bool:
        # Hive's isDirUsable: a _v<txn> directory counts once its txn committed.
        if self._txn_valid(acid_dir):
            return True
        if self.txns is not None and self.txns.is_txn_aborted(acid_dir.visibility_txn_id):
            self.aborted.append(acid_dir)
        return False

    def _txn_valid(self, acid_dir: AcidDir) -> bool:
        return self.txns is None or self.txns.is_txn_valid(acid_dir.visibility_txn_id)


def _delta_order(delta: AcidDir) -> tuple[int, int, int, str]:
    # ParsedDeltaLight.compareTo: wider deltas first, "no statement id" (-1) first, then path,
    # so delete_delta_X sorts before delta_X.
    return delta.min_write_id, -delta.max_write_id, delta.statement_id, delta.path


def _same_range(a: AcidDir, b: AcidDir) -> bool:
    return (
        a.min_write_id == b.min_write_id
        and a.max_write_id == b.max_write_id
        and a.statement_id == b.statement_id
    )
