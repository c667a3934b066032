"""Basic statistics per partition, kept by the writes (Hive's ``numRows`` / ``numFiles`` /
``totalSize`` partition parameters): ``partition_stats``, one row per partition (``''`` for an
unpartitioned table).

**A table of its own**, not columns on ``partitions``: an unpartitioned table has no partition
row, and one key shape serves both (Hive keeps the same parameters on ``TABLE_PARAMS`` and
``PARTITION_PARAMS``); the row is written by every commit that touches its partition, which
the catalog rows are not (registration inserts them under a unique key and relies on
``IntegrityError``); and a partition without a row is simply *unknown*.

**What the numbers are.** Those a reader with a snapshot taken when no transaction is open
reads in the partition: the files of its current base and deltas (what
:func:`~acid_platform.format.acid_state` selects), their bytes, the insert events minus the
delete events among them (``num_rows``, the live rows), the delete events still merged on read,
and how many insert and delete deltas a reader merges. They are computed from the file record
(``write_files``: each file's size and footer row count as the writer wrote it), never from a
listing or a footer:

* a commit (:func:`apply_commit`, called by :func:`.txns.commit_txn` in the commit's own
  database transaction) adds what the transaction recorded in each partition it touched: one
  query for its record, one ``UPDATE`` per 200 partitions. A base it wrote (INSERT OVERWRITE,
  an insert-only TRUNCATE) replaces the partition's numbers (it holds an exclusive lock there);
  a file a streaming batch records again at a longer committed length adds its growth only;
* a compaction (:func:`forget_replaced`, in the compactor's commit) also takes away what the
  directories it compacted held, from their record; the cleaner then deletes only what no
  current reader reads, and changes nothing here;
* registering a partition (a writer's first write into it) or creating an unpartitioned table
  starts it at zeros; dropping it drops the row.

**Exact**, then, for what the platform's writers write (every path records its files at
commit). **Unknown** (no row: :func:`table_stats` answers ``None``) for partitions registered
before this table existed, or whose compaction read input nobody recorded (Hive's
directories, pre-ACID original files), and after ``acid fsck --repair`` forgot a file: readers
of the numbers count those partitions from their footers. As in Hive, files put into a
partition directory behind the platform's back are not counted (Hive: until ``ANALYZE``).
A streaming batch's ``totalSize`` is its files' committed lengths (what a reader reads); the
final footer it appends at close is not counted until the partition is compacted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    case,
    delete,
    func,
    insert,
    literal,
    null,
    select,
    union_all,
    update,
)
from sqlalchemy.engine import Connection

from acid_platform.format.file_record import GROWING
from acid_platform.format.names import ParsedBase, ParsedDelta, parse_acid_dir_name
from acid_platform.metastore.schema import partition_stats, partitions, write_files

#: Partitions per ``UPDATE`` / ``IN (…)`` (6 bound parameters each, well below every limit).
_CHUNK = 200


@dataclass(frozen=True)
class PartitionStats:
    """What a current reader reads in one partition (see the module docs)."""

    num_rows: int = 0
    num_files: int = 0
    total_size: int = 0
    delete_events: int = 0
    deltas: int = 0
    delete_deltas: int = 0

    def __add__(self, other: PartitionStats) -> PartitionStats:
        return PartitionStats(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))

    def __neg__(self) -> PartitionStats:
        return PartitionStats(*(-a for a in _values(self)))


_COLUMNS = (
    "ps_num_rows",
    "ps_num_files",
    "ps_total_size",
    "ps_delete_events",
    "ps_deltas",
    "ps_delete_deltas",
)


def _values(s: PartitionStats) -> tuple[int, ...]:
    return (s.num_rows, s.num_files, s.total_size, s.delete_events, s.deltas, s.delete_deltas)


# --------------------------------------------------------------------------- reading
def table_stats(
    conn: Connection, db: str, table: str, partitioned: bool
) -> dict[str, PartitionStats | None]:
    """Every partition of ``db.table`` (registered in the catalog; ``''`` alone for an
    unpartitioned table) and its numbers, ``None`` where unknown: one query."""
    ps = partition_stats.c
    cols = [getattr(ps, c) for c in _COLUMNS]
    if not partitioned:
        row: Any = conn.execute(
            select(*cols).where(ps.ps_database == db, ps.ps_table == table, ps.ps_partition == "")
        ).first()
        return {"": None if row is None else PartitionStats(*map(int, row))}
    # one statement, two index range scans: a join of two freshly written tables is planned
    # as a nested loop until PostgreSQL has analyzed them (1.3 s for 1,000 partitions)
    pt = partitions.c
    query = union_all(
        select(ps.ps_partition, literal(1), *cols).where(
            ps.ps_database == db, ps.ps_table == table
        ),
        select(pt.part_name, literal(0), *(null() for _ in cols)).where(
            pt.part_database == db, pt.part_table == table
        ),
    )
    kept: dict[str, PartitionStats] = {}
    names: list[str] = []
    for r in conn.execute(query):
        if r[1]:
            kept[r[0]] = PartitionStats(*map(int, r[2:]))
        else:
            names.append(r[0])
    return {n: kept.get(n) for n in sorted(names)}


# --------------------------------------------------------------------------- starting, dropping
def start(conn: Connection, now: int, db: str, table: str, names: Sequence[str]) -> None:
    """Zero numbers for ``names``, partitions (or ``''``: a table) just registered empty."""
    rows = [
        {"ps_database": db, "ps_table": table, "ps_partition": n, "ps_updated": now}
        | dict.fromkeys(_COLUMNS, 0)
        for n in names
    ]
    drop(conn, db, table, names)  # (a row a dropped partition of that name left: none now)
    for i in range(0, len(rows), _CHUNK):
        conn.execute(insert(partition_stats), rows[i : i + _CHUNK])


def drop(conn: Connection, db: str, table: str, names: Sequence[str] | None = None) -> None:
    """Forget the numbers of ``names`` (``None``: of the whole table): unknown from now on."""
    ps = partition_stats.c
    where = [ps.ps_database == db, ps.ps_table == table]
    if names is None:
        conn.execute(delete(partition_stats).where(*where))
        return
    for i in range(0, len(names), _CHUNK):
        chunk = list(names[i : i + _CHUNK])
        conn.execute(delete(partition_stats).where(*where, ps.ps_partition.in_(chunk)))


# --------------------------------------------------------------------------- commits
def apply_commit(conn: Connection, now: int, txn_id: int, compactor: bool = False) -> None:
    """Add what ``txn_id`` recorded to the numbers of the partitions it touched (see the module
    docs); called by the commit, in its database transaction. A ``compactor``'s base replaces
    nothing here (:func:`forget_replaced` takes its inputs away)."""
    wf = write_files.c
    rows = conn.execute(
        select(
            wf.wf_database,
            wf.wf_table,
            wf.wf_partition,
            wf.wf_directory,
            wf.wf_file,
            wf.wf_size,
            wf.wf_rows,
        ).where(wf.wf_txnid == txn_id)
    ).all()
    if not rows:
        return
    growing = {
        (r[0], r[1], r[2], r[3])
        for r in rows
        if r.wf_file == "" and (r.wf_size == GROWING or (not compactor and _batch(r.wf_directory)))
    }
    before = _recorded_before(conn, txn_id, growing)
    added: dict[tuple[str, str, str], PartitionStats] = {}
    based: set[tuple[str, str, str]] = set()  # partitions where the txn wrote a base
    for r in rows:
        key, where = (r[0], r[1], r[2]), (r[0], r[1], r[2], r[3])
        parsed = parse_acid_dir_name(r.wf_directory)
        if isinstance(parsed, ParsedBase) and not compactor:
            based.add(key)
        old = before.get((*where, r.wf_file))
        if r.wf_file == "":
            part = _directory(parsed) if where not in before else PartitionStats()
        else:
            part = _file(parsed, r.wf_size, r.wf_rows)
            if old is not None:  # a growing file, recorded again: its growth
                part = part + -_file(parsed, *old)
        added[key] = added.get(key, PartitionStats()) + part
    for (db, table), names in _by_table({k: s for k, s in added.items() if k in based}).items():
        # an INSERT OVERWRITE base holds what the partition holds now (it shadows the deltas
        # the same transaction wrote under its write id)
        bases = _base_stats(rows, db, table)
        start(conn, now, db, table, names)
        _add(conn, now, db, table, {n: bases.get(n, PartitionStats()) for n in names})
    for (db, table), names in _by_table({k: s for k, s in added.items() if k not in based}).items():
        _add(conn, now, db, table, {n: added[(db, table, n)] for n in names})


def forget_replaced(
    conn: Connection, now: int, db: str, table: str, partition: str, directories: Iterable[str]
) -> None:
    """Take away what the ``directories`` a compaction of ``partition`` compacted held (its
    commit made them obsolete): from their record; the partition's numbers become unknown if
    one of them was never recorded (Hive's, or a pre-ACID original file)."""
    names = sorted(set(directories))
    if not names:
        return
    wf = write_files.c
    rows: Sequence[Any] = conn.execute(
        select(wf.wf_directory, wf.wf_file, func.max(wf.wf_size), func.max(wf.wf_rows))
        .where(
            wf.wf_database == db,
            wf.wf_table == table,
            wf.wf_partition == partition,
            wf.wf_directory.in_(names),
        )
        .group_by(wf.wf_directory, wf.wf_file)
    ).all()
    recorded = {r[0] for r in rows if r[1] == ""}
    if recorded != set(names):
        drop(conn, db, table, [partition])
        return
    taken = PartitionStats()
    for directory, file, size, count in rows:
        parsed = parse_acid_dir_name(str(directory))
        taken += _directory(parsed) if file == "" else _file(parsed, int(size), int(count))
    _add(conn, now, db, table, {partition: -taken})


# --------------------------------------------------------------------------- helpers
def _directory(parsed: ParsedBase | ParsedDelta | None) -> PartitionStats:
    if isinstance(parsed, ParsedDelta):
        return PartitionStats(delete_deltas=1) if parsed.is_delete else PartitionStats(deltas=1)
    return PartitionStats()


def _file(parsed: ParsedBase | ParsedDelta | None, size: int, rows: int) -> PartitionStats:
    if isinstance(parsed, ParsedDelta) and parsed.is_delete:
        return PartitionStats(-rows, 1, size, rows)
    return PartitionStats(rows, 1, size)


def _batch(directory: str) -> bool:
    """A delta of several write ids written by a writer: a streaming batch's, which each of its
    transactions records again."""
    parsed = parse_acid_dir_name(directory)
    return isinstance(parsed, ParsedDelta) and parsed.min_write_id != parsed.max_write_id


def _base_stats(rows: Sequence[Any], db: str, table: str) -> dict[str, PartitionStats]:
    """The numbers of the bases among ``rows`` (one transaction's record), by partition."""
    out: dict[str, PartitionStats] = {}
    for r in rows:
        if (r[0], r[1]) != (db, table) or r.wf_file == "":
            continue
        parsed = parse_acid_dir_name(r.wf_directory)
        if isinstance(parsed, ParsedBase):
            out[r.wf_partition] = out.get(r.wf_partition, PartitionStats()) + _file(
                parsed, r.wf_size, r.wf_rows
            )
    return out


def _recorded_before(
    conn: Connection, txn_id: int, growing: set[tuple[str, str, str, str]]
) -> dict[tuple[str, ...], tuple[int, int]]:
    """What other transactions recorded in the ``growing`` directories (a streaming batch's,
    growing or not):
    ``(db, table, partition, directory, file)`` -> (longest size, most rows); the directory
    itself under file ``''``."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    wf = write_files.c
    for db, table, partition, directory in sorted(growing):
        query = (
            select(wf.wf_file, func.max(wf.wf_size), func.max(wf.wf_rows))
            .where(
                wf.wf_database == db,
                wf.wf_table == table,
                wf.wf_partition == partition,
                wf.wf_directory == directory,
                wf.wf_txnid != txn_id,
            )
            .group_by(wf.wf_file)
        )
        found: Sequence[Any] = conn.execute(query).all()
        for file, size, rows in found:
            out[(db, table, partition, directory, str(file))] = (int(size), int(rows))
            if file == "":
                out[(db, table, partition, directory)] = (0, 0)
    return out


def _by_table(keys: Mapping[tuple[str, str, str], object]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for db, table, name in sorted(keys):
        out.setdefault((db, table), []).append(name)
    return out


def _add(
    conn: Connection, now: int, db: str, table: str, deltas: Mapping[str, PartitionStats]
) -> None:
    """Add ``deltas`` to the rows of their partitions, where there is one (an unknown partition
    stays unknown): one ``UPDATE`` per :data:`_CHUNK` partitions, relative, so concurrent
    commits into one partition (inserts share their locks) each add their own."""
    ps = partition_stats.c
    names = sorted(n for n, s in deltas.items() if any(_values(s)))
    for i in range(0, len(names), _CHUNK):
        chunk = names[i : i + _CHUNK]
        values: dict[str, Any] = {"ps_updated": now}
        for j, column in enumerate(_COLUMNS):
            by_name = {n: _values(deltas[n])[j] for n in chunk}
            moved = {n: v for n, v in by_name.items() if v}
            if not moved:
                continue
            values[column] = getattr(ps, column) + case(
                *((ps.ps_partition == n, literal(v, BigInteger)) for n, v in moved.items()),
                else_=literal(0, BigInteger),
            )
        conn.execute(
            update(partition_stats)
            .where(ps.ps_database == db, ps.ps_table == table, ps.ps_partition.in_(chunk))
            .values(**values)
        )


__all__ = ["PartitionStats", "apply_commit", "drop", "forget_replaced", "start", "table_stats"]
