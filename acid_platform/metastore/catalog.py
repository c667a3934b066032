"""Catalog: databases, tables (schema, partitioning, bucketing, properties) and partitions.

A small subset of Hive's catalog, enough for ACID tables: no SerDes, no storage descriptors,
no statistics. Column lists and table properties are stored as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import bindparam, delete, insert, literal, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from acid_platform.errors import AlreadyExistsError, MetastoreError, NoSuchObjectError
from acid_platform.metastore import partition_stats
from acid_platform.metastore.model import Database, TableSpec
from acid_platform.metastore.names import (
    choices_text,
    database_name_to_create,
    normalize_identifier,
    normalize_partition_name,
    require_absolute_location,
)
from acid_platform.metastore.schema import (
    committed_sources,
    compaction_queue,
    completed_compactions,
    completed_txn_components,
    dbs,
    next_write_id,
    partitions,
    tbls,
    txn_components,
    txn_sources,
    txn_to_write_id,
    write_files,
    write_set,
)

# --------------------------------------------------------------------------- databases


def create_database(
    conn: Connection, now: int, name: str, location: str | None, if_not_exists: bool
) -> bool:
    """Create a database; returns False if it existed and ``if_not_exists`` was given."""
    name = database_name_to_create(name)
    if location is not None:
        require_absolute_location(location, f"database {name}")
    if _database_row(conn, name) is not None:
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"database {name} already exists")
    try:
        with conn.begin_nested():
            conn.execute(insert(dbs).values(db_name=name, db_location=location, db_created=now))
    except IntegrityError:
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"database {name} already exists") from None
    return True


def get_database(conn: Connection, name: str) -> Database:
    name = normalize_identifier(name, "database name")
    row = _database_row(conn, name)
    if row is None:
        raise no_such_database(conn, name)
    return Database(row.db_name, row.db_location)


def list_databases(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(select(dbs.c.db_name).order_by(dbs.c.db_name))]


def no_such_database(conn: Connection, name: str, consequence: str = "") -> NoSuchObjectError:
    """The error for database ``name``, which does not exist: it names those that do (and the
    nearest, for a misspelt name)."""
    also = f"; {consequence}" if consequence else ""
    return NoSuchObjectError(
        f"database {name} does not exist{also}"
        + choices_text(name, list_databases(conn), "databases")
    )


def drop_database(conn: Connection, name: str, if_exists: bool, cascade: bool) -> bool:
    """Drop a database; with ``cascade`` its tables too, otherwise it must be empty."""
    name = normalize_identifier(name, "database name")
    if _database_row(conn, name) is None:
        if if_exists:
            return False
        raise no_such_database(conn, name)
    tables = list_tables(conn, name)
    if tables and not cascade:
        raise MetastoreError(
            f"database {name} is not empty (tables {tables[:5]}{'...' if len(tables) > 5 else ''}); "
            "drop them first or pass cascade=True"
        )
    for table in tables:
        drop_table(conn, name, table, if_exists=True)
    conn.execute(delete(dbs).where(dbs.c.db_name == name))
    return True


# --------------------------------------------------------------------------- tables


def create_table(conn: Connection, now: int, spec: TableSpec, if_not_exists: bool) -> bool:
    """Create a table and its write id counter; returns False if it existed (and allowed)."""
    if _database_row(conn, spec.db) is None:
        raise no_such_database(conn, spec.db, f"cannot create {spec.full_name}")
    if _table_row(conn, spec.db, spec.name) is not None:
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"table {spec.full_name} already exists")
    if not spec.location:
        raise MetastoreError(f"table {spec.full_name} needs a location")
    try:
        with conn.begin_nested():
            conn.execute(insert(tbls).values(**_spec_to_row(spec), tbl_created=now))
    except IntegrityError:
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"table {spec.full_name} already exists") from None
    # A dropped table of the same name may have left a counter behind in old schemas.
    conn.execute(
        delete(next_write_id).where(
            next_write_id.c.nwi_database == spec.db, next_write_id.c.nwi_table == spec.name
        )
    )
    conn.execute(
        insert(next_write_id).values(nwi_database=spec.db, nwi_table=spec.name, nwi_next=1)
    )
    if not spec.is_partitioned:
        partition_stats.start(conn, now, spec.db, spec.name, [""])
    return True


def get_table(conn: Connection, db: str, table: str) -> TableSpec:
    db = normalize_identifier(db, "database name")
    table = normalize_identifier(table, "table name")
    row = _table_row(conn, db, table)
    if row is None:
        raise NoSuchObjectError(f"table {db}.{table} does not exist")
    return _row_to_spec(row)


def list_tables(conn: Connection, db: str) -> list[str]:
    db = normalize_identifier(db, "database name")
    if _database_row(conn, db) is None:
        raise no_such_database(conn, db)
    return [
        r[0]
        for r in conn.execute(
            select(tbls.c.tbl_name).where(tbls.c.tbl_database == db).order_by(tbls.c.tbl_name)
        )
    ]


def alter_table_properties(
    conn: Connection,
    db: str,
    table: str,
    set_properties: Mapping[str, str],
    unset: Iterable[str],
) -> TableSpec:
    """Set and remove table properties (``ALTER TABLE ... SET/UNSET TBLPROPERTIES``)."""
    spec = get_table(conn, db, table)
    props = dict(spec.properties)
    props.update(set_properties)
    for key in unset:
        props.pop(key, None)
    new = TableSpec(
        spec.db,
        spec.name,
        spec.columns,
        spec.partition_columns,
        spec.bucket_columns,
        spec.num_buckets,
        spec.bucketing_version,
        spec.location,
        props,
        spec.created,
    )
    conn.execute(
        update(tbls)
        .where(tbls.c.tbl_database == spec.db, tbls.c.tbl_name == spec.name)
        .values(tbl_properties=json.dumps(dict(new.properties)))
    )
    return new


def set_table_location(conn: Connection, db: str, table: str, location: str) -> TableSpec:
    """``ALTER TABLE … SET LOCATION``: the table's location (the caller validated it)."""
    spec = get_table(conn, db, table)
    conn.execute(
        update(tbls)
        .where(tbls.c.tbl_database == spec.db, tbls.c.tbl_name == spec.name)
        .values(tbl_location=location)
    )
    return get_table(conn, spec.db, spec.name)


