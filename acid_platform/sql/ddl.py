"""DDL: databases, tables (incl. CTAS, LIKE, TEMPORARY), DESCRIBE.

A managed table is a Hive ACID table stored as ORC: a CREATE TABLE without
``'transactional'='true'`` still creates one (what Hive 3+ does with ``hive.create.as.acid`` on,
the default of HDP 3 and Hive 4's strict managed tables). ``LOCATION`` and ``ROW FORMAT`` are read
and reported in a note, never used: an ACID table lives under the warehouse, in ORC.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from acid_platform.errors import (
    AlreadyExistsError,
    SemanticError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from acid_platform.format.types import to_arrow_type, to_hive_type
from acid_platform.metastore.model import FILE_FORMAT_PROPERTY, TableSpec
from acid_platform.metastore.names import DEFAULT_DATABASE
from acid_platform.sql import statements as st
from acid_platform.sql.results import StatementResult, empty_result, rows_result
from acid_platform.sql.state import SessionState, TempTable


def create_database(session: SessionState, stmt: st.CreateDatabase) -> StatementResult:
    """``CREATE DATABASE``."""
    session.warehouse.create_database(stmt.name, if_not_exists=stmt.if_not_exists)
    return empty_result(stmt, f"database {stmt.name} created")


def drop_database(session: SessionState, stmt: st.DropDatabase) -> StatementResult:
    """``DROP DATABASE [IF EXISTS] db [CASCADE]``."""
    session.warehouse.drop_database(stmt.name, if_exists=stmt.if_exists, cascade=stmt.cascade)
    if session.database == stmt.name:
        session.database = DEFAULT_DATABASE
    return empty_result(stmt, f"database {stmt.name} dropped")


def use_database(session: SessionState, stmt: st.UseDatabase) -> StatementResult:
    """``USE db``: the database unqualified table names refer to."""
    return empty_result(stmt, f"using database {session.use(stmt.name)}")


def create_table(session: SessionState, stmt: st.CreateTable) -> StatementResult:
    """``CREATE [TEMPORARY] TABLE …`` / ``… LIKE …`` / ``… AS SELECT``."""
    notes = _check_storage(stmt)
    if stmt.temporary:
        return _create_temporary(session, stmt, notes)
    name = session.qualified(stmt.table)
    if stmt.if_not_exists and _exists(session, stmt.table):
        return empty_result(stmt, f"table {name} already exists; nothing done", notes)
    if stmt.query is not None:
        return _create_table_as_select(session, stmt, notes)
    columns, partition_columns, buckets, num_buckets, properties = _layout(session, stmt)
    session.warehouse.create_table(
        name,
        columns,
        partition_columns=partition_columns,
        bucket_columns=buckets,
        num_buckets=num_buckets,
        properties=properties,
        not_null=tuple(c.name for c in (*stmt.columns, *stmt.partition_columns) if c.not_null),
        if_not_exists=stmt.if_not_exists,
    )
    return empty_result(stmt, f"table {name} created", notes)


def drop_table(session: SessionState, stmt: st.DropTable) -> StatementResult:
    """``DROP TABLE [IF EXISTS]`` (a temporary table first, as Hive resolves names)."""
    name = session.qualified(stmt.table)
    if session.temp_tables.pop(name, None) is not None:
        return empty_result(stmt, f"temporary table {name} dropped")
    session.warehouse.drop_table(name, if_exists=stmt.if_exists)
    return empty_result(stmt, f"table {name} dropped")


def alter_table(session: SessionState, stmt: st.AlterTable) -> StatementResult:
    """``ALTER TABLE … SET LOCATION`` (as Hive 4: metadata only, here for a table that holds no
    data, inside the warehouse; see :mod:`acid_platform.table.relocate`). Other forms are
    refused: table metadata is the metastore's, files stay put."""
    name = session.qualified(stmt.table)
    if stmt.location is not None:
        if stmt.partition is not None:
            raise UnsupportedOperationError(
                f"ALTER TABLE {name} {stmt.partition} {stmt.action}: a partition has no "
                "location of its own here (it is a directory of its table's); set the table's"
            )
        spec = session.warehouse.set_table_location(name, stmt.location)
        return empty_result(stmt, f"table {name} location set to {spec.location}")
    raise UnsupportedOperationError(
        f"ALTER TABLE {name} {stmt.action}: only ALTER TABLE … COMPACT and SET LOCATION are "
        "supported"
    )


