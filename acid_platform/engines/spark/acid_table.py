"""DELETE, UPDATE and MERGE INTO as a DataFrame API, in the shape Delta Lake's Spark users know.

>>> # from acid_platform.engines.spark import AcidTable
>>> # t = AcidTable.forName(spark, "db.t")
>>> # t.delete("ds = '2024-01-01' AND id IN (SELECT id FROM gone)")
>>> # t.update(F.col("id") > 3, {"v": F.upper("v"), "n": "n + 1"})
>>> # (t.alias("t").merge(updates.alias("s"), "t.id = s.id")
>>> #   .whenMatchedDelete("s.deleted")
>>> #   .whenMatchedUpdateAll()
>>> #   .whenNotMatchedInsertAll()
>>> #   .whenNotMatchedBySourceUpdate("t.ds < '2024'", {"v": "'stale'"})
>>> #   .execute())

A handle on a table by name (``wh.register_spark(spark)`` first), with ``delete(condition)``,
``update(condition, set)`` and ``merge(source, condition)`` → :class:`AcidMergeBuilder`
(``whenMatchedUpdate(condition, set)``, ``whenMatchedUpdateAll``, ``whenMatchedDelete``,
``whenNotMatchedInsert(condition, values)``, ``whenNotMatchedInsertAll``,
``whenNotMatchedBySourceUpdate``, ``whenNotMatchedBySourceDelete``, then ``execute()``).
Conditions and values are Spark SQL strings or pyspark ``Column``\\ s; ``set`` / ``values`` map
target column names to either. Each call is one Spark SQL statement — ``DELETE FROM``,
``UPDATE``, ``MERGE INTO`` — run as ``spark.sql`` runs it, so it has exactly the semantics,
planning and Hive layout of Spark SQL DML on the table (:mod:`.row_level`): one transaction,
subqueries in string conditions, MERGE's cardinality rule, partitions pruned. A merge's source
DataFrame is a temporary view of a unique name for the statement (dropped afterwards),
``USING`` it under the DataFrame's alias (``df.alias("s")``) or ``source``; the target is
named by the handle's alias (``.alias("t")``) or by its table name. Clauses of one kind keep
their order (the first whose condition holds acts); Spark's grammar puts MATCHED before NOT
MATCHED before NOT MATCHED BY SOURCE. Each call returns the DataFrame ``spark.sql`` returns.

A ``Column`` is not printed back to SQL: it stands in the statement's text as a placeholder
name that :file:`jvm/AcidDml.java` replaces, in the parsed plan, by the Column's own
expression.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame

from acid_platform.errors import NoSuchObjectError, SemanticError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What a condition or a value may be: Spark SQL text or a Column.
Expr = str | Column
_PLACEHOLDER = "__acid_column_{}"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _Statement:
    """A statement's text, with Columns as placeholders (see module docs)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.columns: list[Column] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def expr(self, e: Expr, what: str) -> str:
        if isinstance(e, Column):
            name = _PLACEHOLDER.format(len(self.columns))
            self.columns.append(e)
            return _quoted(name)
        if isinstance(e, str) and e.strip():
            return f"({e})"
        raise SemanticError(f"{what}: expected Spark SQL text or a Column, got {e!r}")

    def condition(self, keyword: str, condition: Expr | None, what: str) -> None:
        if condition is not None:
            self.add(f"{keyword} {self.expr(condition, what)}")

    def assignments(self, mapping: Mapping[str, Expr] | None, what: str) -> str:
        if not mapping:
            raise SemanticError(f"{what}: give the columns to set, {{'column': value, …}}")
        return ", ".join(f"{_quoted(c)} = {self.expr(v, what)}" for c, v in mapping.items())

    def run(self, spark: SparkSession) -> DataFrame:
        from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

        text = " ".join(self.parts)
        jvm = spark._jvm  # noqa: SLF001 - PySpark's handle on the JVM (a classic session)
        gateway = spark.sparkContext._gateway  # noqa: SLF001
        if jvm is None or gateway is None:
            raise SemanticError("AcidTable needs a classic Spark session (not Spark Connect)")
        names = gateway.new_array(jvm.String, len(self.columns))
        columns = gateway.new_array(jvm.org.apache.spark.sql.Column, len(self.columns))
        for i, c in enumerate(self.columns):
            names[i] = _PLACEHOLDER.format(i)
            columns[i] = c._jc  # noqa: SLF001 - the Column's JVM object
        session = spark._jsparkSession  # noqa: SLF001
        # the catalog's jar (catalog_install), on the driver's class path
        jdf = jvm.acid_platform.spark.AcidDml.run(session, text, names, columns)
        return ClassicFrame(jdf, spark)


