"""SELECT planning: which columns are scanned, ROW__ID handling, pushdown, Hive output names."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from acid_platform.engines.embedded import EmbeddedEngine
from acid_platform.format.types import ROW_ID_TYPE
from acid_platform.sql.select import ArrowRows, Relation, Rows, run_query, stream_query
from acid_platform.sql.statements import TableName

EMPLOYEE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int32()),
        "name": ["Jerry", "Tom", "Kate"],
        "salary": pa.array([5000, 8000, 6000], pa.int32()),
    }
)
ROW_IDS = pa.array(
    [{"writeid": 1, "bucketid": 536870912, "rowid": i} for i in range(3)], ROW_ID_TYPE
)


class FakeCatalog:
    """Relations over in-memory tables that record every scan request."""

    def __init__(self) -> None:
        self.scans: list[tuple[str, list[str] | None, str | None, bool]] = []

    def resolve(self, name: TableName) -> Relation:
        qualified = name.qualified("default")
        if name.name != "employee":
            raise KeyError(qualified)

        def scan(
            columns: Sequence[str] | None, predicate: exp.Expr | None, row_id: bool, _wide: bool
        ) -> Rows:
            text = None if predicate is None else predicate.sql(dialect="hive")
            self.scans.append((qualified, None if columns is None else list(columns), text, row_id))
            data = EMPLOYEE if columns is None else EMPLOYEE.select(list(columns))
            return ArrowRows(data.add_column(0, "row__id", ROW_IDS) if row_id else data)

        return Relation(qualified, tuple(EMPLOYEE.column_names), scan)


@pytest.fixture(scope="module")
def engine() -> Iterator[EmbeddedEngine]:
    e = EmbeddedEngine()
    yield e
    e.close()


def run(engine: EmbeddedEngine, text: str) -> tuple[pa.Table, FakeCatalog]:
    """The query's result and scans; streamed (each scan a one-shot reader), it is the same."""
    catalog = FakeCatalog()
    query = sqlglot.parse_one(text, read="hive")
    assert isinstance(query, sqlglot.exp.Query)
    result = run_query(engine, query, catalog.resolve)
    streamed = stream_query(engine, query, FakeCatalog().resolve).read_all()
    assert streamed.equals(result)
    return result, catalog


def test_seed_000_select_row_id(engine: EmbeddedEngine) -> None:
    result, catalog = run(engine, "SELECT row__id, id, name, salary FROM employee")
    assert result.column_names == ["row__id", "id", "name", "salary"]
    assert result.column("row__id").to_pylist()[0] == {
        "writeid": 1,
        "bucketid": 536870912,
        "rowid": 0,
    }
    assert catalog.scans == [("default.employee", ["id", "name", "salary"], None, True)]


def test_only_mentioned_columns_are_scanned(engine: EmbeddedEngine) -> None:
    result, catalog = run(engine, "SELECT count(*) AS n, max(salary) FROM default.employee")
    assert result.to_pylist() == [{"n": 3, "_c1": 8000}]
    assert catalog.scans == [("default.employee", ["salary"], None, False)]


def test_star_hides_row_id_unless_asked(engine: EmbeddedEngine) -> None:
    plain, _ = run(engine, "SELECT * FROM employee")
    assert plain.column_names == ["id", "name", "salary"]
    both, _ = run(engine, "SELECT e.*, row__id.writeid, e.row__id.rowid FROM employee e")
    assert both.column_names == ["id", "name", "salary", "writeid", "rowid"]
    assert both.column("rowid").to_pylist() == [0, 1, 2]


def test_simple_where_conjuncts_are_pushed_into_the_scan(engine: EmbeddedEngine) -> None:
    result, catalog = run(
        engine, "SELECT name FROM employee e WHERE e.id > 1 AND upper(name) LIKE 'T%'"
    )
    assert result.to_pylist() == [{"name": "Tom"}]
    assert catalog.scans[0][2] == "(id > 1)"


def test_join_aggregate_and_row_id_one_scan_per_table(engine: EmbeddedEngine) -> None:
    result, catalog = run(
        engine,
        """SELECT a.name, count(*) AS n, max(b.row__id.rowid) AS last_row
           FROM employee a JOIN employee b ON a.salary <= b.salary
           GROUP BY a.name ORDER BY n, a.name""",
    )
    assert result.to_pylist() == [
        {"name": "Tom", "n": 1, "last_row": 1},
        {"name": "Kate", "n": 2, "last_row": 2},
        {"name": "Jerry", "n": 3, "last_row": 2},
    ]
    assert len(catalog.scans) == 1 and catalog.scans[0][3] is True


def test_cte_names_are_not_tables(engine: EmbeddedEngine) -> None:
    result, catalog = run(
        engine,
        "WITH rich AS (SELECT * FROM employee WHERE salary > 5500) SELECT name FROM rich ORDER BY name",
    )
    assert result.column("name").to_pylist() == ["Kate", "Tom"]
    assert [s[0] for s in catalog.scans] == ["default.employee"]


def test_hive_output_names(engine: EmbeddedEngine) -> None:
    result, _ = run(
        engine,
        "SELECT upper(name), salary * 2, id AS ident FROM employee UNION ALL SELECT 'x', 1, 2",
    )
    assert result.column_names == ["_c0", "_c1", "ident"]
    exploded, _ = run(engine, "select posexplode(split('a,b', ','))")
    assert exploded.column_names == ["pos", "val"]
    assert exploded.to_pylist() == [{"pos": 0, "val": "a"}, {"pos": 1, "val": "b"}]


def test_hive_builtins_keep_their_meaning(engine: EmbeddedEngine) -> None:
    result, _ = run(
        engine,
        "SELECT date_add('2010-01-01', 1) AS d, int('7') AS i, int('x') AS bad, lpad(7, 3, 0) AS p",
    )
    assert result.to_pylist()[0] == {
        "d": dt.date(2010, 1, 2),
        "i": 7,
        "bad": None,
        "p": "007",
    }


@pytest.mark.parametrize(
    "text",
    [
        "SELECT a.id, b.id AS other FROM employee a JOIN employee b ON a.id < b.id ORDER BY 1, 2",
        "WITH e AS (SELECT * FROM employee) SELECT x.name FROM e x JOIN e y ON x.id = y.id "
        "ORDER BY 1",
        "SELECT name FROM employee WHERE id IN (SELECT id FROM employee WHERE salary > 5500) "
        "ORDER BY 1",
    ],
)
def test_a_table_the_query_reads_twice_is_not_streamed(engine: EmbeddedEngine, text: str) -> None:
    """A stream can be read once: a relation an engine may scan twice is read whole first."""
    result, _ = run(engine, text)
    assert result.num_rows > 0


def test_streamed_output_keeps_hive_names_and_comes_in_batches(engine: EmbeddedEngine) -> None:
    query = sqlglot.parse_one("SELECT upper(name), id AS ident FROM employee", read="hive")
    assert isinstance(query, exp.Query)
    with stream_query(engine, query, FakeCatalog().resolve) as rows:
        assert rows.schema.names == ["_c0", "ident"]
        batches = list(rows)
    assert sum(b.num_rows for b in batches) == 3
    assert all(b.schema.names == ["_c0", "ident"] for b in batches)
