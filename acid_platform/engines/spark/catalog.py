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

Why ``format("acid")`` is a JVM data source too. Spark 4.0 – 4.3 give a Python data source's
reader no column-pruning and no statistics hook, and reuse its planned reader across the
queries of a loaded relation; so ``spark.read.format("acid").load("db.t")`` (or ``load`` of the
table's warehouse path) would read every column and never be broadcast by size. The jar's
:file:`jvm/AcidSource.java` is a ``TableProvider`` + ``DataSourceRegister`` whose short name is
the format's: its ``inferSchema`` asks the ``load`` operation for the table and its
``getTable`` returns the catalog's ``AcidTable`` — the scans of a table read by name, columns
and partitions pruned per query, sized for broadcasts, pinned by ``as_of_write_id`` /
``snapshot`` like any read (the options travel with every scan). Everything else goes to the
Python data source unchanged, registered under the internal name :data:`PYTHON_SOURCE`: writes
and streaming sinks (Spark hands them the DataFrame's schema, so ``inferSchema`` is never
called: ``getTable`` returns the source's ``PythonTable`` as before), reads with a schema the
user gives, and reads whose schema is not the table's (``read_changes``, ``with_row_id``) or
that push filters (``pushdown``). The Python source needs another name: Spark's
``DataSource.lookupDataSource`` finds a JVM short name with ``ServiceLoader`` first — 4.3 then
ignores a Python source of the same name, earlier 4.x sources raise ``foundMultipleDataSources``
— and registering a Python source under a name a JVM source has is refused.

:func:`install_catalog` (called by :func:`~acid_platform.engines.spark.register`) compiles the
classes against the session's Spark jars once per Spark version (``javac`` of the JDK Spark runs
on; cached under ``~/.cache/acid_platform``), puts the jar on the driver's class path, adds it
to the session (``ADD JAR``) and sets the extension. The class path matters because Spark looks
a format up through the *calling thread's* context class loader, and ``ADD JAR`` sets that of
the calling thread only (another Python thread is another JVM thread, which would not find
``acid``); so the jar also goes on the class loader every driver thread inherits, SparkSubmit's
``MutableURLClassLoader`` (``addURL``, what ``--jars`` at launch does) — possible on a session
already running. A session whose ``spark_catalog`` is already another extension keeps it
(tables by name are then off, with a warning, and ``acid`` stays the Python data source alone:
``load()`` reads every column); so does a driver without that class loader (tables by name
on).

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

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform.engines.spark.table_scans import partition_conjuncts, scan_bytes
from acid_platform.errors import (
    EngineError,
    InvalidNameError,
    NoSuchObjectError,
    SchemaMismatchError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.format import to_hive_type
from acid_platform.metastore.model import TableSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acid_platform.engines.spark.options import SourceOptions
    from acid_platform.table.warehouse import TableWarehouse

log = logging.getLogger(__name__)

#: The option that makes the data source's ``schema()`` a catalog operation.
CATALOG_OP = "_catalog_op"
CATALOG_CLASS = "acid_platform.spark.AcidCatalog"
#: The name the Python data source is registered under when the JVM source has the format's.
PYTHON_SOURCE = "{}__python"
_SOURCES = (
    Path(__file__).with_name("jvm") / "AcidCatalog.java",
    Path(__file__).with_name("jvm") / "AcidScans.java",
    Path(__file__).with_name("jvm") / "AcidSource.java",
)
#: The jar's service registration: ``AcidSource`` is a Spark data source (``format(name)``).
_SERVICES = (
    "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister",
    b"acid_platform.spark.AcidSource\n",
)
_SESSION_CATALOG = "spark.sql.catalog.spark_catalog"
#: The Python data source's name, set while ``AcidSource`` has the format's name.
_SOURCE = f"{_SESSION_CATALOG}.source"
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


# --------------------------------------------------------------------------- installing


def install_catalog(spark: SparkSession, format_name: str) -> str:
    """Make the warehouse's tables Spark tables by name on ``spark`` and ``format_name`` the JVM
    data source (see module docs). Returns the name to register the Python data source under:
    :data:`PYTHON_SOURCE` of ``format_name`` once the JVM source has the format's name, else
    ``format_name`` itself — with a warning if the session already has another session catalog
    extension or no JDK is at hand (no tables by name then)."""
    current = spark.conf.get(_SESSION_CATALOG, None)
    if current not in (None, "", CATALOG_CLASS):
        log.warning(
            "%s is %s: the warehouse's tables are not Spark tables by name in this session "
            "(read and write them with format('acid'))",
            _SESSION_CATALOG,
            current,
        )
        return format_name
    source = PYTHON_SOURCE.format(format_name)
    if current == CATALOG_CLASS:
        shared = spark.conf.get(_SOURCE, None) is not None
        spark.conf.set(f"{_SESSION_CATALOG}.format", format_name)
        if shared:
            spark.conf.set(_SOURCE, source)
        return source if shared else format_name
    try:
        jar = catalog_jar(spark.version)
    except (EngineError, OSError) as exc:
        log.warning("tables by name are off in this session: %s", exc)
        return format_name
    shared = _on_driver_class_path(spark, jar)
    spark.sql(f"ADD JAR '{jar}'")
    spark.conf.set(f"{_SESSION_CATALOG}.format", format_name)
    spark.conf.set(_SESSION_CATALOG, CATALOG_CLASS)
    # load it now, on the thread whose class loader has the jar
    jvm_session = spark._jsparkSession  # noqa: SLF001 - PySpark's handle on the JVM session
    jvm_session.sessionState().catalogManager().catalog("spark_catalog")
    if not shared:
        log.warning(
            "the driver has no class loader shared by its threads: format(%r).load() reads "
            "every column and reports no size (tables by name are on)",
            format_name,
        )
        return format_name
    spark.conf.set(_SOURCE, source)
    return source


def _on_driver_class_path(spark: SparkSession, jar: Path) -> bool:
    """Put ``jar`` on the class loader every thread of the driver inherits — what ``--jars``
    at launch does (``SparkSubmit``'s ``MutableURLClassLoader``, the parent of the session's
    ``ADD JAR`` loader) — so that Spark's ``ServiceLoader`` finds the format's JVM source
    (``META-INF/services``) on every thread: ``ADD JAR`` alone reaches the calling thread only.
    False if the driver has no such loader."""
    jvm = spark._jvm  # noqa: SLF001 - PySpark's handle on the JVM
    if jvm is None:  # a Spark Connect session: no JVM of ours
        return False
    session = spark._jsparkSession  # noqa: SLF001
    mutable = jvm.org.apache.spark.util.MutableURLClassLoader._java_lang_class
    loader = session.sharedState().jarClassLoader().getParent()
    while loader is not None and not mutable.isInstance(loader):
        loader = loader.getParent()
    if loader is None:
        return False
    url = jvm.java.io.File(str(jar)).toURI().toURL()
    if not any(url.equals(u) for u in loader.getURLs()):
        loader.addURL(url)
    return True


def catalog_jar(spark_version: str) -> Path:
    """The catalog class compiled for this Spark version (cached; built with ``javac``)."""
    import pyspark

    source = b"".join(p.read_bytes() for p in _SOURCES) + _SERVICES[1]
    key = hashlib.sha256(source + spark_version.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = cache / "acid_platform" / "spark-catalog" / key / "acid-catalog.jar"
    if jar.exists():
        return jar
    javac = _javac()
    jars = os.environ.get("SPARK_HOME")
    classpath = (
        os.path.join(jars, "jars", "*")
        if jars
        else os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    )
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        done = subprocess.run(
            [javac, "-nowarn", "-d", tmp, "-cp", classpath, *map(str, _SOURCES)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise EngineError(f"compiling {_SOURCES[0].name} failed: {done.stderr.strip()[-2000:]}")
        staging = Path(tmp) / "acid-catalog.jar"
        with zipfile.ZipFile(staging, "w") as out:
            for cls in sorted(Path(tmp).rglob("*.class")):
                out.write(cls, cls.relative_to(tmp).as_posix())
            out.writestr(*_SERVICES)
        os.replace(staging, jar)
    return jar


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [os.path.join(home, "bin", "javac")] if home else []
    found = shutil.which("javac")
    candidates += [found] if found else []
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise EngineError(
        "no javac (JDK) found for the acid session catalog: install a JDK or set JAVA_HOME"
    )


# --------------------------------------------------------------------------- the operations


def catalog_answer(options: SourceOptions, raw: Mapping[str, str], format_name: str) -> StructType:
    """A catalog operation of :file:`jvm/AcidCatalog.java` (``raw``: the source's options,
    lower-cased keys), answered as a schema: ``databases`` (one column per database),
    ``load`` (the table, or no columns if absent),
    ``list`` (one column per table of the database), ``create``, ``replace`` (an existing
    table, if the definition agrees; else created), ``drop`` (one column if dropped) and
    ``stats`` (the bytes a scan of the latest snapshot reads, in the partitions the
    ``_partition_filter`` conjuncts leave: :func:`~.table_scans.scan_bytes`)."""
    op = raw[CATALOG_OP]
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
            if created is not None:
                meta["acid_created"] = str(created).lower()
        fields.append(StructField(f.name, f.dataType, f.nullable, meta))
    return StructType(fields)


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
