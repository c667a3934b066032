"""Is a table's data right? Six consistency checks over what one snapshot reads.

:func:`verify_table` takes one snapshot (a reader lease, so the cleaner keeps the files), plans
the table's partitions with the scan planner, makes one pass over the event keys of the
selected files (:mod:`.verify_rows`) and answers each check with a :class:`Finding`:

``unique_row_ids``
    no ROW__ID is carried by two visible insert events;
``deletes_name_rows``
    every visible delete event names a row some visible insert event wrote;
``no_uncommitted_visible``
    no directory the snapshot reads belongs to an aborted or uncommitted transaction: a
    compactor's ``_v<txn>`` must be committed, and every write id of a writer's directory
    (above what cleaned compactions retired) must have a committed write recorded in the
    metastore — to the directory's partition, or for a delta spanning several write ids (a
    streaming batch's) to the table — a directory whose abort the metastore forgot would
    otherwise read as data;
``acid_version_present``
    each base and delta directory has ``_orc_acid_version`` and each event file carries
    ``hive.acid.version`` (what Hive 3+ and Trino require);
``row_count_matches_stats``
    the rows the snapshot sees equal ``inserts - deletes`` from the files' ``hive.acid.stats``;
``schema_matches_catalog``
    each file's row columns are the catalog's (a prefix of them for files older than an
    ``ADD COLUMNS``; same names unless Hive's ``_colN``, same types or a widening).

>>> # findings = verify_table(wh, "db.t"); [f.check for f in findings if not f.passed]
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.format import ORC_ACID_VERSION_FILE, AcidDir, Snapshot
from acid_platform.format.fs import join
from acid_platform.metastore import CompactionState, Metastore, TableSpec
from acid_platform.table.scan import PartitionFiles, plan_files
from acid_platform.table.schema import data_schema
from acid_platform.table.statement import read_snapshot
from acid_platform.table.verify_rows import EXAMPLES, RowTally, tally_partition
from acid_platform.table.warehouse import TableWarehouse

CHECKS = (
    "unique_row_ids",
    "deletes_name_rows",
    "no_uncommitted_visible",
    "acid_version_present",
    "row_count_matches_stats",
    "schema_matches_catalog",
)


@dataclass(frozen=True)
class Finding:
    """The answer of one check (or health measure): passed or not, why, and numbers to show."""

    check: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def verify_table(wh: TableWarehouse, name: str) -> list[Finding]:
    """Run the six checks (in :data:`CHECKS` order) on table ``name`` under one snapshot."""
    table = wh.table(name)
    spec = table.spec
    location = table.location
    with read_snapshot(wh, [spec]) as snapshots:
        snapshot = snapshots[spec.full_name]
        # the files against their record are fsck's check (files_match_record): these read
        # what is there, as Hive would
        partitions = plan_files(spec, location, dataclasses.replace(snapshot, files=None))
        fs = location.filesystem
        rows = RowTally()
        # an insert-only table's plain files hold no ROW__IDs, delete events, ACID stats or
        # version markers: of the six checks only the uncommitted-directories one applies
        acid = not spec.is_insert_only
        for part in partitions if acid else []:
            rows.add(tally_partition(fs, part.state, snapshot.write_ids, _where(spec, part)))
        uncommitted = _uncommitted(wh.metastore, spec, partitions, snapshot)
        no_marker = _missing_markers(fs, partitions) if acid else []
    base = {"table": spec.full_name, "partitions": len(partitions), "files": rows.files}
    return [
        _finding(
            "unique_row_ids",
            rows.duplicates,
            rows.duplicate_examples,
            "duplicate ROW__ID(s)",
            {**base, "duplicate_row_ids": rows.duplicates},
        ),
        _finding(
            "deletes_name_rows",
            rows.dangling_deletes,
            rows.dangling_examples,
            "delete event(s) naming no visible row",
            {**base, "dangling_deletes": rows.dangling_deletes},
        ),
        _finding(
            "no_uncommitted_visible",
            len(uncommitted),
            uncommitted,
            "visible directory(ies) of an aborted or uncommitted transaction",
            {**base, "uncommitted_visible": len(uncommitted)},
        ),
        _finding(
            "acid_version_present",
            len(no_marker) + len(rows.missing_acid_version),
            no_marker + [f"{p}: no hive.acid.version" for p in rows.missing_acid_version],
            "missing ACID version marker(s)",
            {
                **base,
                "dirs_without_orc_acid_version": len(no_marker),
                "files_without_hive_acid_version": len(rows.missing_acid_version),
            },
        ),
        _count_finding(rows, base),
        _schema_finding(spec, rows, base),
    ]


# --------------------------------------------------------------------------- the checks


def _uncommitted(
    ms: Metastore, spec: TableSpec, partitions: list[PartitionFiles], snapshot: Snapshot
) -> list[str]:
    problems: list[str] = []
    ids, txns = snapshot.write_ids, snapshot.valid_txns
    # A streaming batch's delta spans its write ids in every partition it wrote, but a
    # transaction of the batch may have written rows to only some of them: there, a write id
    # of the batch needs a committed write to the table, not to that partition.
    in_table = ms.committed_write_ids(spec.db, spec.name) if spec.is_partitioned else set()
    for part in partitions:
        name = part.name or None
        committed = ms.committed_write_ids(spec.db, spec.name, name)
        retired = max(
            (
                c.highest_write_id or 0
                for c in ms.compaction_history(spec.db, spec.name, name)
                if c.state == CompactionState.SUCCEEDED
            ),
            default=0,
        )
        for d in _dirs(part):
            if d.max_write_id > ids.high_watermark:
                problems.append(
                    f"{d.path}: write id {d.max_write_id} is above the table's "
                    f"high-water mark {ids.high_watermark}"
                )
            if d.visibility_txn_id > 0:
                if txns is not None and not txns.is_txn_valid(d.visibility_txn_id):
                    problems.append(
                        f"{d.path}: compactor txn {d.visibility_txn_id} is not committed"
                    )
                continue
            wids = [d.write_id] if d.is_base else range(d.min_write_id, d.max_write_id + 1)
            known = committed | in_table if len(wids) > 1 else committed
            unknown = [
                w for w in wids if w > retired and ids.is_write_id_valid(w) and w not in known
            ]
            if unknown:
                problems.append(
                    f"{d.path}: write id(s) {unknown[:EXAMPLES]} read as committed but the "
                    "metastore records no committed write (an aborted or lost transaction)"
                )
    return problems


def _missing_markers(fs: pafs.FileSystem, partitions: list[PartitionFiles]) -> list[str]:
    missing = []
    for part in partitions:
        for d in _dirs(part):
            if d.is_raw:
                continue
            info = fs.get_file_info(join(d.path, ORC_ACID_VERSION_FILE))
            if info.type != pafs.FileType.File:
                missing.append(f"{d.path}: no {ORC_ACID_VERSION_FILE}")
    return missing


def _count_finding(rows: RowTally, base: dict[str, Any]) -> Finding:
    passed = rows.visible_rows == rows.expected_rows
    metadata = {
        **base,
        "visible_rows": rows.visible_rows,
        "stats_inserts": rows.insert_events,
        "stats_deletes": rows.delete_events,
        "original_rows": rows.original_rows,
    }
    text = (
        f"{rows.visible_rows} visible row(s) "
        f"{'=' if passed else '!='} inserts {rows.insert_events} - deletes {rows.delete_events}"
        + (f" + {rows.original_rows} original row(s)" if rows.original_rows else "")
    )
    return Finding("row_count_matches_stats", passed, text, metadata)


def _schema_finding(spec: TableSpec, rows: RowTally, base: dict[str, Any]) -> Finding:
    catalog = [(f.name, f.type) for f in data_schema(spec)]
    bad = []
    for path, columns in sorted(rows.file_schemas.items()):
        why = schema_difference(columns, catalog)
        if why:
            bad.append(f"{path}: {why}")
    return _finding(
        "schema_matches_catalog",
        len(bad),
        bad,
        "file(s) whose columns differ from the catalog's",
        {**base, "catalog_columns": len(catalog), "mismatched_files": len(bad)},
    )


def schema_difference(
    columns: list[tuple[str, pa.DataType]], catalog: list[tuple[str, pa.DataType]]
) -> str | None:
    """Why a file's row columns are not the catalog's (``None`` if they are)."""
    if len(columns) > len(catalog):
        return f"{len(columns)} columns, the catalog has {len(catalog)}"
    for i, ((name, typ), (want_name, want_type)) in enumerate(zip(columns, catalog, strict=False)):
        if name.lower() != want_name.lower() and not _POSITIONAL.fullmatch(name):
            return f"column {i} is {name!r}, the catalog's is {want_name!r}"
        if typ != want_type and not _widens(typ, want_type):
            return f"column {want_name!r} is {typ} in the file, {want_type} in the catalog"
    return None


# --------------------------------------------------------------------------- helpers

_POSITIONAL = re.compile(r"_col\d+")
_WIDER = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    if source in _WIDER and target in _WIDER:
        return _WIDER.index(source) <= _WIDER.index(target)
    return pa.types.is_float32(source) and pa.types.is_float64(target)


def _dirs(part: PartitionFiles) -> list[AcidDir]:
    state = part.state
    return ([state.base] if state.base is not None else []) + list(state.deltas)


def _where(spec: TableSpec, part: PartitionFiles) -> str:
    return spec.full_name + (f" {part.name}" if part.name else "")


def _finding(
    check: str, count: int, examples: list[str], what: str, metadata: dict[str, Any]
) -> Finding:
    if not count:
        return Finding(check, True, f"no {what}", metadata)
    shown = "; ".join(examples[:EXAMPLES])
    return Finding(check, False, f"{count} {what}: {shown}", metadata)


__all__ = ["CHECKS", "Finding", "schema_difference", "verify_table"]
