"""Every statement of the seeds (``seed_statements.sql``, extracted from the seed documents),
run in order through ``acid sql`` in one real process and one warehouse, each result checked
against the value Hive gives: the rows the seeds show (or Hive's semantics, from Hive's sources),
Hive's status line, or — where the seed's SQL fails in Hive too — Hive's error.

The statements are piped into the ``acid sql`` shell, which goes on after an error as Hive's
CLI with ``hive.cli.errors.ignore`` does; a ``SET hivevar:seed_statement=N`` before statement N
marks where its output starts (stdout and stderr share one unbuffered pipe, so the output of
each statement lands between its marker and the next). Before the seeds, the context they were
written in: seed 003's ``tmp`` database and the ``click`` table with duplicated rows (the blog
shows neither).
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from acid_platform.sql.script import split_script

SEED_STATEMENTS = Path(__file__).with_name("seed_statements.sql")
ACID = [sys.executable, "-u", "-m", "acid_platform.cli"]
CONTEXT = """
create database tmp;
create table click (client_name string, contact_id int, ts_utc string, load_ts int);
insert into click values ('a', 1, 't1', 10), ('a', 1, 't1', 11), ('a', 1, 't1', 12),
                         ('b', 2, 't2', 10);
"""
MARKER = re.compile(r"^OK hivevar:seed_statement=(\d+)$")
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


@dataclass(frozen=True)
class Expect:
    """What Hive gives for one statement: ``rows`` (header, then each row, as Hive's text of
    each value; a compiled pattern matches a value), a ``status`` line fragment, or an
    ``error`` (our error type and Hive's words, which our message carries)."""

    start: str
    rows: list[Sequence[str | re.Pattern[str]]] | None = None
    status: str | None = None
    error: tuple[str, str] | None = None
    why: str = ""


def ok(start: str, status: str | None = None, why: str = "") -> Expect:
    return Expect(start, status=status, why=why)


def rows(start: str, *lines: Sequence[str | re.Pattern[str]], why: str = "") -> Expect:
    return Expect(start, rows=list(lines), why=why)


def fails(start: str, error_type: str, hive_words: str, why: str = "") -> Expect:
    return Expect(start, error=(error_type, hive_words), why=why)


COUNT_0 = rows("select count(*) from npe", ["_c0"], ["0"])
DAYS = [["d"]] + [[f"2010-01-{d:02d}"] for d in range(1, 11)]
EXPECTED = [
    # ---------------------------------------------------------------- seed 000
    ok("CREATE TABLE employee", "table default.employee created"),
    ok("INSERT INTO employee", "inserted 3 row(s)"),
    rows(
        "SELECT row__id, id, name, salary",
        ["row__id", "id", "name", "salary"],
        ['{"writeid":1,"bucketid":536870912,"rowid":0}', "1", "Jerry", "5000"],
        ['{"writeid":1,"bucketid":536870912,"rowid":1}', "2", "Tom", "8000"],
        ['{"writeid":1,"bucketid":536870912,"rowid":2}', "3", "Kate", "6000"],
        why="seed 000 shows these ROW__IDs",
    ),
    ok("UPDATE employee SET salary", "updated 1 row(s)"),
    ok("CREATE TABLE employee_update"),
    ok("INSERT INTO employee_update", "inserted 2 row(s)"),
    ok("MERGE INTO employee", "(1 inserted, 1 updated, 0 deleted)"),
    ok("ALTER TABLE employee COMPACT 'minor'", "Compaction enqueued with id 1"),
    ok(
        "ALTER TABLE employee COMPACT 'major'",
        "Compaction already enqueued with id 1; State is initiated",
        why="Hive's AlterTableCompactOperation: the minor one is still initiated",
    ),
    # ---------------------------------------------------------------- seed 001
    rows(
        "SHOW TRANSACTIONS",
        ["Transaction ID", "Transaction State", "Started Time", "Last Heartbeat Time", "User",
         "Hostname"],
        why="no open or aborted transaction",
    ),  # fmt: skip
    rows(
        "SHOW COMPACTIONS",
        ["CompactionId", "Database", "Table", "Partition", "Type", "State", "Worker host",
         "Worker", "Enqueue Time", "Start Time", "Duration(ms)", "HadoopJobId", "Error message",
         "Initiator host", "Initiator", "Pool name", "TxnId", "Next TxnId", "Commit Time",
         "Highest WriteId"],
        ["1", "default", "employee", "---", "MINOR", "initiated", "---", "---", TIME,
         *["---"] * 11],
        why="Hive 4's columns; the major request was not enqueued",
    ),  # fmt: skip
    rows(
        "SHOW LOCKS",
        ["Lock ID", "Database", "Table", "Partition", "State", "Blocked By", "Type",
         "Transaction ID", "Last Heartbeat", "Acquired At", "User", "Hostname", "Agent Info"],
    ),  # fmt: skip
    fails(
        "ALTER TABLE employee PARTITION",
        "InvalidPartitionError",
        "table is not partitioned but partition spec exists: {ds=2014-04-23}",
        why="the wiki's employee is partitioned, the seed-000 one is not: Hive's "
        "ValidationFailureSemanticException (Table.validatePartColumnNames)",
    ),
    ok("CREATE TABLE no_auto"),
    # ---------------------------------------------------------------- seed 002
    ok("CREATE TABLE emp"),
    ok("INSERT INTO emp", "inserted 3 row(s)"),
    fails(
        "UPDATE people",
        "NoSuchObjectError",
        "Table not found 'people'",
        why="seed 002's own typo; Hive: SemanticException [Error 10001]",
    ),
    ok("ALTER TABLE emp COMPACT", "Compaction enqueued with id 2"),
    # ---------------------------------------------------------------- seed 003
    ok("create table tmp.tstmerge"),
    ok("create table tmp.srcmerge", "created with 1 row(s)"),
    fails(
        "merge into tmp.tstmerge",
        "UnknownColumnError",
        "Invalid column reference 'b'",
        why="srcmerge has no column b (the blog's typo): Hive's Error 10002",
    ),
    rows("select row__id from tmp.tstmerge", ["row__id"]),
    ok("set hive.merge.cardinality.check=false"),
    ok("create table something"),
    ok("set hivevar:D="),
    ok("set hivevar:DISPLAY_TZ='Europe/Amsterdam'"),
    ok("set hivevar:DISPLAY_TZ='America/New_York'"),
    ok("set hivevar:DISPLAY_TZ='UTC'"),
    ok("set hivevar:DISPLAY_TZ='Australia/Adelaide'"),
    ok("set hivevar:dateintz="),
    ok("set hivevar:delta="),
    rows(
        "select concat(",
        ["dtwithoffset"],
        ["2018-06-01 10:32:02+09:30"],
        why="Adelaide is UTC+09:30 in June (the seed's non-integer offset)",
    ),
    ok("create table npe"),
    # Hive 1.2.1 threw a NullPointerException estimating the map's size at compile time (the
    # seed's StatsUtils.getSizeOfMap trace); what Hive computes is the count: 0 rows.
    COUNT_0,
    rows("select count(*) from npe where m is not null", ["_c0"], ["0"]),
    rows("select count(*) from npe where not m is not null", ["_c0"], ["0"]),
    rows("select count(*) from npe where int(m is not null)=0", ["_c0"], ["0"]),
    fails(
        "with a as (select null) insert",
        "SemanticError",
        "Cannot insert into target table because column number/types are different "
        "'default.npe': Cannot convert column 0 from void to map<bigint,bigint>.",
        why="the seed shows Hive's Error 10044 (genConversionSelectOperator: no conversion "
        "into a complex type)",
    ),
    ok("with a as (select map(", "inserted 1 row(s)"),
    rows(
        "select m, size(m), isnull(m)",
        ["m", "_c1", "_c2"],
        ["{}", "0", "false"],
        why="exactly the table the seed shows",
    ),
    # Hive's semantics delete every duplicate but the first loaded (the blog's Hive failed with
    # an InterruptedException inside Tez, a runtime failure, not an error of the statement)
    ok("merge into click as dst using (", "(0 inserted, 0 updated, 2 deleted)"),
    ok("create temporary table clickdups", "created with 0 row(s)"),
    ok("merge into click as dst using clickdups", "(0 inserted, 0 updated, 0 deleted)"),
    ok("set hivevar:start_day=2010-01-01"),
    ok("set hivevar:end_day=2050-12-31"),
    ok("set hivevar:timeDimTable=default.timeDim"),
    ok("create table if not exists ${timeDimTable}", "created with 14975 row(s)"),
    ok("set hivevar:start_day=2010-01-01"),
    ok("set hivevar:end_day=2010-01-10"),
    rows('select date_add("${start_day}"', *DAYS),
    rows('select datediff("${end_day}"', ["_c0"], ["9"]),
    rows('select repeat("o", 9)', ["_c0"], ["ooooooooo"]),
    rows(
        'select split("ooooooooo", "o")',
        ["_c0"],
        ['["","","","","","","","","",""]'],
        why="Hive's split keeps trailing empty strings (String.split(regex, -1))",
    ),
    rows('select posexplode(split("ooooooooo", "o"))', ["pos", "val"], *[[str(i), ""] for i in range(10)]),
    rows("with dates as (", *DAYS),
    ok("set hivevar:start_day=2010-01-01"),
    ok("set hivevar:end_day=2010-01-02"),
    ok("set hivevar:timeDimTable=default.timeDim"),
    ok("create table if not exists ${timeDimTable}", "already exists; nothing done"),
    ok("create table if not exists tstloc"),
    ok("insert into tstloc values(1)", "inserted 1 row(s)"),
    rows("select * from tstloc", ["id"], ["1"]),
    # Known divergence, on purpose: SET LOCATION is Hive 4's metadata-only change here too
    # (table.relocate), but only to a directory inside the warehouse, and the seed's
    # hdfs:///tmp/ttslocnew is outside it (no path escapes the warehouse). Hive accepts it, and
    # the next SELECT reads the new, empty directory (the blog's "will return an empty set").
    fails("alter table tstloc set location", "InvalidNameError", "is outside the warehouse"),
    rows("select * from tstloc", ["id"], ["1"], why="Hive: no rows (see above)"),
]  # fmt: skip


def statements() -> list[str]:
    return [c.text for c in split_script(SEED_STATEMENTS.read_text())]


def run_acid_sql(warehouse: Path, script: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"}
    done = subprocess.run(
        [*ACID, "sql", "-w", str(warehouse), "--format", "csv", *args],
        input=script,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout
    return done.stdout.splitlines()


def segments(lines: list[str], count: int) -> list[list[str]]:
    """The output lines of each statement (between its marker and the next)."""
    found: list[list[str]] = []
    for line in lines:
        marker = MARKER.match(line)
        if marker:
            assert int(marker.group(1)) == len(found), line
            found.append([])
        elif found:
            found[-1].append(line)
    assert len(found) == count
    return found


def matches(expected: Sequence[str | re.Pattern[str]], got: list[str]) -> bool:
    return len(expected) == len(got) and all(
        e.fullmatch(g) is not None if isinstance(e, re.Pattern) else e == g
        for e, g in zip(expected, got, strict=True)
    )


@pytest.mark.slow  # one process runs the seeds' 64 statements (~25 s)
def test_every_seed_statement_gives_hives_value(tmp_path: Path) -> None:
    texts = statements()
    assert len(texts) == len(EXPECTED)
    for text, expected in zip(texts, EXPECTED, strict=True):
        assert " ".join(text.split()).startswith(expected.start), (text, expected.start)
    script = CONTEXT + "".join(
        f"set hivevar:seed_statement={i};\n{text};\n" for i, text in enumerate(texts)
    )
    warehouse = tmp_path / "wh"
    subprocess.run([*ACID, "init", str(warehouse)], check=True, capture_output=True)

    lines = run_acid_sql(warehouse, script)

    assert not [
        line for line in lines[: lines.index("OK hivevar:seed_statement=0")] if "error" in line
    ]
    for i, (out, expected) in enumerate(zip(segments(lines, len(texts)), EXPECTED, strict=True)):
        where = f"statement {i} ({expected.start}): {out}"
        errors = [line for line in out if line.startswith("error: ")]
        if expected.error is not None:
            error_type, hive_words = expected.error
            assert len(errors) == 1, where
            assert errors[0].startswith(f"error: {error_type}: "), where
            assert hive_words in errors[0], where
            continue
        assert not errors, where
        status = [line for line in out if line.startswith("OK ")]
        if expected.status is not None:
            assert len(status) == 1 and expected.status in status[0], where
        data = [line for line in out if not line.startswith(("OK ", "note: ", "warning: "))]
        if expected.rows is not None:
            got = list(csv.reader(data))
            assert len(got) == len(expected.rows), where
            for e, g in zip(expected.rows, got, strict=True):
                assert matches(e, g), (where, e, g)
        else:
            assert not data, where

    # the time dimension the seed builds (2010-01-01 to 2050-12-31, one row per day)
    check = (
        "select d, year, month, day, daynumber_of_week, dayname_of_week, daynumber_of_year"
        " from timedim where d in ('2010-01-01', '2050-12-31') order by d;"
    )
    assert run_acid_sql(warehouse, "", "-e", check)[:3] == [
        "d,year,month,day,daynumber_of_week,dayname_of_week,daynumber_of_year",
        "2010-01-01,2010,1,1,5,Friday,1",
        "2050-12-31,2050,12,31,6,Saturday,365",
    ]