def describe(session: SessionState, stmt: st.Describe) -> StatementResult:
    """``DESCRIBE t``: col_name, data_type, comment (partition columns listed after the data columns)."""
    temp = session.temp_table(stmt.table)
    if temp is not None:
        return rows_result(
            stmt, [_describe_row(c, t, "") for c, t in temp.columns], _DESCRIBE_COLUMNS
        )
    spec = session.table(stmt.table).spec
    rows = [_describe_row(c, t, "") for c, t in spec.columns]
    if spec.partition_columns:
        rows += [
            _describe_row("", None, None),
            _describe_row("# Partition Information", None, None),
        ]
        rows.append(_describe_row("# col_name", "data_type", "comment"))
        rows += [_describe_row(c, t, "") for c, t in spec.partition_columns]
    if stmt.style in ("extended", "formatted"):
        rows += [
            _describe_row("", None, None),
            _describe_row("# Detailed Table Information", None, None),
        ]
        rows.append(_describe_row("Location:", spec.location, None))
        if spec.num_buckets:
            rows.append(_describe_row("Num Buckets:", str(spec.num_buckets), None))
            rows.append(_describe_row("Bucket Columns:", str(list(spec.bucket_columns)), None))
        parameters = {**spec.properties, **_basic_stats(session, spec)}
        rows += [_describe_row("Table Parameters:", k, v) for k, v in sorted(parameters.items())]
    return rows_result(stmt, rows, _DESCRIBE_COLUMNS)


def _basic_stats(session: SessionState, spec: TableSpec) -> dict[str, str]:
    """Hive's basic statistics of the table (``numFiles``, ``numRows``, ``totalSize``, and
    ``numPartitions`` of a partitioned one): the sums of what the commits keep per partition
    (:mod:`acid_platform.metastore.partition_stats`); none while a partition's are unknown
    (Hive leaves them out, too, until they are computed)."""
    kept = session.warehouse.metastore.partition_stats(spec.db, spec.name, spec.is_partitioned)
    numbers = [s for s in kept.values() if s is not None]
    out = {"numPartitions": str(len(kept))} if spec.is_partitioned else {}
    if len(numbers) < len(kept):
        return out
    return out | {
        "numFiles": str(sum(s.num_files for s in numbers)),
        "numRows": str(sum(s.num_rows for s in numbers)),
        "totalSize": str(sum(s.total_size for s in numbers)),
    }


_DESCRIBE_COLUMNS = ("col_name", "data_type", "comment")


def _describe_row(name: str, data_type: str | None, comment: str | None) -> dict[str, str | None]:
    return {"col_name": name, "data_type": data_type, "comment": comment}


# --------------------------------------------------------------------------- helpers
def _check_storage(stmt: st.CreateTable) -> list[str]:
    notes = []
    if stmt.external:
        raise UnsupportedOperationError(
            f"CREATE EXTERNAL TABLE {stmt.table}: external tables cannot be transactional (Hive refuses it too)"
        )
    props = {k.lower(): v for k, v in stmt.properties}
    if props.get("transactional", "true").lower() != "true" and not stmt.temporary:
        raise UnsupportedOperationError(
            f"CREATE TABLE {stmt.table}: 'transactional'='{props['transactional']}' — SQL creates "
            "only transactional (Hive ACID) tables. A non-transactional table comes from the "
            "Python API: wh.create_table(name, columns, properties={'transactional': 'false'}) "
            "(its plain ORC files are read; INSERT, UPDATE, DELETE and MERGE are refused). For "
            "plain ORC, Parquet or text files you write with INSERT: TBLPROPERTIES "
            "('transactional'='true', 'transactional_properties'='insert_only')"
        )
    if stmt.location:
        notes.append(f"LOCATION {stmt.location!r} ignored: the table lives under the warehouse")
    if stmt.row_format:
        notes.append(
            "ROW FORMAT ignored: ORC and Parquet tables use their own serde, text tables "
            "LazySimpleSerDe's defaults"
        )
    if stmt.sorted_by:
        notes.append("SORTED BY ignored: ACID files are sorted by ROW__ID")
    return notes


def _properties(stmt: st.CreateTable) -> dict[str, str]:
    """TBLPROPERTIES as written, ``'transactional'='true'`` added when missing (managed = ACID)."""
    properties = dict(stmt.properties)
    if not any(k.lower() == "transactional" for k in properties):
        properties["transactional"] = "true"
    if stmt.stored_as is not None:  # checked against the table kind by create_table
        properties[FILE_FORMAT_PROPERTY] = stmt.stored_as
    return properties


