"""``acid demo``: the seed example end to end on a warehouse of its own.

CREATE, INSERT, UPDATE and MERGE as HiveQL; the directories they wrote; the table under two
snapshots (a reader's transaction taken after the INSERT, and the latest). Everything it prints,
status lines included, goes to stdout: the demo is one story. It ends with a command to look at
the warehouse again that works from any shell.
"""

from __future__ import annotations

import os
import shlex

from rich.markup import escape
from rich.rule import Rule
from rich.syntax import Syntax

from acid_platform.cli.options import open_warehouse
from acid_platform.cli.output import (
    OutputFormat,
    layout_tree,
    out,
    print_result,
    print_table,
    shell_command,
)
from acid_platform.errors import AlreadyExistsError
from acid_platform.metastore.names import DEFAULT_DATABASE
from acid_platform.sql import SqlSession

DEMO_SETUP = """
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
INSERT INTO employee VALUES
(1, 'Jerry', 5000),
(2, 'Tom',   8000),
(3, 'Kate',  6000);
SELECT row__id, id, name, salary FROM employee;
"""
DEMO_CHANGES = """
UPDATE employee SET salary = 7000 WHERE id = 2;
CREATE TABLE employee_update (id int, name string, salary int);
INSERT INTO employee_update VALUES
(2, 'Tom',  7500),
(4, 'Mary', 9000);
MERGE INTO employee AS a
USING employee_update AS b ON a.id = b.id
WHEN MATCHED THEN UPDATE SET salary = b.salary
WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary);
"""
DEMO_QUERY = "SELECT row__id, id, name, salary FROM employee ORDER BY id"


def run_demo(path: str, metastore_url: str | None = None) -> None:
    """The seed-000 walk-through on the warehouse at ``path`` (created if needed; its tables
    must not exist yet)."""
    with (
        open_warehouse(path, metastore_url, create=True) as wh,
        open_warehouse(path, metastore_url) as reader,
    ):
        existing = {"employee", "employee_update"} & set(wh.list_tables(DEFAULT_DATABASE))
        if existing:
            raise AlreadyExistsError(
                f"the demo creates its own tables; {sorted(existing)} exist in {path}: use another -w"
            )
        writer = wh.sql_session
        out.print(Rule(f"acid demo — warehouse {path}"))
        _run(writer, DEMO_SETUP)
        out.print(Rule("a reader opens a transaction: its snapshot is taken now"))
        _run(reader.sql_session, "START TRANSACTION;")
        out.print(Rule("the writer updates and merges (each statement is its own transaction)"))
        _run(writer, DEMO_CHANGES)
        _run(writer, "SHOW TRANSACTIONS;")
        out.print(Rule("directory layout of default.employee"))
        out.print(layout_tree(wh.table("default.employee").location))
        out.print(Rule("the same table under two snapshots"))
        print_table(
            reader.sql_session.execute(DEMO_QUERY),
            title="reader's snapshot (taken after the INSERT)",
        )
        print_table(writer.execute(DEMO_QUERY), title="latest snapshot (after UPDATE and MERGE)")
        reader.sql_session.execute("COMMIT")
    out.print(f"[dim]warehouse left at {escape(path)}; look again with:[/]", soft_wrap=True)
    out.print(escape(next_command(path, metastore_url)), soft_wrap=True)


def next_command(path: str, metastore_url: str | None = None) -> str:
    """The ``acid sql`` command that shows the demo's table again, runnable from a new shell.

    ``acid`` is on the PATH of a new shell only when it was installed outside a virtual
    environment's activation (``pipx``, a system install); a venv's ``acid`` (``bash
    scripts/demo`` installs into ``./.venv``) is named by its absolute path.
    """
    url = f" --metastore-url {shlex.quote(metastore_url)}" if metastore_url else ""
    args = f"sql -w {shlex.quote(os.path.abspath(path))}{url} -e {shlex.quote(DEMO_QUERY)}"
    return f"{_acid_command()} {args}"


def _acid_command() -> str:
    """How a new shell runs this installation's ``acid``."""
    return shell_command("acid", "acid_platform.cli")


def _run(session: SqlSession, text: str) -> None:
    out.print(Syntax(text.strip(), "sql", theme="ansi_dark", background_color="default"))
    session.execute_script(text, on_result=lambda r: print_result(r, OutputFormat.table, out))


__all__ = ["DEMO_CHANGES", "DEMO_QUERY", "DEMO_SETUP", "next_command", "run_demo"]
