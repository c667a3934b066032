"""The user-facing table API: a warehouse -> ``Table`` -> statements, in transactions.

>>> from acid_platform import Warehouse
>>> from acid_platform.table import lit
>>> # wh = Warehouse.open("/data/warehouse")
>>> # t = wh.create_table("employee", [("id", "int"), ("name", "string"), ("salary", "int")])
>>> # t.insert([{"id": 1, "name": "Jerry", "salary": 5000}])
>>> # t.update({"salary": 7000}, where="id = 1")
>>> # t.scan(["id", "salary"], where="salary > 6000").to_arrow()
>>> # with wh.transaction():
>>> #     t.delete("id = 1"); t.insert([{"id": 1, "name": lit("x"), "salary": 1}])

The user's warehouse is ``acid_platform.Warehouse``; its base here,
:class:`~.warehouse.TableWarehouse`, is not exported: it names no engine and cannot open on its
own.

Statements write Hive ACID v2 files (``delta_w_w_s``, ``delete_delta_w_w_s``, ``base_w``)
through the format layer's one event writer; UPDATE, DELETE and MERGE are planned once
(:mod:`acid_platform.table.dml`) and run on the warehouse's engine.

This package is the floor of compaction, the engines, streaming and SQL: they are all clients
of its one write lifecycle and its one snapshot. It names no engine: ``TableWarehouse.open``
needs one (``acid_platform.Warehouse`` supplies the embedded engine), and a native engine
registers itself on ``wh.native_engines``.

Modules:

* the API — :mod:`.warehouse` (``TableWarehouse``), :mod:`.catalog_ops` (databases,
  partitions, SHOW / ABORT calls), :mod:`.table` (``Table``), :mod:`.merger` (``TableMerger``),
  :mod:`.expressions` (SQL text or sqlglot trees given to the API), :mod:`.schema` (user data
  fitted to a table), :mod:`.partitions` (Hive's partition names and directories),
  :mod:`.query` (Hive SELECTs over tables: MERGE sources, ``wh.query``);
* the write lifecycle — :mod:`.statement` (``run_write``, detached writes, ``read_snapshot``,
  ``StatementMetrics``, sources a statement loads), :mod:`.transaction` (the user's
  ``Transaction``: commit or roll back; its ``TransactionLedger``: locks, write ids, what
  statements record; heartbeats), :mod:`.written_files` (a statement's files as
  the commit records them), :mod:`.partition_cache` (the partitions a session knows exist),
  :mod:`.host` (what a ``Table`` needs of its warehouse session, as a protocol: modules here
  declare what they need of the warehouse instead of importing :mod:`.warehouse`);
* engines, as protocols only — :mod:`.engine` (``Engine``), :mod:`.native` (``NativeEngine``);
* writing — :mod:`.event_layout` (the one event layout: names, placement, encoding),
  :mod:`.writes` (rows to event files), :mod:`.inserts` (INSERT on the embedded path),
  :mod:`.row_order` (ROW__IDs that depend on the data only);
* the one DML plan — :mod:`.dml`, :mod:`.dml_terms`, :mod:`.dml_join`, :mod:`.dml_read` (the
  target read narrow first), :mod:`.dml_output`, :mod:`.dml_write` (the embedded path);
* the scan planner — :mod:`.scan` (``plan_scan``, the lazy ``TableScan`` ``Table.scan()``
  returns), :mod:`.scan_where` (``ScanFilter``, no SQL parser: what a Spark worker imports),
  :mod:`.scan_filter` (Hive predicates into it), :mod:`.read_lease` (``ReadLease``: a snapshot
  with its reader lease), :mod:`.stream` (``RowStream``);
* :mod:`.deprecation` — the names deprecated in this release, kept one release more;
* :mod:`.changes` — the change feed (``ChangeScan``, the history check below a base);
* whose files are whose — :mod:`.locations` (one metastore per warehouse root, one directory
  per table incarnation), :mod:`.fsck` (files against their record, the repair),
  :mod:`.relocate` (``ALTER TABLE … SET LOCATION``);
* consistency — :mod:`.verify`, :mod:`.verify_rows` (six checks under one snapshot).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acid_platform.table.dml import Action, Clause, ClauseKind, DmlPlan
    from acid_platform.table.expressions import Literal, lit
    from acid_platform.table.merger import TableMerger
    from acid_platform.table.table import Table
    from acid_platform.table.transaction import Transaction
    from acid_platform.table.warehouse import DEFAULT_CONF, DEFAULT_DATABASE

# Imported on first use: a process that needs one module of the layer (a Spark Python worker
# reading splits: ``table.scan``) does not import the statements, SQL parsing and the rest.
_LAZY = {
    "Action": "dml",
    "Clause": "dml",
    "ClauseKind": "dml",
    "DmlPlan": "dml",
    "Literal": "expressions",
    "lit": "expressions",
    "TableMerger": "merger",
    "Table": "table",
    "Transaction": "transaction",
    "DEFAULT_CONF": "warehouse",
    "DEFAULT_DATABASE": "warehouse",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "DEFAULT_CONF",
    "DEFAULT_DATABASE",
    "Action",
    "Clause",
    "ClauseKind",
    "DmlPlan",
    "Literal",
    "Table",
    "TableMerger",
    "Transaction",
    "lit",
]
