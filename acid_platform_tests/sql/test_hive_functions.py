"""Hive built-ins through the SQL layer, checked against Hive's documented values: every
``SimpleDateFormat`` letter of ``date_format``, ``unix_timestamp``, ``size``, ``isnull`` and
``map`` with NULL keys."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform.errors import InvalidExpressionError, SemanticError
from acid_platform.sql import SqlSession

#: Sunday 2024-12-29 13:04:05.123 (en_US weeks: that week holds 2025-01-01, so it is week 1
#: of week-year 2025; December 2024 starts on a Sunday).
TS = "TIMESTAMP '2024-12-29 13:04:05.123'"


def one(sql: SqlSession, expression: str) -> object:
    return sql.execute(f"SELECT {expression} AS v").to_pylist()[0]["v"]


def typed_row(sql: SqlSession, query: str, kind: pa.DataType) -> dict[str, object]:
    """The one row of ``query``, every column of which is of type ``kind``."""
    result = sql.execute(query)
    assert all(t == kind for t in result.schema.types), result.schema
    (row,) = result.to_pylist()
    return row


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("G", "AD"),
        ("y", "2024"),
        ("yy", "24"),
        ("yyyy", "2024"),
        ("Y", "2025"),
        ("YY", "25"),
        ("M", "12"),
        ("MM", "12"),
        ("MMM", "Dec"),
        ("MMMM", "December"),
        ("L", "12"),
        ("LLL", "Dec"),
        ("w", "1"),
        ("ww", "01"),
        ("W", "5"),
        ("D", "364"),
        ("DDDD", "0364"),
        ("d", "29"),
        ("F", "5"),
        ("E", "Sun"),
        ("EEEE", "Sunday"),
        ("u", "7"),
        ("a", "PM"),
        ("H", "13"),
        ("k", "13"),
        ("K", "1"),
        ("h", "1"),
        ("hh", "01"),
        ("m", "4"),
        ("mm", "04"),
        ("s", "5"),
        ("ss", "05"),
        ("S", "123"),
        ("SSSSSS", "000123"),  # Java: milliseconds padded, not microseconds
        ("z", "UTC"),
        ("Z", "+0000"),
        ("X", "Z"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-12-29T13:04:05.123"),
        ("'it''s' '' EEE", "it's ' Sun"),
    ],
)
def test_date_format_letters(sql: SqlSession, pattern: str, expected: str) -> None:
    assert one(sql, f"date_format({TS}, '{pattern.replace(chr(39), chr(92) + chr(39))}')") == (
        expected
    )


def test_date_format_day_of_week_and_hours(sql: SqlSession) -> None:
    # Monday is 1 (ISO); midnight is k=24, K=0, h=12.
    assert one(sql, "date_format(DATE '2024-01-01', 'u')") == "1"
    assert one(sql, "date_format(TIMESTAMP '2024-01-01 00:30:00', 'k K h a')") == "24 0 12 AM"
    assert one(sql, "date_format('2021-01-02', 'YYYY-ww')") == "2021-01"
    assert one(sql, "date_format('garbage', 'u')") is None


def test_date_format_refuses_what_java_refuses(sql: SqlSession) -> None:
    with pytest.raises(InvalidExpressionError, match="Illegal pattern character 'q'"):
        sql.execute("SELECT date_format(DATE '2024-01-01', 'q')")
    with pytest.raises(InvalidExpressionError, match="Unterminated quote"):
        sql.execute("SELECT date_format(DATE '2024-01-01', \"yyyy'\")")
    with pytest.raises(InvalidExpressionError, match="constant string"):
        sql.execute("SELECT date_format(d, p) FROM (SELECT DATE '2024-01-01' d, 'u' p) x")


def test_unix_timestamp_is_bigint_seconds(sql: SqlSession) -> None:
    row = typed_row(
        sql,
        "SELECT unix_timestamp(TIMESTAMP '2024-01-01 00:00:00') AS ts,"
        " unix_timestamp(DATE '2024-01-01') AS d,"
        " unix_timestamp('2024-01-01 00:00:00') AS s,"
        " unix_timestamp('2024-01-01') AS bad,"
        " unix_timestamp('07/01/2024 1:02:03 PM', 'dd/MM/yyyy h:mm:ss a') AS p,"
        " unix_timestamp(TIMESTAMP '1969-12-31 23:59:59.5') AS pre,"
        " to_unix_timestamp('1970-01-01 00:00:01') AS t,"
        " unix_timestamp('2024-01-01 00:00:00.123') AS frac,"  # Java parses a prefix
        " unix_timestamp('20240107', 'yyyyMMdd') AS compact,"
        " unix_timestamp('x2024-01-01 00:00:00') AS junk",
        pa.int64(),
    )
    assert row == {
        "ts": 1704067200,
        "d": 1704067200,
        "s": 1704067200,
        "bad": None,
        "p": 1704632523,
        "pre": -1,
        "t": 1,
        "frac": 1704067200,
        "compact": 1704585600,
        "junk": None,
    }
    assert isinstance(one(sql, "unix_timestamp()"), int)


def test_size_isnull_and_null_map_keys(sql: SqlSession) -> None:
    result = sql.execute(
        "SELECT size(map(1, 2, 3, 4)) AS m, size(array(1, 2, 3)) AS a,"
        " size(CAST(NULL AS array<int>)) AS n, isnull(NULL) AS i, isnull(1) AS j,"
        " isnotnull(1) AS k, map(CAST(NULL AS bigint), CAST(NULL AS bigint)) AS e"
    )
    assert result.to_pylist() == [
        {"m": 2, "a": 3, "n": -1, "i": True, "j": False, "k": True, "e": []}
    ]
    assert result.schema.field("e").type == pa.map_(pa.int64(), pa.int64())
    assert one(sql, "map(1, 2, 3, 4, 1, 5)") == [(1, 5), (3, 4)]  # the last value of a key


#: The seeds' statements, extracted verbatim (see its header).
SEED_STATEMENTS = Path(__file__).with_name("seed_statements.sql")


def seed_block(first: str, last: str) -> str:
    """The seeds' script from the line starting with ``first`` to the next line starting with
    ``last``, both included."""
    lines = SEED_STATEMENTS.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return "\n".join(lines[start : end + 1])


def test_seed_003_map_null_and_npe(sql: SqlSession) -> None:
    """Seed 003 ("Hive, map, NULL and NPE") as written, with Hive's answers: the counts on the
    empty table are 0 (Hive 1.2.1's NullPointerException was a bug of its size estimate); an
    untyped NULL is refused for a map column with Hive's error 10044, as the seed shows (Hive's
    ``genConversionSelectOperator`` converts only into primitive columns); ``map(NULL, NULL)``
    is Hive's ``{}``: size 0, not null, the one row the seed shows."""
    script = seed_block("create table npe", "select m, size(m), isnull(m) from npe;")
    void = "with a as (select null) insert into npe select * from a;"
    head, _, tail = script.partition(void)
    results = sql.execute_script(head)
    counts = [r.table.to_pylist() for r in results if r.table.column_names == ["_c0"]]
    assert counts == [[{"_c0": 0}]] * 4  # the counts run on the empty table
    with pytest.raises(
        SemanticError,
        match=r"Cannot insert into target table because column number/types are different "
        r"'default\.npe': Cannot convert column 0 from void to map<bigint,bigint>\.",
    ):
        sql.execute(void)
    for query in (
        "insert into npe select null",
        "with b as (select null x) insert into npe select x from b",
    ):
        with pytest.raises(SemanticError, match="from void to map<bigint,bigint>"):
            sql.execute(query)
    rows = sql.execute_script(tail)[-1].table.to_pylist()
    assert rows == [{"m": [], "_c1": 0, "_c2": False}]


