"""Differential: a change set applied through the Mutation API leaves the table exactly as the
same change written as SQL MERGE — the same rows with the same ROW__IDs — on random tables and
change sets (hypothesis), whether the coordinator takes records one by one, one batch, or the
batch split between two coordinators."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_platform import Warehouse
from acid_platform.streaming.mutate import (
    MUTATION,
    MutatorClient,
    MutatorCoordinator,
    apply_changes,
    prepare_changes,
)
from acid_platform.streaming.mutate.changes import split_changes
from acid_platform_tests.streaming.mutate.conftest import ACCT, with_row_ids

MERGE = (
    "MERGE INTO t USING changes c ON t.id = c.id "
    "WHEN MATCHED AND c.mutation = 'U' THEN UPDATE SET name = c.name, bal = c.bal "
    "WHEN MATCHED AND c.mutation = 'D' THEN DELETE "
    "WHEN NOT MATCHED AND c.mutation = 'I' THEN INSERT VALUES ({values})"
)


def _setup(
    root: Path, partitioned: bool, buckets: int, batches: list[list[dict[str, Any]]]
) -> None:
    with Warehouse.open(root) as wh:
        t = wh.create_table(
            "t",
            ACCT,
            partition_columns=[("region", "string")] if partitioned else (),
            bucket_columns=["id"] if buckets else (),
            num_buckets=buckets,
        )
        for rows in batches:
            t.insert(rows if partitioned else [_drop_region(r) for r in rows])
        t.update({"bal": "bal + 1"}, "id % 4 = 0")  # statement rows and delete deltas too


def _drop_region(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "region"}


def _by_merge(root: Path, changes: pa.Table, partitioned: bool) -> list[dict[str, Any]]:
    with Warehouse.open(root) as wh:
        cols = [("mutation", "string"), *ACCT] + ([("region", "string")] if partitioned else [])
        wh.create_table("changes", cols).insert(changes)
        values = "c.id, c.name, c.bal" + (", c.region" if partitioned else "")
        wh.sql(MERGE.format(values=values))
        return with_row_ids(wh.table("t"))


def _by_mutation(root: Path, changes: pa.Table, how: str) -> list[dict[str, Any]]:
    with Warehouse.open(root) as wh:
        client = MutatorClient(wh, ["t"])
        txn = client.new_transaction().begin()
        handle = txn.table("t")
        prepared = prepare_changes(txn, "t", changes, key=["id"])
        if how == "batch":
            reports = [apply_changes(handle, prepared)]
        elif how == "two coordinators":
            reports = [apply_changes(handle, part) for part in split_changes(prepared, handle, 2)]
        else:
            parts = list(handle.spec.partition_column_names)
            with MutatorCoordinator(handle) as coordinator:
                for record in prepared.to_pylist():
                    mutation = record.pop(MUTATION)
                    getattr(coordinator, mutation)([record[p] for p in parts], record)
            assert coordinator.report is not None
            reports = [coordinator.report]
        txn.commit(reports)
        client.close()
        return with_row_ids(wh.table("t"))


def _check(
    tmp: Path,
    partitioned: bool,
    buckets: int,
    batches: list[list[dict[str, Any]]],
    changes: list[dict[str, Any]],
    how: str,
) -> None:
    # A table's location is in the catalog: both runs use the same path, one after the other.
    root, stash = tmp / "wh", tmp / "stash"
    _setup(root, partitioned, buckets, batches)
    shutil.copytree(root, stash)
    fields = [
        ("mutation", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
        ("bal", pa.decimal128(10, 2)),
    ] + ([("region", pa.string())] if partitioned else [])
    rows = changes if partitioned else [_drop_region(c) for c in changes]
    table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
    mutated = _by_mutation(root, table, how)
    shutil.rmtree(root)
    shutil.copytree(stash, root)
    merged = _by_merge(root, table, partitioned)
    assert mutated == merged


def _account(i: int, name: str | None, cents: int | None, region: str | None) -> dict[str, Any]:
    bal = None if cents is None else Decimal(cents) / 100
    return {"id": i, "name": name, "bal": bal, "region": region}


def test_a_change_set_and_its_merge_leave_the_same_rows_and_row_ids(tmp_path: Path) -> None:
    base = [_account(i, f"n{i % 3}", i * 7, ["eu", "us", None][i % 3]) for i in range(30)]
    changes = (
        [{"mutation": "U", **_account(i, "u", 1, "eu")} for i in range(0, 30, 4)]
        + [{"mutation": "D", **_account(i, None, None, None)} for i in range(1, 30, 4)]
        + [
            {"mutation": "I", **_account(i, f"new{i % 2}", i, ["eu", "us", None][i % 3])}
            for i in (2, *range(30, 45))  # 2 exists: its insert changes nothing
        ]
    )
    for how in ("records", "batch", "two coordinators"):
        _check(tmp_path / how, True, 3, [base[:18], base[18:]], changes, how)


names = st.one_of(st.none(), st.sampled_from(["a", "b", "ü", ""]))
cents = st.one_of(st.none(), st.integers(-500, 500))
regions = st.one_of(st.none(), st.sampled_from(["eu", "us"]))


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[bool, int, list[list[dict[str, Any]]], list[dict[str, Any]], str]:
    partitioned = draw(st.booleans())
    buckets = draw(st.sampled_from([0, 2, 3]))
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=30, unique=True))
    rows = [_account(i, draw(names), draw(cents), draw(regions)) for i in ids]
    cut = draw(st.integers(0, len(rows)))
    batches = [b for b in (rows[:cut], rows[cut:]) if b]
    keys = draw(st.lists(st.integers(0, 50), max_size=25, unique=True))
    changes = [
        {
            "mutation": draw(st.sampled_from("IUD")),
            **_account(k, draw(names), draw(cents), draw(regions)),
        }
        for k in keys
    ]
    how = draw(st.sampled_from(["records", "batch", "two coordinators"]))
    return partitioned, buckets, batches, changes, how


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenarios())
def test_random_change_sets_equal_their_merge(
    tmp_path_factory: pytest.TempPathFactory,
    scenario: tuple[bool, int, list[list[dict[str, Any]]], list[dict[str, Any]], str],
) -> None:
    partitioned, buckets, batches, changes, how = scenario
    _check(tmp_path_factory.mktemp("diff"), partitioned, buckets, batches, changes, how)
