"""Running a Hive-dialect plan on Spark SQL: relations as temp views, the plan transpiled.

The plan names its relations (``target``, ``source``, …). Each DataFrame becomes a temporary view
under a unique name, the plan's table references are renamed to those views (an AST rewrite,
never string surgery) and the plan is printed in Spark's dialect with sqlglot. Hive's expression
semantics (a failed CAST is NULL, integer overflow wraps, ``x / 0`` is NULL) are Spark's with ANSI
mode off, so the plan is parsed and analysed with ``spark.sql.ansi.enabled=false``; Spark fixes
an expression's evaluation mode when it analyses it, so the setting is restored right after.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from acid_platform.errors import InvalidExpressionError
from acid_platform.table.engine import PLAN_DIALECT

DIALECT = "spark"
_conf_lock = threading.Lock()


def transpile(plan: exp.Expr | str, views: Mapping[str, str] | None = None) -> str:
    """Spark SQL for a Hive-dialect plan, relation names replaced by ``views``."""
    tree = _parse(plan) if isinstance(plan, str) else plan.copy()
    if views:
        lowered = {k.lower(): v for k, v in views.items()}
        for table in tree.find_all(exp.Table):
            if not table.args.get("db") and table.name.lower() in lowered:
                table.set("this", exp.to_identifier(lowered[table.name.lower()]))
    return tree.sql(dialect=DIALECT)


class PlanViews:
    """Relations of a plan as temp views under unique names, for the life of a ``with`` block.

    >>> # with PlanViews(spark, {"target": t, "source": s}) as views:
    >>> #     rows = views.frame(plan.query).collect()
    """

    def __init__(self, spark: SparkSession, relations: Mapping[str, DataFrame]) -> None:
        self.spark = spark
        self._token = uuid.uuid4().hex[:12]
        self._views: dict[str, str] = {}
        for name, frame in relations.items():
            self.replace(name, frame)

    def replace(self, name: str, frame: DataFrame) -> None:
        """(Re)bind relation ``name`` to ``frame``."""
        view = self._views.setdefault(name.lower(), f"__acid_{name.lower()}_{self._token}")
        frame.createOrReplaceTempView(view)

    def frame(self, plan: exp.Expr | str) -> DataFrame:
        """The plan's result over the bound relations (analysed with Hive semantics)."""
        sql = transpile(plan, self._views)
        with hive_semantics(self.spark):
            return self.spark.sql(sql)

    def close(self) -> None:
        """Drop the views."""
        for view in self._views.values():
            self.spark.catalog.dropTempView(view)
        self._views.clear()

    def __enter__(self) -> PlanViews:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def plan_frame(
    spark: SparkSession, plan: exp.Expr | str, relations: Mapping[str, DataFrame]
) -> Iterator[DataFrame]:
    """The plan's result as a DataFrame over ``relations``; the views live until the block
    ends (run the actions inside it)."""
    with PlanViews(spark, relations) as views:
        yield views.frame(plan)


@contextmanager
def hive_semantics(spark: SparkSession) -> Iterator[None]:
    """Parse and analyse SQL with ANSI mode off (Hive's NULL-on-failure semantics)."""
    key = "spark.sql.ansi.enabled"
    with _conf_lock:
        before = spark.conf.get(key)
        spark.conf.set(key, "false")
        try:
            yield
        finally:
            spark.conf.set(key, before if before is not None else "true")


def _parse(text: str) -> exp.Expr:
    try:
        return sqlglot.parse_one(text, read=PLAN_DIALECT)
    except sqlglot.errors.ParseError as exc:
        raise InvalidExpressionError(f"cannot parse plan: {exc}") from exc


def estimated_bytes(frame: DataFrame) -> int | None:
    """Spark's estimate of ``frame``'s size (its optimized plan's statistics), or ``None`` where
    the session does not expose it (Spark Connect)."""
    try:
        stats = frame._jdf.queryExecution().optimizedPlan().stats()  # noqa: SLF001
        return int(str(stats.sizeInBytes()))  # a Scala BigInt, or already a Python int
    except Exception:  # noqa: BLE001 - an estimate is optional
        return None


def broadcast_threshold(spark: SparkSession) -> int:
    """``spark.sql.autoBroadcastJoinThreshold`` in bytes (``-1``: broadcasting is off)."""
    text = (spark.conf.get("spark.sql.autoBroadcastJoinThreshold") or "10MB").strip().lower()
    match = re.fullmatch(r"(-?\d+)\s*([kmgt]?)i?b?", text)
    if match is None:
        return -1
    number, unit = int(match.group(1)), match.group(2)
    return number if number < 0 else number * 1024 ** " kmgt".index(unit or " ")
