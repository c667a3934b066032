"""The one DML plan: a single query with labelled rows, Hive's MERGE rules and statement ids."""

from __future__ import annotations

import pyarrow as pa
import pytest
from sqlglot import exp

from acid_platform.engines.embedded import EmbeddedEngine
from acid_platform.errors import UnsupportedOperationError
from acid_platform.metastore import TableSpec
from acid_platform.table.dml import Action, Clause, ClauseKind, plan_delete, plan_merge, plan_update
from acid_platform.table.dml_output import assemble

SPEC = TableSpec(
    "default",
    "emp",
    (("id", "int"), ("name", "string"), ("salary", "int")),
    (("dept", "string"),),
    location="/wh/emp",
    properties={"transactional": "true"},
)
TARGET = pa.table(
    {
        "__acid_writeid": pa.array([1, 1, 1], pa.int64()),
        "__acid_bucketid": pa.array([536870912] * 3, pa.int32()),
        "__acid_rowid": pa.array([0, 1, 2], pa.int64()),
        "id": pa.array([1, 2, 3], pa.int32()),
        "name": ["a", "b", "c"],
        "salary": pa.array([10, 20, None], pa.int32()),
        "dept": ["x", "x", "y"],
    }
)
SOURCE = pa.table(
    {"id": pa.array([2, 3, 4], pa.int32()), "salary": pa.array([200, 300, 400], pa.int32())}
)


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


def _run(engine: EmbeddedEngine, plan, source: pa.Table | None = SOURCE):  # type: ignore[no-untyped-def]
    rel = {"target": TARGET} if source is None else {"target": TARGET, "source": source}
    return assemble(plan, SPEC, engine.execute(plan.query, rel))


def test_update_plan_is_one_select_over_target(engine: EmbeddedEngine) -> None:
    plan = plan_update(SPEC, {"salary": "salary * 2"}, "dept = 'x'")
    assert isinstance(plan.query, exp.Select) and plan.relations == ("target",)
    assert plan.statement_count == 1
    (st,) = _run(engine, plan, None)
    assert st.action is Action.UPDATE and st.statement == 0
    assert st.deletes.to_pylist() == [
        {"writeid": 1, "bucketid": 536870912, "rowid": 0, "dept": "x"},
        {"writeid": 1, "bucketid": 536870912, "rowid": 1, "dept": "x"},
    ]
    assert st.inserts.to_pylist() == [
        {"id": 1, "name": "a", "salary": 20, "dept": "x"},
        {"id": 2, "name": "b", "salary": 40, "dept": "x"},
    ]


def test_delete_without_where_deletes_everything(engine: EmbeddedEngine) -> None:
    (st,) = _run(engine, plan_delete(SPEC), None)
    assert st.action is Action.DELETE and st.deletes.num_rows == 3 and st.inserts.num_rows == 0


def test_merge_statement_ids_put_inserts_first(engine: EmbeddedEngine) -> None:
    clauses = [
        Clause(ClauseKind.MATCHED_UPDATE, "s.salary > 250", (("salary", "s.salary"),)),
        Clause(ClauseKind.MATCHED_DELETE),
        Clause(
            ClauseKind.NOT_MATCHED_INSERT,
            None,
            (("id", "s.id"), ("salary", "s.salary"), ("dept", "'z'")),
        ),
    ]
    plan = plan_merge(SPEC, SOURCE.column_names, "t.id = s.id", clauses)
    assert [b.statement for b in plan.branches] == [1, 2, 0]
    assert "RIGHT JOIN" in plan.sql("duckdb") and plan.relations == ("target", "source")
    out = {st.action: st for st in _run(engine, plan)}
    assert out[Action.UPDATE].inserts.to_pylist() == [
        {"id": 3, "name": "c", "salary": 300, "dept": "y"}
    ]
    # the DELETE gets "AND NOT(s.salary > 250)": only id 2 (200) is deleted
    assert out[Action.DELETE].deletes.column("rowid").to_pylist() == [1]
    assert out[Action.INSERT].inserts.to_pylist() == [
        {"id": 4, "name": None, "salary": 400, "dept": "z"}
    ]


def test_second_clause_gets_not_of_first_even_with_nulls(engine: EmbeddedEngine) -> None:
    # first predicate is NULL for id 3 (salary NULL): Hive's NOT(NULL) keeps the DELETE from firing
    clauses = [
        Clause(ClauseKind.MATCHED_DELETE, "t.salary > 15"),
        Clause(ClauseKind.MATCHED_UPDATE, None, (("name", "'u'"),)),
    ]
    plan = plan_merge(SPEC, SOURCE.column_names, "t.id = s.id", clauses)
    out = {st.action: st for st in _run(engine, plan)}
    assert out[Action.DELETE].deletes.column("rowid").to_pylist() == [1]
    assert out[Action.UPDATE].deletes.num_rows == 0
    assert "INNER JOIN" in plan.sql("duckdb") or " JOIN " in plan.sql("duckdb")