def _layout(
    session: SessionState, stmt: st.CreateTable
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], tuple[str, ...], int, dict[str, str]]:
    properties = _properties(stmt)
    if stmt.like is not None:
        spec = session.table(stmt.like).spec
        copied = {
            k: v
            for k, v in spec.properties.items()
            if not k.startswith("acid_platform.") or k == FILE_FORMAT_PROPERTY
        }
        return (
            list(spec.columns),
            list(spec.partition_columns),
            spec.bucket_columns,
            spec.num_buckets,
            copied | properties,
        )
    if not stmt.columns:
        raise SemanticError(f"CREATE TABLE {stmt.table}: no columns")
    columns = [(c.name, c.type) for c in stmt.columns]
    _check_types([*columns, *((c.name, c.type) for c in stmt.partition_columns)], stmt.table)
    return (
        columns,
        [(c.name, c.type) for c in stmt.partition_columns],
        stmt.bucket_columns,
        stmt.num_buckets,
        properties,
    )


def _check_types(columns: Iterable[tuple[str, str]], table: st.TableName) -> None:
    for name, hive_type in columns:
        try:
            to_arrow_type(hive_type)
        except UnsupportedTypeError as exc:
            raise SemanticError(f"CREATE TABLE {table}: column {name!r}: {exc}") from None


def _exists(session: SessionState, name: st.TableName) -> bool:
    if session.temp_table(name) is not None:
        return True
    return session.warehouse.table_exists(session.qualified(name))


def _create_table_as_select(
    session: SessionState, stmt: st.CreateTable, notes: list[str]
) -> StatementResult:
    assert stmt.query is not None
    name = session.qualified(stmt.table)
    rows = session.query(stmt.query)
    columns = _result_columns(rows, stmt)
    table = session.warehouse.create_table(
        name,
        columns,
        bucket_columns=stmt.bucket_columns,
        num_buckets=stmt.num_buckets,
        properties=_properties(stmt),
    )
    try:
        metrics = table.insert(rows)
    except BaseException:
        session.warehouse.drop_table(name, if_exists=True)
        raise
    return empty_result(stmt, f"table {name} created with {metrics.rows_inserted} row(s)", notes)


def _result_columns(rows: pa.Table, stmt: st.CreateTable) -> list[tuple[str, str]]:
    if stmt.columns:
        if len(stmt.columns) != rows.num_columns:
            raise SemanticError(
                f"CREATE TABLE {stmt.table} AS SELECT: {len(stmt.columns)} columns declared, the query has {rows.num_columns}"
            )
        return [(c.name, c.type) for c in stmt.columns]
    seen: set[str] = set()
    columns = []
    for field in rows.schema:
        if field.name in seen:
            raise SemanticError(
                f"CREATE TABLE {stmt.table} AS SELECT: duplicate column name {field.name!r}; give it an alias"
            )
        seen.add(field.name)
        if pa.types.is_null(field.type):
            raise SemanticError(
                f"CREATE TABLE {stmt.table} AS SELECT: column {field.name!r} is NULL without a type; CAST it"
            )
        try:
            columns.append((field.name, to_hive_type(field.type)))
        except UnsupportedTypeError as exc:
            raise SemanticError(
                f"CREATE TABLE {stmt.table} AS SELECT: column {field.name!r}: {exc}"
            ) from None
    return columns


def _create_temporary(
    session: SessionState, stmt: st.CreateTable, notes: list[str]
) -> StatementResult:
    name = session.qualified(stmt.table)
    if name in session.temp_tables:
        if stmt.if_not_exists:
            return empty_result(stmt, f"temporary table {name} already exists; nothing done", notes)
        raise AlreadyExistsError(f"temporary table {name} already exists")
    if stmt.query is not None:
        rows = session.query(stmt.query)
        columns = _result_columns(rows, stmt)
        data = pa.Table.from_arrays(rows.columns, names=[c for c, _ in columns])
    else:
        columns = [(c.name, c.type) for c in (*stmt.columns, *stmt.partition_columns)]
        _check_types(columns, stmt.table)
        data = pa.table({c: pa.array([], to_arrow_type(t)) for c, t in columns})
    session.temp_tables[name] = TempTable(tuple(columns), data)
    notes.append("temporary table: session-scoped, not transactional, gone when the session ends")
    return empty_result(stmt, f"temporary table {name} created with {data.num_rows} row(s)", notes)
