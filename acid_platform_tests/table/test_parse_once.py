"""The table API parses each text it is given once, when the statement starts, and plans and
reads the target with the tree; syntax trees are taken as they are (and left unchanged)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from acid_platform import Warehouse
from acid_platform.table import Table
from acid_platform_tests.helpers import count_parses


def _table(wh: Warehouse) -> Table:
    t = wh.create_table("t", [("id", "int"), ("v", "int")], partition_columns=[("ds", "string")])
    t.insert([{"id": 1, "v": 10, "ds": "a"}, {"id": 2, "v": 20, "ds": "a"}])
    return t


def _rows(t: Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())


def test_update_and_delete_parse_each_text_once(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(wh)
    parses = count_parses(monkeypatch)
    t.update({"v": "v + 1"}, "ds = 'a' AND id = 2")
    assert dict(parses) == {"v + 1": 1, "ds = a AND id = 2": 1}  # token texts
    parses.clear()
    t.delete("id = 1")
    assert dict(parses) == {"id = 1": 1}
    parses.clear()
    assert t.scan(where="v > 0").to_arrow().num_rows == 1
    assert dict(parses) == {"v > 0": 1}
    assert _rows(t) == [(2, 21, "a")]


def test_trees_are_not_parsed_again(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(wh)
    where = sqlglot.parse_one("id = 2", read="hive")
    value = sqlglot.parse_one("v * 2", read="hive")
    parses = count_parses(monkeypatch)
    t.update({"v": value}, where)
    t.delete(exp.EQ(this=exp.column("id"), expression=exp.Literal.number(1)))
    assert not parses
    assert where.sql(dialect="hive") == "id = 2"  # the caller's tree is not changed
    assert _rows(t) == [(2, 40, "a")]


def test_merge_parses_on_conditions_values_and_source_query_once(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(wh)
    src = wh.create_table("src", [("id", "int"), ("v", "int"), ("ds", "string")])
    src.insert([{"id": 2, "v": 200, "ds": "a"}, {"id": 3, "v": 300, "ds": "b"}])
    parses = count_parses(monkeypatch)
    (
        t.merge("SELECT id, v, ds FROM src", "t.id = s.id")
        .when_matched_update({"v": "s.v + 1"}, where="s.v > 100")
        .when_not_matched_insert_all()
        .execute()
    )
    assert dict(parses) == {
        "SELECT id , v , ds FROM src": 1,
        "t . id = s . id": 1,
        "s . v > 100": 1,
        "s . v + 1": 1,
    }
    data = pa.table({"id": [1], "v": [7], "ds": ["a"]})
    on = sqlglot.parse_one("t.id = s.id", read="hive")
    parses.clear()
    t.merge(data, on).when_matched_update_all().execute()
    assert not parses
    assert _rows(t) == [(1, 7, "a"), (2, 201, "a"), (3, 300, "b")]
