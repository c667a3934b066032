"""The user-facing table API: ``TableWarehouse`` -> ``Table`` -> statements, in transactions.

>>> from acid_platform.table import TableWarehouse, lit
>>> # wh = TableWarehouse.open("/data/warehouse")
>>> # t = wh.create_table("employee", [("id", "int"), ("name", "string"), ("salary", "int")])
>>> # t.insert([{"id": 1, "name": "Jerry", "salary": 5000}])
>>> # t.update({"salary": 7000}, where="id = 1")
>>> # with wh.transaction():
>>> #     t.delete("id = 1"); t.insert([{"id": 1, "name": lit("x"), "salary": 1}])

Statements write Hive ACID v2 files (``delta_w_w_s``, ``delete_delta_w_w_s``, ``base_w``)
through the format layer's one event writer; UPDATE, DELETE and MERGE are planned once
(:mod:`acid_platform.table.dml`) and run on the warehouse's engine.
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
    from acid_platform.table.warehouse import DEFAULT_CONF, DEFAULT_DATABASE, TableWarehouse

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
    "TableWarehouse": "warehouse",
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
    "TableWarehouse",
    "lit",
]
