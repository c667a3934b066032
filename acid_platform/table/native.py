"""Native engines: engines whose own relations the table API takes as they are.

The ordinary Python API converts a statement's rows to Arrow and runs it on the embedded engine.
An engine registered here (on ``wh.native_engines``) owns some kinds of data instead — Spark owns
Spark DataFrames — and ``Table.insert`` / ``Table.merge`` hand such data to it whole, so the rows
stay where they are (on Spark's executors) and the statement runs there::

    wh.register_spark(spark)                       # registers Spark as a native engine
    wh.table("t").insert(spark_df)                 # executors write the delta files
    (wh.table("t").merge(spark_df, "t.id = s.id")  # planned here, run on Spark
       .when_matched_update_all().when_not_matched_insert_all().execute())

A native engine runs the table layer's statements — the one DML plan, the same locks and
transaction (``wh.transaction()`` included) — and only computes and writes rows its own way.
The table layer never imports one (engines sit above it): they register themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from acid_platform.metastore.model import LockComponent, TableSpec
from acid_platform.table.dml import DmlPlan, MatchCount

if TYPE_CHECKING:
    import pyarrow as pa

    from acid_platform.table.table import Table
    from acid_platform.table.transaction import Transaction


@runtime_checkable
class NativeEngine(Protocol):
    """What the table API asks of an engine that owns some kind of data (see module docs)."""

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

    def write(
        self,
        data: Any,
        table: Table,
        *,
        mode: str = "append",
        partition: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """INSERT INTO (``"append"``) / INSERT OVERWRITE (``"overwrite"``) ``table`` with the
        rows of ``data`` as one statement; ``partition``: static partition values. Returns the
        metrics ``Table.insert`` returns."""
        ...

    def run_plan(
        self,
        table: Table,
        spec: TableSpec,
        plan: DmlPlan,
        where: object = None,
        *,
        source: Any | Callable[[Transaction], pa.Table] | None = None,
        lock_extra: Sequence[LockComponent] = (),
    ) -> dict[str, Any]:
        """Run a planned UPDATE / DELETE / MERGE as one statement; ``source`` is a relation of
        the engine or a function computing the rows (Arrow) in the statement's transaction.
        Returns the metrics ``Table._run_plan`` returns."""
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

    def __iter__(self) -> Any:
        return iter(list(self._engines))

    def __len__(self) -> int:
        return len(self._engines)
