"""Tables by name in Spark: the warehouse's tables in Spark's session catalog.

>>> # wh.register_spark(spark)
>>> # spark.sql("CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid "
>>> #           "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 4 BUCKETS")
>>> # spark.sql("INSERT INTO db.t VALUES (1, 'a', '2024-01-01')")
>>> # spark.sql("SELECT * FROM db.t"); spark.sql("DESCRIBE TABLE EXTENDED db.t")
>>> # df.write.format("acid").mode("overwrite").partitionBy("ds").saveAsTable("db.t")

Why a session catalog extension. Spark (4.3) lets a Python data source be a *format*, not a
*catalog*: ``CREATE TABLE … USING acid`` with a Python source only records the table in
Spark's own (per-session) catalog — no Python code runs — and ``INSERT`` / ``SELECT`` on such a
table hand the Python source empty options, so it cannot know which table it serves; ``save()``
rejects the modes ``error`` / ``ignore`` and any ``partitionBy`` for a Python source. Naming
tables needs Spark's catalog API (``TableCatalog``), which is JVM-only. The lightest JVM piece
that does it is one small class, :file:`jvm/AcidCatalog.java`, installed as Spark's session
catalog extension (``spark.sql.catalog.spark_catalog``, a ``DelegatingCatalogExtension`` — the
way Delta and Iceberg hook in): Spark's own tables stay as they are; a name Spark's catalog does
not know is looked up in the warehouse; ``CREATE TABLE … USING acid`` (and ``saveAsTable``'s
CREATE / REPLACE … AS SELECT) create the warehouse's table. The class keeps no state and does no
warehouse work itself: it calls the Python data source's ``schema()`` (Spark's
``TableProvider.inferSchema``, run in a Python planning worker) with a ``_catalog_op`` option —
:func:`catalog_answer` below — and writes through the ``PythonTable`` Spark builds for the
source and reads through one built per scan (:mod:`.table_scans`: columns and partitions pruned
per query, the table's size reported), with ``table`` added to the options. The warehouse's
metastore stays the one catalog.

How the JVM part is installed, and why ``format("acid")`` is a JVM data source too:
:mod:`.catalog_install`.

Semantics: ``INSERT OVERWRITE`` (and ``saveAsTable`` / ``save`` with mode ``overwrite`` into an
existing table) is Hive's: one transaction that replaces the partitions it writes (the whole
table when unpartitioned), keeping the table's definition and history — with or without a
static ``PARTITION (ds = 'x')`` and whatever ``spark.sql.sources.partitionOverwriteMode`` says
(Spark's static mode would empty the partitions not written); a ``REPLACE WHERE`` on other
columns is refused; ``saveAsTable`` with
``overwrite`` and a different definition (columns, partitioning, buckets) is refused — drop the
table first. ``DROP TABLE`` drops the warehouse table and its files. A table created by a CTAS
or ``saveAsTable`` whose write fails is dropped again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from acid_platform.engines.spark.maintenance import PROCEDURES, maintenance_answer
from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform.engines.spark.table_scans import partition_conjuncts, scan_bytes
from acid_platform.errors import (
    InvalidNameError,
    NoSuchObjectError,
    SchemaMismatchError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.format import to_hive_type
from acid_platform.metastore.model import TableSpec

if TYPE_CHECKING:
    from acid_platform.engines.spark.options import SourceOptions
    from acid_platform.table.warehouse import TableWarehouse

log = logging.getLogger(__name__)

#: The option that makes the data source's ``schema()`` a catalog operation.
CATALOG_OP = "_catalog_op"
#: Spark's own keys among a CREATE's properties (not TBLPROPERTIES of the table).
_SPARK_KEYS = {
    "provider",
    "owner",
    "location",
    "comment",
    "external",
    "is_managed_location",
    "collation",
    "path",
}


# --------------------------------------------------------------------------- the operations


def catalog_answer(options: SourceOptions, raw: Mapping[str, str], format_name: str) -> StructType:
    """A catalog operation of :file:`jvm/AcidCatalog.java` (``raw``: the source's options,
    lower-cased keys), answered as a schema: ``databases`` (one column per database),
    ``load`` (the table, or no columns if absent),
    ``list`` (one column per table of the database), ``create``, ``replace`` (an existing
    table, if the definition agrees; else created), ``drop`` (one column if dropped) and
    ``abort_transaction`` (of the option ``transaction``, whose Spark SQL statement failed),
    ``stats`` (the bytes a scan of the latest snapshot reads, in the partitions the
    ``_partition_filter`` conjuncts leave: :func:`~.table_scans.scan_bytes`)."""
    op = raw[CATALOG_OP]
    if op == "abort_transaction":  # a failed Spark SQL statement of a shared wh.transaction()
        if options.transaction is not None:
            options.metastore().abort_transactions([options.transaction.txn_id])
        return StructType()
    if op in PROCEDURES:  # CALL system.compact(…) / system.show_compactions()
        return maintenance_answer(options, raw)
    db, name = options.db_and_table
    metastore = options.metastore()
    if op == "databases":
        return StructType([StructField(n, StringType()) for n in metastore.list_databases()])
    if op == "list":
        try:
            names = metastore.list_tables(db)
        except NoSuchObjectError:
            names = []
        return StructType([StructField(n, StringType()) for n in names])
    spec = _spec_or_none(options)
    if op == "stats":
        if spec is None:
            raise NoSuchObjectError(f"table {options.table} does not exist")
        size = scan_bytes(options, spec, partition_conjuncts(raw, spec))
        return StructType([StructField("bytes", LongType(), metadata={"acid_bytes": size})])
    if op == "load":
        return StructType() if spec is None else described(spec, format_name)
    if op == "drop":
        if spec is None:
            return StructType()
        _warehouse(options).drop_table(spec.full_name, purge=True)
        return StructType([StructField("dropped", BooleanType())])
    request = _request(options.table, raw)
    if op == "create":
        return described(_create(options, request), format_name)
    if op == "replace":
        if spec is None:
            return described(_create(options, request), format_name, created=True)
        _check_same_definition(spec, request)
        return described(spec, format_name, created=False)
    raise UnsupportedOperationError(f"acid catalog: unknown operation {op!r}")


def described(spec: TableSpec, format_name: str, created: bool | None = None) -> StructType:
    """The table's Spark schema, its partitioning, buckets and properties in field metadata
    (what ``AcidCatalog.AcidTable`` shows Spark: DESCRIBE, partitionBy checks)."""
    schema = spark_schema(table_arrow_schema(spec))
    parts = set(spec.partition_column_names)
    buckets = {c.lower() for c in spec.bucket_columns}
    props = {"provider": format_name, "location": spec.location, **spec.properties}
    fields = []
    for i, f in enumerate(schema.fields):
        meta: dict[str, object] = {}
        if f.name in parts:
            meta["acid_partition"] = True
        if f.name in buckets:
            meta["acid_buckets"] = spec.num_buckets
        if i == 0:
            meta["acid_table"] = spec.full_name
            meta["acid_properties"] = "".join(f"{k}\x01{v}\x02" for k, v in props.items())
            if spec.num_buckets:  # Hive's bucket, computed in the JVM (jvm/AcidBuckets.java)
                meta["acid_bucketing"] = bucketing_of(spec)
            if created is not None:
                meta["acid_created"] = str(created).lower()
        fields.append(StructField(f.name, f.dataType, f.nullable, meta))
    return StructType(fields)


def bucketing_of(spec: TableSpec) -> str:
    """``version|hive types|columns`` of a bucketed table (the bucketing columns in order)."""
    types = dict(spec.columns)
    hive_types = [types[c] for c in spec.bucket_columns]
    return f"{spec.bucketing_version}|{','.join(hive_types)}|{','.join(spec.bucket_columns)}"


class _Request:
    """A CREATE's definition: Hive columns, partition columns, buckets, properties."""

    def __init__(
        self,
        name: str,
        schema: StructType,
        partitions: list[str],
        bucket_columns: list[str],
        num_buckets: int,
        properties: dict[str, str],
    ) -> None:
        by_name = {f.name.lower(): f for f in schema.fields}
        unknown = [c for c in partitions + bucket_columns if c.lower() not in by_name]
        if unknown:
            raise UnknownColumnError(
                f"table {name}: partition/bucket column(s) {unknown} are not among its columns "
                f"{list(by_name)}"
            )
        hive = hive_columns(schema)
        part_set = {c.lower() for c in partitions}
        if part_set & {c.lower() for c in bucket_columns}:
            raise SchemaMismatchError(f"table {name}: a partition column cannot be a bucket column")
        self.columns = [(c, t) for c, t in hive if c not in part_set]
        types = dict(hive)
        self.partitions = [(c.lower(), types[c.lower()]) for c in partitions]
        self.bucket_columns = [c.lower() for c in bucket_columns]
        self.num_buckets = num_buckets
        self.not_null = [f.name.lower() for f in schema.fields if not f.nullable]
        self.properties = properties