class AcidTable:
    """A warehouse table by name, for DML from DataFrame code (see module docs)."""

    def __init__(self, spark: SparkSession, name: str, alias: str | None = None) -> None:
        self._spark = spark
        self._name = name
        self._alias = alias

    @classmethod
    def forName(cls, spark: SparkSession, name: str) -> AcidTable:  # noqa: N802 - Delta's name
        """The table ``name`` (``db.t``; ``t`` in the current database) of ``spark``'s
        catalog; :class:`~acid_platform.errors.NoSuchObjectError` if it has none."""
        if not spark.catalog.tableExists(name):
            raise NoSuchObjectError(f"table {name} does not exist (wh.register_spark(spark)?)")
        return cls(spark, name)

    def alias(self, alias: str) -> AcidTable:
        """This table, named ``alias`` in conditions and values."""
        return AcidTable(self._spark, self._name, alias)

    def toDF(self) -> DataFrame:  # noqa: N802 - Delta's name
        """The table's rows (its latest snapshot at each query)."""
        df = self._spark.table(self._name)
        return df.alias(self._alias) if self._alias else df

    def _target(self) -> str:
        target = ".".join(_quoted(p) for p in self._name.split("."))
        return f"{target} AS {_quoted(self._alias)}" if self._alias else target

    def delete(self, condition: Expr | None = None) -> DataFrame:
        """``DELETE FROM t [WHERE condition]``."""
        stmt = _Statement()
        stmt.add(f"DELETE FROM {self._target()}")
        stmt.condition("WHERE", condition, "delete")
        return stmt.run(self._spark)

    def update(
        self,
        condition: Expr | None = None,
        set: Mapping[str, Expr] | None = None,  # noqa: A002 - Delta's name
    ) -> DataFrame:
        """``UPDATE t SET c = value, … [WHERE condition]``."""
        stmt = _Statement()
        stmt.add(f"UPDATE {self._target()} SET {stmt.assignments(set, 'update')}")
        stmt.condition("WHERE", condition, "update")
        return stmt.run(self._spark)

    def merge(self, source: DataFrame, condition: Expr) -> AcidMergeBuilder:
        """``MERGE INTO t USING source ON condition …``: add clauses, then ``execute()``."""
        return AcidMergeBuilder(self._spark, self._target(), source, condition)


