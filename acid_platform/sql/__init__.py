"""HiveQL front end: statements -> table API calls.

>>> import tempfile
>>> from acid_platform import Warehouse
>>> wh = Warehouse.open(tempfile.mkdtemp())
>>> _ = run_sql(wh, '''
...     CREATE TABLE employee (id int, name string, salary int)
...       STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
...     INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000);
...     UPDATE employee SET salary = 7000 WHERE id = 2;
... ''')
>>> run_sql(wh, "SELECT name, salary FROM employee ORDER BY name").to_pylist()
[{'name': 'Jerry', 'salary': 5000}, {'name': 'Tom', 'salary': 7000}]
>>> wh.close()

:func:`run_sql` is the entry point (``Warehouse.sql`` delegates to it); the session it uses is
attached to the warehouse object, so ``USE``, ``SET hivevar:…`` and temporary tables persist
across calls, as in one Hive session.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from acid_platform.sql.parser import parse_script, parse_statement
from acid_platform.sql.results import StatementResult
from acid_platform.sql.session import SqlSession, session_for


def run_sql(warehouse: Any, text: str) -> pa.Table:
    """Run one HiveQL statement or a script on ``warehouse``; return the last statement's rows.

    A syntax error anywhere raises :class:`~acid_platform.errors.SqlSyntaxError` before any
    statement runs; otherwise statements run in order and the first failure stops the script.
    """
    return session_for(warehouse).execute(text)


__all__ = [
    "SqlSession",
    "StatementResult",
    "parse_script",
    "parse_statement",
    "run_sql",
    "session_for",
]