def hive_columns(schema: StructType) -> list[tuple[str, str]]:
    """``(name, hive type)`` of a Spark schema (lower-cased names)."""
    arrow = to_arrow_schema(schema, timezone="UTC")
    return [(f.name.lower(), to_hive_type(f.type)) for f in arrow]


def _request(name: str, raw: Mapping[str, str]) -> _Request:
    schema = StructType.fromJson(json.loads(raw["_catalog_schema"]))
    partitions = [c for c in (raw.get("_catalog_partitions") or "").split(",") if c]
    count, _, cols = (raw.get("_catalog_buckets") or "").partition(":")
    given = dict(
        entry.split("\x01", 1)
        for entry in (raw.get("_catalog_properties") or "").split("\x02")
        if "\x01" in entry
    )
    props = {k: v for k, v in given.items() if k not in _SPARK_KEYS and not k.startswith("option.")}
    if "location" in given:
        raise UnsupportedOperationError(
            f"table {name}: an ACID table lives in the warehouse; LOCATION is not supported"
        )
    return _Request(
        name,
        schema,
        partitions,
        [c for c in cols.split(",") if c],
        int(count) if count else 0,
        props,
    )


def _create(options: SourceOptions, request: _Request) -> TableSpec:
    wh = _warehouse(options)
    db, _ = options.db_and_table
    wh.metastore.create_database(db, if_not_exists=True)
    table = wh.create_table(
        options.table,
        request.columns,
        partition_columns=request.partitions,
        bucket_columns=request.bucket_columns,
        num_buckets=request.num_buckets,
        properties=request.properties,
        not_null=request.not_null,
    )
    return table.spec


