"""An output's rows as the writes see them, whatever holds them: Arrow (pandas converts to it)
or a Spark DataFrame (:mod:`.spark_io`). The writes ask only these questions, so one write path
serves every type handler and Spark's rows never reach the driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
from sqlglot import exp

from acid_platform.table import Table
from acid_platform.table.engine import Engine
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.schema import conform


class Frame(Protocol):
    """The rows of one output."""

    #: What the table API takes (``Table.insert`` / ``Table.merge``).
    data: Any

    def schema(self) -> pa.Schema:
        """The columns and their Arrow types (a new table is created from them)."""
        ...

    def count_outside(self, predicate: exp.Expr) -> int:
        """How many rows do not satisfy ``predicate`` (NULL counts as not satisfied)."""
        ...

    def partition_names(self, columns: Sequence[str]) -> list[str]:
        """The Hive partition names (``k=v/…``) the rows fall in, for partition ``columns``."""
        ...

    def distinct(self, columns: Sequence[str]) -> Any:
        """The distinct values of ``columns``, as data the table API takes."""
        ...

    def conformed(self, table: Table, *, keys_only: bool = False) -> Frame:
        """These rows as ``table``'s columns (names and types), so predicates compare like
        with like; ``keys_only`` (a delete's rows): only the table columns the rows have."""
        ...


class ArrowFrame:
    """Rows held as an Arrow table; predicates run on the warehouse's engine."""

    def __init__(self, data: pa.Table, engine: Engine) -> None:
        self.data = data
        self._engine = engine

    @classmethod
    def of(cls, data: pa.Table, engine: Engine) -> ArrowFrame:
        """An output's rows, column names lower case (as Hive names columns; no copy)."""
        return cls(data.rename_columns([n.lower() for n in data.column_names]), engine)

    def schema(self) -> pa.Schema:
        return self.data.schema

    def count_outside(self, predicate: exp.Expr) -> int:
        query = (
            exp.select(exp.alias_(exp.Count(this=exp.Star()), "n"))
            .from_("rows")
            .where(exp.not_(exp.Coalesce(this=predicate.copy(), expressions=[exp.false()])))
        )
        result = self._engine.execute(query, {"rows": self.data})
        return int(result.column("n")[0].as_py())

    def partition_names(self, columns: Sequence[str]) -> list[str]:
        if self.data.num_rows == 0:
            return []
        values = self.data.select(list(columns)).group_by(list(columns)).aggregate([])
        return sorted(
            make_partition_name(columns, [row[c] for c in columns]) for row in values.to_pylist()
        )

    def distinct(self, columns: Sequence[str]) -> pa.Table:
        return self.data.select(list(columns)).group_by(list(columns)).aggregate([])

    def conformed(self, table: Table, *, keys_only: bool = False) -> ArrowFrame:
        target = table.schema
        data = self.data
        if keys_only:
            have = set(data.column_names)
            target = pa.schema([f for f in target if f.name in have])
            data = data.select(target.names)
        return ArrowFrame(conform(table.name, data, target), self._engine)


__all__ = ["ArrowFrame", "Frame"]