def drop_table(conn: Connection, db: str, table: str, if_exists: bool) -> bool:
    """Drop a table and every piece of txn/compaction metadata about it (Hive cleanupRecords)."""
    db = normalize_identifier(db, "database name")
    table = normalize_identifier(table, "table name")
    if _table_row(conn, db, table) is None:
        if if_exists:
            return False
        raise NoSuchObjectError(f"table {db}.{table} does not exist")
    for tbl, db_col, table_col in (
        (tbls, tbls.c.tbl_database, tbls.c.tbl_name),
        (partitions, partitions.c.part_database, partitions.c.part_table),
        (next_write_id, next_write_id.c.nwi_database, next_write_id.c.nwi_table),
        (txn_to_write_id, txn_to_write_id.c.t2w_database, txn_to_write_id.c.t2w_table),
        (txn_components, txn_components.c.tc_database, txn_components.c.tc_table),
        (
            completed_txn_components,
            completed_txn_components.c.ctc_database,
            completed_txn_components.c.ctc_table,
        ),
        (write_set, write_set.c.ws_database, write_set.c.ws_table),
        (txn_sources, txn_sources.c.ts_database, txn_sources.c.ts_table),
        (committed_sources, committed_sources.c.cs_database, committed_sources.c.cs_table),
        (write_files, write_files.c.wf_database, write_files.c.wf_table),
        (compaction_queue, compaction_queue.c.cq_database, compaction_queue.c.cq_table),
        (
            completed_compactions,
            completed_compactions.c.cc_database,
            completed_compactions.c.cc_table,
        ),
    ):
        conn.execute(delete(tbl).where(db_col == db, table_col == table))
    partition_stats.drop(conn, db, table)
    return True


# --------------------------------------------------------------------------- partitions


