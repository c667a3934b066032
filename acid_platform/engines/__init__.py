"""Where rows are computed: implementations of :class:`acid_platform.table.engine.Engine`.

* :class:`~acid_platform.engines.embedded.EmbeddedEngine` — DuckDB over Arrow, no JVM (default).
* a Spark engine (``acid_platform.engines.spark``) implements the same protocol with DataFrames
  as relations, and runs statements whose rows never reach the driver. Nothing below this
  layer imports PySpark.

This package sits above the table layer (whose ``Engine`` and ``NativeEngine`` protocols it
implements) and the compaction layer (whose executor Spark provides): it may import them, never
the other way round. ``acid_platform.Warehouse.default_engine`` returns the embedded engine.

>>> import pyarrow as pa
>>> from acid_platform.engines import default_engine
>>> default_engine().execute("SELECT a + 1 AS b FROM r", {"r": pa.table({"a": [1]})}).to_pylist()
[{'b': 2}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acid_platform.table.engine import Engine


def default_engine() -> Engine:
    """A new embedded (DuckDB) engine."""
    from acid_platform.engines.embedded import EmbeddedEngine

    return EmbeddedEngine()


__all__ = ["default_engine"]
