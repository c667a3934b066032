"""HiveQL front end: statements -> table API calls.

>>> import tempfile
>>> from acid_platform import Warehouse
>>> wh = Warehouse.open(tempfile.mkdtemp())
>>> _ = wh.sql('''
...     CREATE TABLE employee (id int, name string, salary int)
...       STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
...     INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000);
...     UPDATE employee SET salary = 7000 WHERE id = 2;
... ''')
>>> wh.sql_session.execute("SELECT name, salary FROM employee ORDER BY name").to_pylist()
[{'name': 'Jerry', 'salary': 5000}, {'name': 'Tom', 'salary': 7000}]
>>> wh.close()

A :class:`SqlSession` runs HiveQL on a table-layer warehouse
(:class:`~acid_platform.table.TableWarehouse`). ``acid_platform.Warehouse`` owns one
(``wh.sql_session``, which ``wh.sql(text)`` uses), so ``USE``, ``SET hivevar:…`` and temporary
tables persist across calls, as in one Hive session.

Modules:

* reading — :mod:`.script` (splitting on ``;``, ``${var}`` substitution), :mod:`.commands`
  (Hive-only statements, read from tokens), :mod:`.translate` (sqlglot trees to statements),
  :mod:`.parser`, :mod:`.statements` (statements as values, expressions kept as trees);
* checking — :mod:`.sandbox` (every call HiveQL may not make is refused before an engine sees
  it), :mod:`.settings` (which ``SET`` keys take effect);
* running — :mod:`.session` and :mod:`.state`, :mod:`.executor` (dispatch), the handlers
  :mod:`.ddl`, :mod:`.dml` and :mod:`.admin`, :mod:`.select` (SELECT on the embedded engine),
  :mod:`.subqueries`, :mod:`.show_compactions`;
* Hive's meaning — :mod:`.functions` (built-ins whose meaning sqlglot's transpile loses),
  :mod:`.datetimes` (``SimpleDateFormat``), :mod:`.chars` (char comparisons);
* output — :mod:`.display` (values as Hive prints them), :mod:`.results`.

They import one way (a test checks there is no cycle): :mod:`.script` / :mod:`.commands` /
:mod:`.translate` <- :mod:`.parser`; :mod:`.select` <- :mod:`.state` <- the handlers
(:mod:`.ddl`, :mod:`.dml`, :mod:`.admin`) <- :mod:`.executor` <- :mod:`.session`.
"""

from __future__ import annotations

from acid_platform.sql.parser import parse_script, parse_statement
from acid_platform.sql.results import StatementResult
from acid_platform.sql.session import SqlSession

__all__ = ["SqlSession", "StatementResult", "parse_script", "parse_statement"]