class AcidMergeBuilder:
    """The clauses of one MERGE INTO (see module docs); ``execute()`` runs it."""

    def __init__(
        self, spark: SparkSession, target: str, source: DataFrame, condition: Expr
    ) -> None:
        self._spark = spark
        self._target = target
        self._source = source
        self._condition = condition
        #: (kind, condition, action) — kind 0 MATCHED, 1 NOT MATCHED, 2 NOT MATCHED BY SOURCE
        self._clauses: list[tuple[int, Expr | None, str, Mapping[str, Expr] | None]] = []

    def _add(
        self, kind: int, condition: Expr | None, action: str, mapping: Mapping[str, Expr] | None
    ) -> AcidMergeBuilder:
        self._clauses.append((kind, condition, action, mapping))
        return self

    def whenMatchedUpdate(  # noqa: N802 - Delta's names, here and below
        self,
        condition: Expr | None = None,
        set: Mapping[str, Expr] | None = None,  # noqa: A002
    ) -> AcidMergeBuilder:
        """``WHEN MATCHED [AND condition] THEN UPDATE SET c = value, …``."""
        return self._add(0, condition, "UPDATE", set)

    def whenMatchedUpdateAll(self, condition: Expr | None = None) -> AcidMergeBuilder:  # noqa: N802
        """``WHEN MATCHED [AND condition] THEN UPDATE SET *``."""
        return self._add(0, condition, "UPDATE *", None)

    def whenMatchedDelete(self, condition: Expr | None = None) -> AcidMergeBuilder:  # noqa: N802
        """``WHEN MATCHED [AND condition] THEN DELETE``."""
        return self._add(0, condition, "DELETE", None)

    def whenNotMatchedInsert(  # noqa: N802
        self, condition: Expr | None = None, values: Mapping[str, Expr] | None = None
    ) -> AcidMergeBuilder:
        """``WHEN NOT MATCHED [AND condition] THEN INSERT (c, …) VALUES (value, …)``."""
        return self._add(1, condition, "INSERT", values)

    def whenNotMatchedInsertAll(self, condition: Expr | None = None) -> AcidMergeBuilder:  # noqa: N802
        """``WHEN NOT MATCHED [AND condition] THEN INSERT *``."""
        return self._add(1, condition, "INSERT *", None)

    def whenNotMatchedBySourceUpdate(  # noqa: N802
        self,
        condition: Expr | None = None,
        set: Mapping[str, Expr] | None = None,  # noqa: A002
    ) -> AcidMergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET c = value, …``."""
        return self._add(2, condition, "UPDATE", set)

    def whenNotMatchedBySourceDelete(self, condition: Expr | None = None) -> AcidMergeBuilder:  # noqa: N802
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE``."""
        return self._add(2, condition, "DELETE", None)

    def execute(self) -> DataFrame:
        """Run the MERGE INTO: one statement, the source a temporary view for its duration."""
        if not self._clauses:
            raise SemanticError("merge: add at least one when… clause before execute()")
        view = f"acid_merge_source_{uuid.uuid4().hex}"
        stmt = _Statement()
        stmt.add(
            f"MERGE INTO {self._target} USING {_quoted(view)} "
            f"AS {_quoted(_alias_of(self._source) or 'source')} "
            f"ON {stmt.expr(self._condition, 'merge condition')}"
        )
        heads = ("WHEN MATCHED", "WHEN NOT MATCHED", "WHEN NOT MATCHED BY SOURCE")
        for kind, condition, action, mapping in sorted(self._clauses, key=lambda c: c[0]):
            stmt.add(heads[kind])
            stmt.condition("AND", condition, f"{heads[kind].lower()} condition")
            stmt.add(f"THEN {_action(stmt, action, mapping)}")
        self._source.createOrReplaceTempView(view)
        try:
            return stmt.run(self._spark)
        finally:
            self._spark.catalog.dropTempView(view)


def _action(stmt: _Statement, action: str, mapping: Mapping[str, Expr] | None) -> str:
    if action == "UPDATE":
        return f"UPDATE SET {stmt.assignments(mapping, 'merge update')}"
    if action == "INSERT":
        if not mapping:
            raise SemanticError("merge insert: give the values, {'column': value, …}")
        columns = ", ".join(_quoted(c) for c in mapping)
        values = ", ".join(stmt.expr(v, "merge insert") for v in mapping.values())
        return f"INSERT ({columns}) VALUES ({values})"
    return {"UPDATE *": "UPDATE SET *", "INSERT *": "INSERT *", "DELETE": "DELETE"}[action]


def _alias_of(df: DataFrame) -> str | None:
    """The alias of ``df.alias("s")`` (its plan's top node), or None."""
    plan = df._jdf.logicalPlan()  # noqa: SLF001 - the DataFrame's JVM object
    return str(plan.alias()) if plan.nodeName() == "SubqueryAlias" else None


__all__ = ["AcidMergeBuilder", "AcidTable"]
