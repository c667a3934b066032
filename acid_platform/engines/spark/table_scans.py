"""The Python half of a scan of a table read by name or loaded (:file:`jvm/AcidScans.java`).

For ``spark.table("db.t")``, ``spark.sql("SELECT … FROM db.t")``,
``spark.read.format("acid").load("db.t")`` and views over them, Spark plans each query's scan
through the session catalog extension's table (:file:`jvm/AcidSource.java` gives ``load()`` the
same one): its ScanBuilder takes the query's required columns (the Python reader gets the pruned
schema) and its conjuncts on partition columns, which reach the reader as the
``_partition_filter`` option — a new Python data source instance per scan, so they never reach
another query. Spark still evaluates every predicate after the scan; the conjuncts only skip
partition directories.

* :func:`partition_conjuncts` — that option as the reader's partition conjuncts (checked
  against the columns' types: one that does not compare exactly is dropped, which only reads
  more);
* :func:`scan_bytes` — the bytes of the files the table's latest snapshot reads in those
  partitions: the size the scan reports to Spark (``SupportsReportStatistics``), which makes
  Spark broadcast a small table.

>>> import pyarrow as pa
>>> conjuncts_of('[["ds","=","string",["a"]],["n","in","int",[1,2]]]',
...              {"ds": pa.string(), "n": pa.int32()})
[('ds', '=', 'a'), ('n', 'in', [1, 2])]
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from acid_platform.engines.spark.filters import Conjunct, fits, matching_rows
from acid_platform.engines.spark.options import SourceOptions, table_location
from acid_platform.metastore.model import TableSpec
from acid_platform.table.read_lease import take_snapshot
from acid_platform.table.scan import plan_files
from acid_platform.table.scan_where import ScanFilter
from acid_platform.table.schema import table_schema

#: The option :file:`jvm/AcidScans.java` hands a scan's partition conjuncts in.
PARTITION_FILTER = "_partition_filter"
#: The option naming the decimal columns the scan asks for as unscaled ``int64`` (at most 18
#: digits: Spark keeps such a decimal as that long in its rows; see :file:`jvm/AcidScans.java`).
UNSCALED_DECIMALS = "_unscaled_decimals"
_EPOCH = dt.date(1970, 1, 1)
_OPS = {"=", "<", "<=", ">", ">=", "in"}


def partition_conjuncts(raw: Mapping[str, str], spec: TableSpec) -> list[Conjunct]:
    """The scan's partition conjuncts given in ``raw`` (the source's options, lower-cased
    keys), on ``spec``'s partition columns."""
    text = raw.get(PARTITION_FILTER)
    if not text:
        return []
    parts = set(spec.partition_column_names)
    types = {f.name: f.type for f in table_schema(spec) if f.name in parts}
    return conjuncts_of(text, types)


def unscaled_decimals(raw: Mapping[str, str]) -> frozenset[str]:
    """The columns a scan reads as unscaled ``int64`` (option :data:`UNSCALED_DECIMALS`)."""
    return frozenset(c for c in (raw.get(UNSCALED_DECIMALS) or "").split(",") if c)


def conjuncts_of(text: str, types: Mapping[str, pa.DataType]) -> list[Conjunct]:
    """``[[column, op, kind, [values]], …]`` as conjuncts on columns of ``types``."""
    out: list[Conjunct] = []
    for column, op, kind, raw_values in json.loads(text):
        typ = types.get(column)
        values = [_value(kind, v) for v in raw_values]
        if typ is None or op not in _OPS or not values or not all(fits(v, typ) for v in values):
            continue
        out.append((column, op, values if op == "in" else values[0]))
    return out


def _value(kind: str, value: Any) -> Any:
    if kind == "date":
        return _EPOCH + dt.timedelta(days=int(value))
    if kind == "int":
        return int(value)
    return str(value)


def scan_bytes(options: SourceOptions, spec: TableSpec, conjuncts: list[Conjunct]) -> int:
    """Bytes of the files (rows and delete events) the latest snapshot of ``spec`` reads in the
    partitions ``conjuncts`` leave (no reader lease: nothing is read)."""
    snapshots, _ = take_snapshot(options.metastore(), [spec], lease=False, agent="spark stats")
    where = None
    if conjuncts:
        where = ScanFilter(partitions=functools.partial(matching_rows, conjuncts=conjuncts))
    files = plan_files(spec, table_location(spec.location), snapshots[spec.full_name], where)
    return sum(p.size for p in files)
