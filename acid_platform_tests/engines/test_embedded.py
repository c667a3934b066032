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
from acid_platform.errors import AcidError, EngineError, InvalidExpressionError, SandboxError
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
        assert table.scan().to_arrow().num_rows == 1
        assert not engine.connected
        assert table.scan(where="id + 1 = 2").to_arrow().num_rows == 1
        assert engine.connected


def test_engines_share_a_database_but_never_relations() -> None:
    # Every engine of the process runs on cursors of one DuckDB database (a new one costs
    # ~12 ms per warehouse): one engine's relations, temporary tables and closing never reach
    # another.
    first, second = EmbeddedEngine(), EmbeddedEngine()
    assert first.execute(
        "SELECT sum(x) AS s FROM r", {"r": pa.table({"x": [1, 2]})}
    ).to_pylist() == [{"s": 3}]
    with pytest.raises(InvalidExpressionError):
        second.execute("SELECT * FROM r", {})
    first.execute("CREATE TEMP TABLE kept AS SELECT 1 AS x", {})
    with pytest.raises(InvalidExpressionError):
        second.execute("SELECT * FROM kept", {})
    first.close()
    assert second.execute("SELECT x FROM r", {"r": pa.table({"x": [7]})}).to_pylist() == [{"x": 7}]
    assert first.execute("SELECT 1 AS one", {}).to_pylist() == [{"one": 1}]


# --------------------------------------------------------------------------- sandbox
def _settings(engine: EmbeddedEngine) -> dict[str, object]:
    rows = engine.execute("SELECT name, value FROM duckdb_settings()", {}).to_pylist()
    return {r["name"]: r["value"] for r in rows}


def test_the_engine_is_sandboxed(tmp_path: Path) -> None:
    """Even a plan that reaches DuckDB unchecked reads no file, fetches nothing from the
    network, loads no extension and changes no setting; Arrow relations still work."""
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    engine = EmbeddedEngine()
    try:
        before = _settings(engine)
        assert before["enable_external_access"] == "false"
        assert before["lock_configuration"] == "true"
        for setting in ("autoinstall_known_extensions", "autoload_known_extensions"):
            assert before[setting] == "false", setting  # an http:// path downloads nothing
        refused = [
            f"SELECT * FROM read_text('{secret}')",
            f"SELECT * FROM read_blob('{secret}')",
            f"SELECT * FROM read_csv('{secret}')",
            f"SELECT * FROM glob('{tmp_path}/*')",
            "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
            "SELECT * FROM sqlite_scan('/tmp/x.db', 't')",
            "INSTALL httpfs",
            "LOAD httpfs",
            f"ATTACH '{tmp_path}/x.db' AS x",
            f"COPY (SELECT 1) TO '{tmp_path}/out.csv'",
            f"EXPORT DATABASE '{tmp_path}/exp'",
            f"IMPORT DATABASE '{tmp_path}'",
            "SET enable_external_access = true",
            "SET autoinstall_known_extensions = true",
            "RESET enable_external_access",
            "SET threads = 1",
        ]
        for plan in refused:
            with pytest.raises(AcidError) as caught:
                engine.execute(plan, {})
            assert "top secret" not in str(caught.value), plan
        with pytest.raises(SandboxError, match="sandbox refused"):
            engine.execute(f"SELECT content FROM read_text('{secret}')", {})
        assert _settings(engine) == before
        assert list(tmp_path.iterdir()) == [secret]
        local = pa.table({"a": [1]})  # noqa: F841 - a Python variable DuckDB must not scan
        with pytest.raises(InvalidExpressionError):
            engine.execute("SELECT * FROM local", {})
        r = pa.table({"a": [1, 2]})
        assert engine.execute("SELECT sum(a) AS s FROM r", {"r": r}).to_pylist() == [{"s": 3}]
        stream = engine.execute_batches("SELECT a FROM r", {"r": r.to_reader()})
        assert stream.read_all().num_rows == 2
    finally:
        engine.close()
