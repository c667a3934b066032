"""Installing the JVM half of tables by name (:mod:`.catalog`) on a Spark session.

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

:func:`install_catalog` (called by :func:`~.registration.register_source`, the data-source half
of ``wh.register_spark``, whose docstring lists these changes to the session) takes the
classes — the jar the wheel carries, compiled when the package was built (:mod:`.jvm_build`), or
in a development checkout compiled once per Spark version with ``javac`` of the JDK Spark runs
on (cached under ``~/.cache/acid_platform``) — puts the jar on the driver's class path, adds it
to the session (``ADD JAR``) and sets the extension. The class path matters because Spark looks
a format up through the *calling thread's* context class loader, and ``ADD JAR`` sets that of
the calling thread only (another Python thread is another JVM thread, which would not find
``acid``); so the jar also goes on the class loader every driver thread inherits, SparkSubmit's
``MutableURLClassLoader`` (``addURL``, what ``--jars`` at launch does) — possible on a session
already running. A session whose ``spark_catalog`` is already another extension keeps it
(tables by name are then off, with a warning, and ``acid`` stays the Python data source alone:
``load()`` reads every column); so does a driver without that class loader (tables by name
on). One format name per session has tables by name and the JVM source: the first registered
(registered again, for another warehouse, they follow it); a warehouse registered under
another name gets a Python data source of that name only, with a warning — its ``load()``
reads every column, and its tables are not Spark tables by name.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from acid_platform.errors import EngineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

CATALOG_CLASS = "acid_platform.spark.AcidCatalog"
#: The name the Python data source is registered under when the JVM source has the format's.
PYTHON_SOURCE = "{}__python"
_SESSION_CATALOG = "spark.sql.catalog.spark_catalog"
#: The Python data source's name, set while ``AcidSource`` has the format's name.
_SOURCE = f"{_SESSION_CATALOG}.source"


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
        owner = spark.conf.get(f"{_SESSION_CATALOG}.format", None)
        if owner not in (None, "", format_name):
            log.warning(
                "format(%r) is the Python data source only: tables by name and the JVM "
                "format(%r) stay with the warehouse registered as %r (load() of %r reads every "
                "column)",
                format_name,
                owner,
                owner,
                format_name,
            )
            return format_name
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
    """The catalog classes compiled for this Spark version: the jar the package was built with
    (:data:`~.jvm_build.JAR_NAME`, compiled when the wheel was built) when it was compiled for
    this Spark and from these sources; else — a development checkout — compiled here with the
    JDK's ``javac`` against the session's Spark jars, cached under ``~/.cache/acid_platform``."""
    from acid_platform.engines.spark import jvm_build

    packaged = jvm_build.JVM_DIR / jvm_build.JAR_NAME
    wanted = jvm_build.build_info(spark_version)
    if packaged.exists() and jvm_build.read_build_info(packaged) == wanted:
        return packaged
    key = hashlib.sha256(f"{wanted['sources.sha256']}:{spark_version}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = cache / "acid_platform" / "spark-catalog" / key / jvm_build.JAR_NAME
    if jar.exists():
        return jar
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        jars = Path(spark_home) / "jars"
    else:
        import pyspark

        jars = Path(pyspark.__file__).parent / "jars"
    try:
        return jvm_build.compile_jar(jar, jars, spark_version)
    except jvm_build.JarBuildError as exc:
        raise EngineError(str(exc)) from exc