def test_seed_003_hourly_time_dimension(sql: SqlSession) -> None:
    """Seed 003's hourly time dimension: ``from_unixtime(unix_timestamp(cast(d as timestamp))
    + h * 3600)`` is BIGINT arithmetic; ``date_format(d, 'u')`` is the ISO day number."""
    script = seed_block("set hivevar:end_day=2010-01-02;", "sort by dt")
    sql.execute_script(f"set hivevar:start_day=2010-01-01;\n{script}\n;")
    rows = sql.execute(
        "select dt, hour, daynumber_of_week, dayname_of_week, daynumber_of_year"
        " from timedim order by dt"
    ).to_pylist()
    assert len(rows) == 48
    assert rows[0] == {
        "dt": "2010-01-01 00:00:00",
        "hour": 0,
        "daynumber_of_week": "5",
        "dayname_of_week": "Friday",
        "daynumber_of_year": "1",
    }
    assert rows[-1] == {
        "dt": "2010-01-02 23:00:00",
        "hour": 23,
        "daynumber_of_week": "6",
        "dayname_of_week": "Saturday",
        "daynumber_of_year": "2",
    }


def test_builtins_in_update_delete_and_merge(sql: SqlSession) -> None:
    """SET values and WHERE / ON / WHEN conditions compute the built-ins as a query does."""
    sql.execute_script(
        """
        create table t (d date, s string, n bigint, m map<int,int>)
        stored as orc tblproperties ('transactional'='true');
        insert into t select date '2024-01-07', 'x', 0, map(1, 2);
        update t set s = date_format(d, 'u'), n = unix_timestamp(d)
        where isnotnull(d) and size(m) = 1;
        """
    )
    assert sql.execute("select s, n from t").to_pylist() == [{"s": "7", "n": 1704585600}]
    sql.execute(
        "merge into t using (select date '2024-01-07' d) u on t.d = u.d"
        " when matched and not isnull(t.s) then update set s = date_format(u.d, 'EEEE')"
    )
    assert sql.execute("select s from t").to_pylist() == [{"s": "Sunday"}]
    sql.execute("delete from t where date_format(d, 'u') = '7'")
    assert sql.execute("select count(*) from t").to_pylist() == [{"_c0": 0}]


def test_from_unixtime_formats_with_java_letters(sql: SqlSession) -> None:
    row = typed_row(
        sql,
        "SELECT from_unixtime(0) AS a, from_unixtime(1704585600, 'u EEEE') AS b,"
        " from_unixtime(-1) AS c, from_unixtime(CAST(NULL AS bigint)) AS d",
        pa.string(),
    )
    assert row == {
        "a": "1970-01-01 00:00:00",
        "b": "7 Sunday",
        "c": "1969-12-31 23:59:59",
        "d": None,
    }
    nested = "size(map(isnull(from_unixtime(unix_timestamp('2024-01-07 00:00:00'))), 1))"
    assert one(sql, nested) == 1


def test_date_parts_are_int_and_dayofweek_counts_from_sunday(sql: SqlSession) -> None:
    row = typed_row(
        sql,
        "SELECT year(d) AS y, month(d) AS m, day(d) AS dd, dayofweek(d) AS dw,"
        " weekofyear(d) AS w, quarter(d) AS q, hour(t) AS h, minute(t) AS mi, second(t) AS s,"
        " datediff('2024-01-10', d) AS df"
        " FROM (SELECT DATE '2024-01-07' d, TIMESTAMP '2024-01-07 13:04:05' t) x",
        pa.int32(),
    )
    assert row == {
        "y": 2024,
        "m": 1,
        "dd": 7,
        "dw": 1,
        "w": 1,
        "q": 1,
        "h": 13,
        "mi": 4,
        "s": 5,
        "df": 3,
    }
