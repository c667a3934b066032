"""Hive's maintenance statements in Spark SQL: the session extension that parses them.

>>> # builder = SparkSession.builder.master("local[2]")
>>> # for key, value in extension_conf().items():   # before the session starts
>>> #     builder = builder.config(key, value)
>>> # spark = builder.getOrCreate(); wh.register_spark(spark)
>>> # spark.sql("ALTER TABLE db.t PARTITION (ds = '2024-01-01') COMPACT 'major' AND WAIT")
>>> # spark.sql("SHOW COMPACTIONS db.t")

``ALTER TABLE [db.]t [PARTITION (c = v, …)] COMPACT 'type' [AND WAIT] [POOL 'p']`` and ``SHOW
COMPACTIONS [[db.]t]`` are Spark SQL in a session built with ``spark.sql.extensions`` naming
:data:`EXTENSION` (:file:`jvm/AcidExtensions.java`) and the catalog jar on its class path
(``spark.jars``): the extension wraps the session's parser, which parses each such statement
as the ``CALL system.compact(…)`` / ``CALL system.show_compactions(…)`` it means
(:file:`jvm/AcidSyntax.java`; the procedures, their arguments, results and errors are
:mod:`.maintenance`'s) and every other text as Spark does. A table without a database is in the
session's current database. Clauses the procedures do not take (``CLUSTERED INTO``, ``WITH
OVERWRITE TBLPROPERTIES``, ``ORDER BY``, ``SHOW COMPACTIONS``' filters) fail with one line that
says what Spark SQL takes; ``wh.sql`` has them all.

Spark applies ``spark.sql.extensions`` once, when it builds the session, from classes on the
driver's class path at that moment; ``wh.register_spark`` comes later, on a session already
running (see :mod:`.maintenance` for why the work itself is procedures). So
:func:`extension_conf` gives the settings for a session about to be built — the project's own
session builders use it (the tests' session, ``spark_resource()``, the CLI's and the local
cluster's) — and a session built without them keeps everything else: ``CALL system.compact``
works, while ``ALTER TABLE … COMPACT`` fails with Spark's ``ParseException``
(``INVALID_STATEMENT_OR_CLAUSE``). ``wh.register_spark`` logs, at INFO, which settings would
add the statements (:func:`note_missing`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from acid_platform.errors import EngineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: The session extension's class (``spark.sql.extensions``).
EXTENSION = "acid_platform.spark.AcidExtensions"
_EXTENSIONS = "spark.sql.extensions"
_JARS = "spark.jars"


def extension_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings that add :data:`EXTENSION` to a session about to be built:
    ``spark.sql.extensions`` and ``spark.jars``, each ``conf``'s value (the builder's other
    settings) with the extension or the catalog jar (:func:`~.catalog_install.catalog_jar` of
    the installed PySpark's version) appended. Empty, with a warning, when there is no jar (no
    JDK to compile it)."""
    import pyspark

    from acid_platform.engines.spark.catalog_install import catalog_jar

    conf = conf or {}
    try:
        jar = catalog_jar(pyspark.__version__)
    except (EngineError, OSError) as exc:
        log.warning("ALTER TABLE … COMPACT and SHOW COMPACTIONS are not Spark SQL here: %s", exc)
        return {}
    return {
        _EXTENSIONS: _appended(conf.get(_EXTENSIONS), EXTENSION),
        _JARS: _appended(conf.get(_JARS), str(jar)),
    }


def has_extension(spark: SparkSession) -> bool:
    """Whether ``spark`` was built with :data:`EXTENSION` in ``spark.sql.extensions``."""
    return EXTENSION in _items(spark.conf.get(_EXTENSIONS, None))


def note_missing(spark: SparkSession) -> None:
    """Log (INFO) how to have Hive's maintenance statements, unless ``spark`` has them."""
    if not has_extension(spark):
        log.info(
            "this Spark session parses CALL system.compact(…) but not ALTER TABLE … COMPACT or "
            "SHOW COMPACTIONS: build it with %s=%s and the catalog jar in spark.jars "
            "(acid_platform.engines.spark.extensions.extension_conf())",
            _EXTENSIONS,
            EXTENSION,
        )


def _items(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _appended(value: str | None, item: str) -> str:
    items = _items(value)
    return ",".join(items if item in items else [*items, item])


__all__ = ["EXTENSION", "extension_conf", "has_extension", "note_missing"]
