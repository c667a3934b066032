"""The row-level half of :mod:`.verify`: one pass over the event keys of the files a snapshot
reads in one partition, bucket by bucket.

For each bucket, the ROW__IDs (``originalTransaction``, ``bucket``, ``rowId``) of the visible
insert events and of the visible delete events are read (key columns only), together with each
file's ORC metadata (``hive.acid.version``, ``hive.acid.stats``) and row schema. From them:

* **duplicates**: a ROW__ID carried by two visible insert events;
* **dangling deletes**: a visible delete event whose ROW__ID no visible insert event carries
  (deletes of original files' synthetic ROW__IDs are not judged);
* **counts**: rows the snapshot sees (insert events not deleted, plus rows of original files)
  against ``inserts - deletes`` from the files' ``hive.acid.stats`` (events of write ids the
  snapshot does not see are counted by reading, where a directory mixes them).

Memory is bounded by the largest bucket's keys (24 bytes per event).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po

from acid_platform.errors import MissingAcidVersionError
from acid_platform.format import AcidDir, AcidState, OrcDataFile, RangeResponse, ValidWriteIdList
from acid_platform.format import types as t
from acid_platform.format.file_reader import valid_write_id_mask
from acid_platform.format.flush_length import read_flush_length
from acid_platform.format.writer import ACID_STATS_KEY

#: Examples kept per kind of problem (everything is counted).
EXAMPLES = 5
_KEYS = [t.ORIGINAL_TRANSACTION, t.BUCKET, t.ROW_ID, t.CURRENT_TRANSACTION]


@dataclass
class RowTally:
    """What the row pass found in one or more partitions (:meth:`add` merges)."""

    files: int = 0
    insert_events: int = 0  # from hive.acid.stats (or counted)
    delete_events: int = 0
    original_rows: int = 0
    visible_rows: int = 0  # merge-on-read: insert events not deleted, plus original rows
    duplicates: int = 0
    dangling_deletes: int = 0
    duplicate_examples: list[str] = field(default_factory=list)
    dangling_examples: list[str] = field(default_factory=list)
    missing_acid_version: list[str] = field(default_factory=list)  # files, hive.acid.version
    file_schemas: dict[str, list[tuple[str, pa.DataType]]] = field(default_factory=dict)

    @property
    def expected_rows(self) -> int:
        """``inserts - deletes`` from the files' acid stats, plus original rows."""
        return self.insert_events - self.delete_events + self.original_rows

    def add(self, other: RowTally) -> None:
        for name in (
            "files",
            "insert_events",
            "delete_events",
            "original_rows",
            "visible_rows",
            "duplicates",
            "dangling_deletes",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("duplicate_examples", "dangling_examples", "missing_acid_version"):
            getattr(self, name).extend(getattr(other, name))
        self.file_schemas.update(other.file_schemas)


def tally_partition(
    fs: pafs.FileSystem, state: AcidState, write_ids: ValidWriteIdList, where: str
) -> RowTally:
    """The row pass over one partition's selected files (see the module docs)."""
    tally = RowTally()
    for f in state.original_files:
        with OrcDataFile(fs, f.path, expect_acid=False) as orc:
            tally.files += 1
            tally.original_rows += orc.num_rows
            tally.file_schemas[f.path] = [(x.name, x.type) for x in orc.row_schema]
    inserts: dict[int, list[pa.Table]] = defaultdict(list)
    deletes: dict[int, list[pa.Table]] = defaultdict(list)
    synthetic = {0}
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    for d in dirs:
        if d.is_raw:  # LOAD DATA: plain rows with synthetic ROW__IDs
            synthetic.add(d.write_id if d.is_base else d.min_write_id)
            for af in d.files:
                with OrcDataFile(fs, af.path, expect_acid=False) as orc:
                    tally.files += 1
                    tally.original_rows += orc.num_rows
            continue
        mixed = not d.is_base and _mixes(write_ids, d)
        for af in d.files:
            read = _read_file(fs, af.path, af.flush_length_path, d, tally)
            if read is None:
                continue
            keys, stats, schema = read
            tally.files += 1
            tally.file_schemas[af.path] = schema
            valid = valid_write_id_mask(
                keys.column(3).to_numpy(),
                write_ids.high_watermark,
                np.asarray(write_ids.exceptions, np.int64),
            )
            kept = keys.filter(pa.array(valid)).select([0, 1, 2])
            counted = stats if stats is not None and not mixed else None
            if d.is_delete:
                tally.delete_events += counted[2] if counted else kept.num_rows
                deletes[af.bucket_id].append(kept)
            else:
                tally.insert_events += counted[0] if counted else kept.num_rows
                inserts[af.bucket_id].append(kept)
    for bucket in sorted(set(inserts) | set(deletes)):
        _judge_bucket(tally, inserts.get(bucket, []), deletes.get(bucket, []), synthetic, where)
    tally.visible_rows += tally.original_rows
    return tally


def _judge_bucket(
    tally: RowTally,
    inserts: list[pa.Table],
    deletes: list[pa.Table],
    synthetic: set[int],
    where: str,
) -> None:
    names = ["o", "b", "r"]
    ins = _concat(inserts, names)
    dels = _concat(deletes, names)
    counts = ins.group_by(names).aggregate([([], "count_all")])
    dup = counts.filter(pc.greater(counts["count_all"], 1))
    tally.duplicates += int(pc.sum(dup["count_all"]).as_py() or 0) - dup.num_rows
    tally.duplicate_examples += [f"{where}: {_key(r)}" for r in _rows(dup)][:EXAMPLES]
    judged = dels.filter(pc.invert(pc.is_in(dels["o"], pa.array(sorted(synthetic), pa.int64()))))
    dangling = judged.join(ins, keys=names, join_type="left anti")
    tally.dangling_deletes += dangling.num_rows
    tally.dangling_examples += [f"{where}: {_key(r)}" for r in _rows(dangling)][:EXAMPLES]
    unique_deletes = dels.group_by(names).aggregate([])
    tally.visible_rows += ins.join(unique_deletes, keys=names, join_type="left anti").num_rows
    tally.visible_rows -= dels.num_rows - judged.num_rows  # deletes of original rows


def _read_file(
    fs: pafs.FileSystem, path: str, side_file: str | None, d: AcidDir, tally: RowTally
) -> tuple[pa.Table, tuple[int, int, int] | None, list[tuple[str, pa.DataType]]] | None:
    """Key columns, acid stats and row schema of one event file (a file without
    ``hive.acid.version`` is noted and read all the same); ``None`` for a streaming file with
    nothing committed yet."""
    length = read_flush_length(fs, side_file) if side_file is not None else None
    if length == 0:  # a streaming file with nothing committed yet
        return None
    try:
        with OrcDataFile(fs, path, logical_length=length, expect_acid=True) as orc:
            batches = [b for _, b in orc.iter_stripes(_KEYS)]
            keys = pa.Table.from_batches(batches, schema=_key_schema(orc.schema))
            schema = [(x.name, x.type) for x in orc.row_schema]
            return _int64(keys), orc.acid_stats, schema
    except MissingAcidVersionError:
        tally.missing_acid_version.append(path)
    with fs.open_input_file(path) as raw:
        orc_file = po.ORCFile(raw)
        keys = orc_file.read(columns=_KEYS)
        meta = {
            (k.decode() if isinstance(k, bytes) else k): (
                v.decode(errors="replace") if isinstance(v, bytes) else v
            )
            for k, v in (orc_file.metadata or {}).items()
        }
        schema = [(x.name, x.type) for x in orc_file.schema.field(t.ROW).type]
    stats_text = meta.get(ACID_STATS_KEY)
    stats = tuple(int(x) for x in stats_text.split(",")) if stats_text else None
    return _int64(keys), stats, schema  # type: ignore[return-value]


def _mixes(write_ids: ValidWriteIdList, d: AcidDir) -> bool:
    """Whether a delta's range holds write ids the snapshot does not see."""
    return (
        write_ids.is_write_id_range_valid(d.min_write_id, d.max_write_id) is not RangeResponse.ALL
    )


def _key_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([schema.field(name) for name in _KEYS])


def _int64(keys: pa.Table) -> pa.Table:
    return pa.table({name: keys.column(name).cast(pa.int64()) for name in _KEYS})


def _concat(parts: list[pa.Table], names: list[str]) -> pa.Table:
    empty = pa.table({n: pa.array([], pa.int64()) for n in names})
    if not parts:
        return empty
    return pa.concat_tables([p.rename_columns(names) for p in parts])


def _rows(table: pa.Table) -> list[dict[str, int]]:
    return table.slice(0, EXAMPLES).to_pylist()


def _key(row: dict[str, int]) -> str:
    return f"ROW__ID(writeid={row['o']}, bucketid={row['b']}, rowid={row['r']})"


__all__ = ["EXAMPLES", "RowTally", "tally_partition"]
