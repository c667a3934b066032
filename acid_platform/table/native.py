"""Native engines: engines whose own relations the table API takes as they are.

The ordinary Python API converts a statement's rows to Arrow and runs it on the embedded engine.
An engine registered here (on ``wh.native_engines``) owns some kinds of data instead — Spark owns
Spark DataFrames — and ``Table.insert`` / ``Table.merge`` hand such data to it whole, so the rows
stay where they are (on Spark's executors) and the statement runs there::

    wh.register_spark(spark)                       # registers Spark as a native engine
    wh.table("t").insert(spark_df)                 # executors write the delta files
    (wh.table("t").merge(spark_df, "t.id = s.id")  # planned here, run on Spark
       .when_matched_update_all().when_not_matched_insert_all().execute())

A native engine runs the table layer's statements — the one DML plan, the one statement
lifecycle (:mod:`.statement`: locks, transaction, ``wh.transaction()`` included, metrics) —
and only computes and writes rows its own way.
The table layer never imports one (engines sit above it): they register themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml import DmlPlan, MatchCount
from acid_platform.table.statement import WriteContext, WriteOutcome
from acid_platform.table.transaction import SharedTransaction


@runtime_checkable
class NativeEngine(Protocol):
    """What the table API asks of an engine that owns some kind of data (see module docs).

    The statement lifecycle (:mod:`.statement`) stays in the table layer: the engine only
    computes rows and writes files inside a :class:`~.statement.WriteContext`.
    """

    #: The engine's name (one registered engine per name).
    name: str
    #: The form of MERGE's cardinality check that suits the engine.
    match_count: MatchCount

    def accepts(self, data: Any) -> bool:
        """Whether ``data`` is a relation of this engine."""
        ...

    def columns(self, data: Any) -> list[str]:
        """The column names of one of its relations."""
        ...

    def prepare_insert(
        self, spec: TableSpec, data: Any, partition: Mapping[str, Any] | None
    ) -> tuple[Any, str | None]:
        """Check ``data`` against the table and add static partition values; returns the
        relation to write and the static partition's name (when it names one whole partition)."""
        ...

    def write_rows(self, ctx: WriteContext, relation: Any, overwrite: bool) -> WriteOutcome:
        """INSERT (``base_w`` for INSERT OVERWRITE) the prepared relation's rows."""
        ...

    def write_plan(
        self, ctx: WriteContext, plan: DmlPlan, source: Any, where: object = None
    ) -> WriteOutcome:
        """Run a planned UPDATE / DELETE / MERGE and write its events; ``source`` is a relation
        of the engine or a function computing the rows (Arrow) in ``ctx.txn``."""
        ...

    def share_transaction(self, shared: SharedTransaction | None) -> None:
        """The warehouse's open multi-statement transaction, which the statements the engine
        plans on its own (Spark SQL's DML) join; ``None`` once it ended."""
        ...


class NativeEngines:
    """The native engines of one warehouse, asked in registration order."""

    def __init__(self) -> None:
        self._engines: list[NativeEngine] = []

    def register(self, engine: NativeEngine) -> None:
        """Add ``engine``; it replaces a registered engine of the same name."""
        self._engines = [e for e in self._engines if e.name != engine.name] + [engine]

    def unregister(self, name: str) -> None:
        """Remove the engine called ``name`` (if registered)."""
        self._engines = [e for e in self._engines if e.name != name]

    def for_data(self, data: Any) -> NativeEngine | None:
        """The engine that owns ``data``, or ``None`` (the table API converts it to Arrow)."""
        if isinstance(data, str):  # SQL text: the table layer's own source
            return None
        return next((e for e in self._engines if e.accepts(data)), None)

    def share_transaction(self, shared: SharedTransaction | None) -> None:
        """Tell every engine of the open multi-statement transaction (``None``: it ended)."""
        for engine in self._engines:
            engine.share_transaction(shared)

    def __iter__(self) -> Iterator[NativeEngine]:
        return iter(list(self._engines))

    def __len__(self) -> int:
        return len(self._engines)
