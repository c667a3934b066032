"""The embedded engine: Hive-dialect plans on DuckDB over Arrow."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from sqlglot import exp

from acid_platform import Warehouse
from acid_platform.engines import default_engine
from acid_platform.engines.embedded import EmbeddedEngine
from acid_platform.errors import EngineError, InvalidExpressionError
from acid_platform.table.engine import Engine


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


def test_is_an_engine() -> None:
    e = default_engine()
    assert isinstance(e, Engine) and e.name == "embedded"
    e.close()


def test_runs_hive_sql_over_arrow_relations(engine: EmbeddedEngine) -> None:
    r = pa.table({"a": pa.array([1, 2, None], pa.int32()), "s": ["x", "y", None]})
    out = engine.execute(
        "SELECT a DIV 2 AS d, a / 2 AS q, nvl(s, 'z') AS s2, if(a > 1, 'big', 'small') AS size, "
        "concat(s, '!') AS c FROM r WHERE a IS NOT NULL OR s IS NULL ORDER BY a",
        {"r": r},
    )
    assert out.to_pylist() == [  # Hive sorts NULLs first
        {"d": None, "q": None, "s2": "z", "size": "small", "c": None},
        {"d": 0, "q": 0.5, "s2": "x", "size": "small", "c": "x!"},
        {"d": 1, "q": 1.0, "s2": "y", "size": "big", "c": "y!"},
    ]


def test_takes_sqlglot_trees_and_keeps_arrow_types(engine: EmbeddedEngine) -> None:
    r = pa.table(
        {
            "ts": pa.array([1_000_000_001], pa.timestamp("ns")),
            "n": pa.array([1], pa.decimal128(5, 2)),
        }
    )
    plan = exp.select("ts", "n").from_("r")
    out = engine.execute(plan, {"r": r})
    assert out.schema.field("ts").type == pa.timestamp("ns")
    assert out.schema.field("n").type == pa.decimal128(5, 2)
    assert "FROM r" in engine.transpile(plan)


def test_relations_do_not_leak_between_calls(engine: EmbeddedEngine) -> None:
    engine.execute("SELECT * FROM only_here", {"only_here": pa.table({"a": [1]})})
    with pytest.raises(InvalidExpressionError):
        engine.execute("SELECT * FROM only_here", {})


def test_errors_are_typed(engine: EmbeddedEngine) -> None:
    with pytest.raises(InvalidExpressionError):
        engine.execute("SELECT FROM WHERE", {})
    with pytest.raises(InvalidExpressionError):
        engine.execute("SELECT nope FROM r", {"r": pa.table({"a": [1]})})
    # Hive's CAST yields NULL on bad input (DuckDB TRY_CAST); overflow still fails at run time
    out = engine.execute("SELECT CAST(s AS INT) AS i FROM r", {"r": pa.table({"s": ["abc"]})})
    assert out.to_pylist() == [{"i": None}]
    with pytest.raises(EngineError):
        engine.execute("SELECT a * a AS x FROM r", {"r": pa.table({"a": [2**62]})})
    with pytest.raises(TypeError):
        engine.execute("SELECT * FROM r", {"r": [1, 2]})


def test_concurrent_calls(engine: EmbeddedEngine) -> None:
    results: list[int] = []

    def work(i: int) -> None:
        out = engine.execute("SELECT sum(a) AS s FROM r", {"r": pa.table({"a": list(range(i))})})
        results.append(out.column("s")[0].as_py() or 0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(sum(range(i)) for i in range(8))


def test_connects_duckdb_on_the_first_statement(tmp_path: Path) -> None:
    # A warehouse that only writes and reads whole tables (a Dagster step, a sensor tick) never
    # pays for a DuckDB connection.
    with Warehouse.open(tmp_path / "wh") as wh:
        engine = wh.engine
        assert isinstance(engine, EmbeddedEngine) and not engine.connected
        table = wh.create_table("t", [("id", "int")])
        table.insert([{"id": 1}])
        assert table.scan().num_rows == 1
        assert not engine.connected
        assert table.scan(filter="id + 1 = 2").num_rows == 1
        assert engine.connected
