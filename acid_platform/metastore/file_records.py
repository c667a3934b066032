"""What each write id wrote: directories, bucket files, sizes and row counts (``write_files``).

A writer records its files with its transaction, before the commit (:func:`record`); an abort
drops them (:func:`discard`), so what stays describes committed writes only — a snapshot sees
a recorded directory exactly when it sees the write. :func:`summary` names a table's recorded
partitions and directories, :func:`load_partitions` fetches the rows of the partitions a
statement reads (a lazy :class:`~acid_platform.format.file_record.TableRecord`); the cleaner forgets what
it deletes (:func:`forget`). Also the metastore's identity (:func:`identity`), which the
warehouse directory it serves carries.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, case, delete, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from acid_platform.format.file_record import GROWING, RecordRow
from acid_platform.metastore import partition_stats
from acid_platform.metastore.schema import metastore_identity, write_files
from acid_platform.metastore.store import RetryTransaction

_BATCH = 500


@dataclass(frozen=True)
class WrittenEntry:
    """One directory (``file`` empty) or bucket file a write wrote, by partition name (``""``
    unpartitioned) and names relative to the partition directory."""

    partition: str
    directory: str
    file: str = ""
    size: int = 0
    rows: int = 0


@dataclass(frozen=True)
class TableWrite:
    """What one transaction's write id wrote into one table: recorded with its commit
    (:meth:`~acid_platform.metastore.Metastore.commit_txn`)."""

    db: str
    table: str
    write_id: int
    entries: tuple[WrittenEntry, ...]


def record(
    conn: Connection,
    txn_id: int,
    db: str,
    table: str,
    write_id: int,
    entries: Sequence[WrittenEntry],
) -> None:
    """Record ``entries`` as written by ``txn_id`` / ``write_id`` (a directory recorded twice,
    by two statements of one transaction or two Spark tasks, is kept once)."""
    seen: dict[tuple[str, str, str], WrittenEntry] = {}
    for e in entries:
        seen[(e.partition, e.directory, e.file)] = e
    keys = sorted(seen)
    wf = write_files.c
    # only the same transaction can have recorded one of these already (its statements share
    # nothing but a multi-statement INSERT OVERWRITE's base): one query for all
    existing = {
        (r.wf_partition, r.wf_directory, r.wf_file)
        for r in conn.execute(
            select(wf.wf_partition, wf.wf_directory, wf.wf_file).where(
                wf.wf_database == db, wf.wf_table == table, wf.wf_txnid == txn_id
            )
        )
    }
    rows = [
        {
            "wf_database": db,
            "wf_table": table,
            "wf_partition": seen[k].partition,
            "wf_directory": seen[k].directory,
            "wf_file": seen[k].file,
            "wf_txnid": txn_id,
            "wf_writeid": write_id,
            "wf_size": seen[k].size,
            "wf_rows": seen[k].rows,
        }
        for k in keys
        if k not in existing
    ]
    for start in range(0, len(rows), _BATCH):
        conn.execute(insert(write_files), rows[start : start + _BATCH])


def record_writes(conn: Connection, txn_id: int, writes: Sequence[TableWrite]) -> None:
    """:func:`record` each of ``writes`` as written by ``txn_id``."""
    for w in writes:
        record(conn, txn_id, w.db, w.table, w.write_id, w.entries)


def summary(conn: Connection, db: str, table: str) -> tuple[list[str], dict[str, bool]]:
    """The partitions of ``db.table`` with a record, and every directory recorded in it (name
    -> recorded as growing): two queries whose rows grow with the partitions' names and the
    table's distinct directory names, not with its files."""
    wf = write_files.c
    of_table = (wf.wf_database == db, wf.wf_table == table)
    partitions = [
        r.wf_partition for r in conn.execute(select(wf.wf_partition).where(*of_table).distinct())
    ]
    directories: dict[str, bool] = {}
    growing = and_(wf.wf_file == "", wf.wf_size == GROWING)
    query = select(wf.wf_directory, case((growing, 1), else_=0).label("growing"))
    for r in conn.execute(query.where(*of_table).distinct()):
        directories[r.wf_directory] = directories.get(r.wf_directory, False) or bool(r.growing)
    return partitions, directories


def load_partitions(
    conn: Connection, db: str, table: str, partitions: Sequence[str]
) -> list[RecordRow]:
    """The recorded rows of ``partitions`` of ``db.table`` (one query per 500 names)."""
    wf = write_files.c
    rows: list[RecordRow] = []
    for start in range(0, len(partitions), _BATCH):
        names = list(partitions[start : start + _BATCH])
        query = select(wf.wf_partition, wf.wf_directory, wf.wf_file, wf.wf_size, wf.wf_rows)
        rows += [
            (r.wf_partition, r.wf_directory, r.wf_file, r.wf_size, r.wf_rows)
            for r in conn.execute(
                query.where(wf.wf_database == db, wf.wf_table == table, wf.wf_partition.in_(names))
            )
        ]
    return rows


def forget(
    conn: Connection, db: str, table: str, partition: str, directory: str, file: str | None
) -> None:
    """Forget a recorded directory (``file`` None: with its files) or one file of it."""
    wf = write_files.c
    where = [
        wf.wf_database == db,
        wf.wf_table == table,
        wf.wf_partition == partition,
        wf.wf_directory == directory,
    ]
    if file is not None:
        where.append(wf.wf_file == file)
        partition_stats.drop(conn, db, table, [partition])  # (a repair: recount it)
    conn.execute(delete(write_files).where(*where))


def discard(conn: Connection, txn_ids: Sequence[int]) -> None:
    """Drop what aborted ``txn_ids`` recorded."""
    if txn_ids:
        conn.execute(delete(write_files).where(write_files.c.wf_txnid.in_(list(txn_ids))))


def read_identity(conn: Connection) -> str | None:
    """The metastore's identity, or ``None`` before it was made."""
    found = conn.execute(select(metastore_identity.c.mi_id)).scalar()
    return None if found is None else str(found)


def identity(conn: Connection, now: int) -> str:
    """The metastore's identity, made on first use (one row, key ``metastore``)."""
    found = read_identity(conn)
    if found is not None:
        return found
    new = uuid.uuid4().hex
    try:
        conn.execute(
            insert(metastore_identity).values(mi_key="metastore", mi_id=new, mi_created=now)
        )
    except IntegrityError:
        raise RetryTransaction from None  # another process made it first: read it
    return new


__all__ = [
    "TableWrite",
    "WrittenEntry",
    "discard",
    "forget",
    "identity",
    "load_partitions",
    "read_identity",
    "record",
    "record_writes",
    "summary",
]