def add_partition(
    conn: Connection, now: int, db: str, table: str, name: str, if_not_exists: bool
) -> bool:
    """Register a partition by its escaped name (``k1=v1/k2=v2``)."""
    spec = get_table(conn, db, table)
    if not spec.is_partitioned:
        raise MetastoreError(f"table {spec.full_name} is not partitioned")
    name = normalize_partition_name(name, spec.partition_column_names)
    if _partition_exists(conn, spec.db, spec.name, name):
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"partition {name} of {spec.full_name} already exists")
    try:
        with conn.begin_nested():
            conn.execute(
                insert(partitions).values(
                    part_database=spec.db, part_table=spec.name, part_name=name, part_created=now
                )
            )
    except IntegrityError:
        if if_not_exists:
            return False
        raise AlreadyExistsError(f"partition {name} of {spec.full_name} already exists") from None
    partition_stats.start(conn, now, spec.db, spec.name, [name])
    return True


#: Names per ``IN (…)`` of :func:`add_partitions`' existence query (well below every
#: backend's bound-parameter limit).
_NAMES_PER_QUERY = 500


def add_partitions(
    conn: Connection, now: int, db: str, table: str, names: Iterable[str]
) -> list[str]:
    """Register those of ``names`` (escaped, ``k1=v1/k2=v2``) that are new, as one write: one
    existence query per 500 names and one multi-row INSERT, whatever their number (a statement
    writing into many new partitions costs the metastore a round trip, not one per partition).
    Returns the names this call registered, normalized. A concurrent writer registering some
    of them first is tolerated (they are then registered one by one, as :func:`add_partition`
    with ``if_not_exists``)."""
    spec = get_table(conn, db, table)
    if not spec.is_partitioned:
        raise MetastoreError(f"table {spec.full_name} is not partitioned")
    cols = spec.partition_column_names
    wanted = list(dict.fromkeys(normalize_partition_name(n, cols) for n in names))
    existing = _registered(conn, spec, wanted)
    new = [n for n in wanted if n not in existing]
    if not new:
        return []
    rows = [
        {"part_database": spec.db, "part_table": spec.name, "part_name": n, "part_created": now}
        for n in new
    ]
    try:
        with conn.begin_nested():
            conn.execute(insert(partitions), rows)
    except IntegrityError:  # registered meanwhile by another writer: one by one
        return [n for n in new if add_partition(conn, now, spec.db, spec.name, n, True)]
    partition_stats.start(conn, now, spec.db, spec.name, new)
    return new


