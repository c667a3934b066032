"""The :class:`Engine` protocol: where the table layer's plans are computed.

An engine runs a query plan — a sqlglot AST (or text) in Hive's dialect — over named relations
and returns the result as Arrow. The table layer plans every row-level statement once (see
:mod:`acid_platform.table.dml`) and hands the plan to whichever engine the warehouse was opened
with; engines translate dialects, never semantics. Implementations live above this layer in
:mod:`acid_platform.engines` (the embedded DuckDB engine, Spark), so the table layer never
imports one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
from sqlglot import exp

from acid_platform.table.stream import RowStream

#: The dialect plans are written in (Hive's, as the rewrite rules are Hive's).
PLAN_DIALECT = "hive"


@runtime_checkable
class Engine(Protocol):
    """Runs a plan over relations.

    ``relations`` maps the relation names the plan reads (``target``, ``source``, …) to data the
    engine understands: Arrow tables for the embedded engine, DataFrames for Spark. The result is
    an Arrow table whose columns are the plan's output columns, in order.
    """

    name: str

    def execute(self, plan: exp.Expr | str, relations: Mapping[str, Any]) -> pa.Table:
        """Run ``plan`` (Hive dialect) over ``relations``; return the rows as Arrow."""
        ...

    def close(self) -> None:
        """Release the engine's resources."""
        ...


@runtime_checkable
class StreamingEngine(Engine, Protocol):
    """An engine that can also hand a plan's result over as it is computed (the embedded one):
    relations may then be ``RecordBatchReader`` s, each read once."""

    def execute_batches(self, plan: exp.Expr | str, relations: Mapping[str, Any]) -> RowStream:
        """Run ``plan`` over ``relations``; the rows stream (see :class:`RowStream`)."""
        ...


__all__ = ["PLAN_DIALECT", "Engine", "StreamingEngine"]