def create_for_write(
    options: SourceOptions, schema: StructType, raw: Mapping[str, str]
) -> TableSpec:
    """The table a ``save()`` to a missing table creates from the DataFrame's schema, with the
    options ``partition_by`` / ``bucket_by`` + ``buckets``."""
    parts = [c.strip() for c in (raw.get("partition_by") or "").split(",") if c.strip()]
    bucket_cols = [c.strip() for c in (raw.get("bucket_by") or "").split(",") if c.strip()]
    buckets = int(raw.get("buckets") or 0)
    if bool(bucket_cols) != bool(buckets):
        raise InvalidNameError(
            f"table {options.table}: bucket_by and buckets go together (CLUSTERED BY … INTO n)"
        )
    return _create(options, _Request(options.table, schema, parts, bucket_cols, buckets, {}))


def _check_same_definition(spec: TableSpec, request: _Request) -> None:
    """An overwrite by ``saveAsTable`` keeps the table: its definition must agree."""
    want = [c for c, _ in request.columns] + [c for c, _ in request.partitions]
    have = [c for c, _ in spec.columns] + list(spec.partition_column_names)
    same_parts = not request.partitions or [c for c, _ in request.partitions] == list(
        spec.partition_column_names
    )
    same_buckets = not request.num_buckets or (
        request.num_buckets == spec.num_buckets
        and request.bucket_columns == [c.lower() for c in spec.bucket_columns]
    )
    if request.partitions and sorted(want) != sorted(have):
        same_parts = False
    if sorted(c for c in want) != sorted(have) or not same_parts or not same_buckets:
        raise SchemaMismatchError(
            f"table {spec.full_name}: an overwrite keeps the ACID table (one INSERT OVERWRITE); "
            f"its columns {have}, partitions {list(spec.partition_column_names)} and buckets "
            f"{spec.num_buckets or 0} {list(spec.bucket_columns)} differ from the DataFrame's "
            f"{want}: drop the table first to redefine it"
        )


def _spec_or_none(options: SourceOptions) -> TableSpec | None:
    try:
        return options.spec()
    except NoSuchObjectError:
        return None


def _warehouse(options: SourceOptions) -> TableWarehouse:
    from acid_platform.engines import default_engine
    from acid_platform.table.warehouse import TableWarehouse

    return TableWarehouse(options.warehouse, options.metastore(), default_engine(), options.conf)