def test_not_matched_by_source_branches(engine: EmbeddedEngine) -> None:
    clauses = [
        Clause(ClauseKind.BY_SOURCE_UPDATE, "t.dept = 'x'", (("salary", 0),)),
        Clause(ClauseKind.BY_SOURCE_DELETE),
        Clause(ClauseKind.NOT_MATCHED_INSERT, None, (("id", "s.id"),)),
    ]
    plan = plan_merge(SPEC, SOURCE.column_names, "t.id = s.id", clauses)
    assert "FULL JOIN" in plan.sql("duckdb")
    out = {st.action: st for st in _run(engine, plan)}
    assert out[Action.UPDATE].inserts.to_pylist() == [
        {"id": 1, "name": "a", "salary": 0, "dept": "x"}
    ]
    assert out[Action.INSERT].inserts.column("id").to_pylist() == [4]


def test_updating_partition_or_bucket_columns_is_refused() -> None:
    bucketed = TableSpec(
        "default",
        "b",
        (("id", "int"), ("v", "int")),
        bucket_columns=("id",),
        num_buckets=2,
        location="/x",
    )
    with pytest.raises(UnsupportedOperationError, match="bucketing column 'id'"):
        plan_update(bucketed, {"id": 1})
    with pytest.raises(UnsupportedOperationError, match="partition column 'dept'"):
        plan_merge(
            SPEC,
            ["id"],
            "t.id = s.id",
            [Clause(ClauseKind.MATCHED_UPDATE, None, (("t.dept", "'q'"),))],
        )


def test_cardinality_flag_only_with_a_matched_clause(engine: EmbeddedEngine) -> None:
    dup = pa.table({"id": pa.array([2, 2], pa.int32()), "salary": pa.array([1, 2], pa.int32())})
    only_insert = plan_merge(
        SPEC,
        dup.column_names,
        "t.id = s.id",
        [Clause(ClauseKind.NOT_MATCHED_INSERT, None, (("id", "s.id"),))],
    )
    assert "__acid_violation" not in only_insert.sql()
    assert sum(st.inserts.num_rows for st in _run(engine, only_insert, dup)) == 0
    unchecked = plan_merge(
        SPEC,
        dup.column_names,
        "t.id = s.id",
        [Clause(ClauseKind.MATCHED_DELETE)],
        check_cardinality=False,
    )
    assert "__acid_violation" not in unchecked.sql()


def test_bare_columns_are_carried_once_and_unused_target_values_left_out(
    engine: EmbeddedEngine,
) -> None:
    # an upsert: both branches take s.id and s.salary as they are; only s.salary + 1 is computed
    clauses = [
        Clause(ClauseKind.MATCHED_UPDATE, None, (("salary", "s.salary + 1"), ("name", "t.name"))),
        Clause(ClauseKind.NOT_MATCHED_INSERT, None, (("id", "s.id"), ("salary", "s.salary"))),
    ]
    plan = plan_merge(SPEC, SOURCE.column_names, "t.id = s.id", clauses)
    update, insert = plan.branches
    assert insert.assigned == {"id": "__s_0", "salary": "__s_1"}
    assert update.assigned["name"] == "__t_1" and update.assigned["salary"].startswith("__v_")
    result = engine.execute(plan.query, {"target": TARGET, "source": SOURCE})
    # the output: label, statement, ROW__ID, the target values some branch uses (all but the
    # assigned salary), the carried source columns once, the one computed value, the flag
    assert result.column_names[5:] == [
        "__t_0",
        "__t_1",
        "__t_3",
        "__s_0",
        "__s_1",
        update.assigned["salary"],
        "__acid_violation",
    ]
    out = {st.action: st for st in assemble(plan, SPEC, result)}
    assert out[Action.UPDATE].inserts.to_pylist() == [
        {"id": 2, "name": "b", "salary": 201, "dept": "x"},
        {"id": 3, "name": "c", "salary": 301, "dept": "y"},
    ]
    assert out[Action.INSERT].inserts.to_pylist() == [
        {"id": 4, "name": None, "salary": 400, "dept": None}
    ]


def test_delete_output_carries_only_the_target_values_it_reads(engine: EmbeddedEngine) -> None:
    plan = plan_delete(SPEC, "salary > 15")
    result = engine.execute(plan.query, {"target": TARGET})
    assert result.column_names == [
        "__acid_action",
        "__acid_stmt",
        "__acid_writeid",
        "__acid_bucketid",
        "__acid_rowid",
        "__t_2",  # salary: the WHERE reads it
        "__t_3",  # dept: the partition
    ]
    (st,) = assemble(plan, SPEC, result)
    assert st.deletes.to_pylist() == [
        {"writeid": 1, "bucketid": 536870912, "rowid": 1, "dept": "x"}
    ]