def existing_partitions(conn: Connection, db: str, table: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` (escaped, ``k1=v1/k2=v2``) that are registered, as given: one query
    per 500 names (rows for the names asked about, not for every partition of the table)."""
    spec = get_table(conn, db, table)
    if not spec.is_partitioned:
        raise MetastoreError(f"table {spec.full_name} is not partitioned")
    cols = spec.partition_column_names
    given = {n: normalize_partition_name(n, cols) for n in names}
    found = _registered(conn, spec, list(dict.fromkeys(given.values())))
    return [n for n, normal in given.items() if normal in found]


def _registered(conn: Connection, spec: TableSpec, names: Sequence[str]) -> set[str]:
    """Those of normalized partition ``names`` registered for ``spec``."""
    existing: set[str] = set()
    for i in range(0, len(names), _NAMES_PER_QUERY):
        chunk = names[i : i + _NAMES_PER_QUERY]
        query = select(partitions.c.part_name).where(
            partitions.c.part_database == spec.db,
            partitions.c.part_table == spec.name,
            partitions.c.part_name.in_(chunk),
        )
        existing.update(str(row[0]) for row in conn.execute(query))
    return existing


def drop_partitions_left_by(
    conn: Connection, txn_id: int, db: str, table: str, names: list[str]
) -> list[str]:
    """After ``txn_id`` aborted: drop those of the partitions it registered (``names``) that no
    other txn has written into (open or committed) and no compaction has touched; returns them."""
    tc, ctc, cq, cc = (
        txn_components,
        completed_txn_components,
        compaction_queue,
        completed_compactions,
    )
    dropped = []
    for name in names:
        used = (
            select(literal(1)).where(
                tc.c.tc_database == db,
                tc.c.tc_table == table,
                tc.c.tc_partition == name,
                tc.c.tc_txnid != txn_id,
            ),
            select(literal(1)).where(
                ctc.c.ctc_database == db, ctc.c.ctc_table == table, ctc.c.ctc_partition == name
            ),
            select(literal(1)).where(
                cq.c.cq_database == db, cq.c.cq_table == table, cq.c.cq_partition == name
            ),
            select(literal(1)).where(
                cc.c.cc_database == db, cc.c.cc_table == table, cc.c.cc_partition == name
            ),
        )
        if any(conn.execute(q.limit(1)).first() is not None for q in used):
            continue
        gone = conn.execute(
            delete(partitions).where(
                partitions.c.part_database == db,
                partitions.c.part_table == table,
                partitions.c.part_name == name,
            )
        ).rowcount
        if gone:
            dropped.append(name)
    partition_stats.drop(conn, db, table, dropped)
    return dropped


def list_partitions(conn: Connection, db: str, table: str) -> list[str]:
    spec = get_table(conn, db, table)
    return [
        r[0]
        for r in conn.execute(
            select(partitions.c.part_name)
            .where(partitions.c.part_database == spec.db, partitions.c.part_table == spec.name)
            .order_by(partitions.c.part_name)
        )
    ]


def drop_partition(conn: Connection, db: str, table: str, name: str, if_exists: bool) -> bool:
    spec = get_table(conn, db, table)
    name = normalize_partition_name(name, spec.partition_column_names)
    gone = conn.execute(
        delete(partitions).where(
            partitions.c.part_database == spec.db,
            partitions.c.part_table == spec.name,
            partitions.c.part_name == name,
        )
    ).rowcount
    if not gone and not if_exists:
        raise NoSuchObjectError(f"partition {name} of {spec.full_name} does not exist")
    partition_stats.drop(conn, spec.db, spec.name, [name])
    conn.execute(
        delete(write_files).where(
            write_files.c.wf_database == spec.db,
            write_files.c.wf_table == spec.name,
            write_files.c.wf_partition == name,
        )
    )
    return bool(gone)


# --------------------------------------------------------------------------- helpers


def _database_row(conn: Connection, name: str) -> Row[tuple[str, str | None]] | None:
    return conn.execute(
        select(dbs.c.db_name, dbs.c.db_location).where(dbs.c.db_name == name)
    ).first()


def _table_row(conn: Connection, db: str, table: str) -> Row[tuple[object, ...]] | None:
    return conn.execute(_TABLE_ROW, {"b_db": db, "b_table": table}).first()


_TABLE_ROW = select(tbls).where(
    tbls.c.tbl_database == bindparam("b_db"), tbls.c.tbl_name == bindparam("b_table")
)


def _partition_exists(conn: Connection, db: str, table: str, name: str) -> bool:
    return (
        conn.execute(
            select(partitions.c.part_name).where(
                partitions.c.part_database == db,
                partitions.c.part_table == table,
                partitions.c.part_name == name,
            )
        ).first()
        is not None
    )


def _spec_to_row(spec: TableSpec) -> dict[str, object]:
    return {
        "tbl_database": spec.db,
        "tbl_name": spec.name,
        "tbl_location": spec.location,
        "tbl_columns": json.dumps([list(c) for c in spec.columns]),
        "tbl_partition_columns": json.dumps([list(c) for c in spec.partition_columns]),
        "tbl_bucket_columns": json.dumps(list(spec.bucket_columns)),
        "tbl_num_buckets": spec.num_buckets,
        "tbl_bucketing_version": spec.bucketing_version,
        "tbl_properties": json.dumps(dict(spec.properties)),
    }


def _row_to_spec(row: Row[tuple[object, ...]]) -> TableSpec:
    m = row._mapping
    return TableSpec(
        db=str(m["tbl_database"]),
        name=str(m["tbl_name"]),
        columns=tuple((str(n), str(t)) for n, t in json.loads(str(m["tbl_columns"]))),
        partition_columns=tuple(
            (str(n), str(t)) for n, t in json.loads(str(m["tbl_partition_columns"]))
        ),
        bucket_columns=tuple(json.loads(str(m["tbl_bucket_columns"]))),
        num_buckets=int(m["tbl_num_buckets"]),  # type: ignore[call-overload]
        bucketing_version=int(m["tbl_bucketing_version"]),  # type: ignore[call-overload]
        location=str(m["tbl_location"]),
        properties=json.loads(str(m["tbl_properties"])),
        created=int(m["tbl_created"]) if "tbl_created" in m else 0,  # type: ignore[call-overload]
    )
