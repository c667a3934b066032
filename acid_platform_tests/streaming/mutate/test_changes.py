"""Preparing a change set on Arrow (``prepare_changes``) and cutting it between coordinators
(``split_changes``): what each change becomes, the key checks, and the MERGE rules."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acid_platform import Warehouse
from acid_platform.errors import CardinalityViolationError, UnknownColumnError
from acid_platform.format import decode_bucket
from acid_platform.streaming.mutate import MUTATION, MutatorClient, apply_changes, prepare_changes
from acid_platform.streaming.mutate.changes import split_changes
from acid_platform.table import Table
from acid_platform_tests.streaming.mutate.conftest import with_row_ids


def _rows(table: Table, ids: list[int]) -> list[dict[str, object]]:
    return [r for r in with_row_ids(table) if r["id"] in ids]


def test_each_change_becomes_what_the_merge_would_make_of_it(wh: Warehouse, acct: Table) -> None:
    (three,) = _rows(acct, [3])
    changes = pa.Table.from_pylist(
        [
            {"mutation": "update", "id": 3, "name": "x", "bal": Decimal("1.00"), "region": "us"},
            {"mutation": "D", "id": 4, "name": None, "bal": None, "region": None},
            {"mutation": "I", "id": 5, "name": "exists", "bal": None, "region": "eu"},  # no-op
            {"mutation": "U", "id": 999, "name": "missing", "bal": None, "region": "eu"},  # no-op
            {"mutation": "d", "id": 998, "name": None, "bal": None, "region": "eu"},  # no-op
            {"mutation": "insert", "id": 77, "name": "new", "bal": None, "region": "us"},
        ]
    )
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    prepared = prepare_changes(txn, "acct", changes, key=["ID"])
    got = {r["id"]: r for r in prepared.to_pylist()}
    assert sorted(got) == [3, 4, 77]
    assert prepared.column_names == [MUTATION, "row__id", "id", "name", "bal", "region"]
    # an update keeps the matched row's ROW__ID and partition (region 'us' of the change is not
    # a move: partition columns cannot be updated)
    assert got[3][MUTATION] == "update" and got[3]["row__id"] == three["row__id"]
    assert got[3]["region"] == three["region"] == "eu"
    assert got[4][MUTATION] == "delete" and got[4]["region"] == "us"
    assert got[77][MUTATION] == "insert" and got[77]["row__id"]["writeid"] == -1
    txn.abort()


def test_a_row_two_changes_match_is_a_cardinality_violation(wh: Warehouse, acct: Table) -> None:
    changes = pa.Table.from_pylist(
        [{"mutation": m, "id": 3, "name": None, "bal": None, "region": None} for m in "UD"]
    )
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    with pytest.raises(CardinalityViolationError, match="matches more than one change"):
        prepare_changes(txn, "acct", changes, key=["id"])
    txn.abort()


def test_the_key_must_be_in_the_table_and_the_changes(wh: Warehouse, acct: Table) -> None:
    changes = pa.table({"mutation": ["U"], "id": [1]})
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    with pytest.raises(UnknownColumnError, match="key column"):
        prepare_changes(txn, "acct", changes, key=["name"])
    with pytest.raises(UnknownColumnError, match="key column"):
        prepare_changes(txn, "acct", changes, key=[])
    txn.abort()


def test_a_key_arrow_cannot_hash_is_joined_by_the_engine(wh: Warehouse) -> None:
    t = wh.create_table("pts", [("k", "struct<x:int,y:int>"), ("v", "string")])
    t.insert([{"k": {"x": i, "y": -i}, "v": f"v{i}"} for i in range(10)])
    changes = pa.Table.from_pylist(
        [
            {"mutation": "U", "k": {"x": 2, "y": -2}, "v": "two"},
            {"mutation": "D", "k": {"x": 5, "y": -5}, "v": None},
            {"mutation": "I", "k": {"x": 50, "y": 0}, "v": "new"},
        ]
    )
    txn = MutatorClient(wh, ["pts"]).new_transaction().begin()
    prepared = prepare_changes(txn, "pts", changes, key=["k"])
    txn.commit([apply_changes(txn.table("pts"), prepared)])
    got = {r["k"]["x"]: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert got[2] == "two" and 5 not in got and got[50] == "new" and len(got) == 10


def test_split_changes_keeps_each_group_whole_and_in_order(wh: Warehouse) -> None:
    t = wh.create_table(
        "t",
        [("id", "int"), ("v", "string")],
        partition_columns=[("p", "string")],
        bucket_columns=["id"],
        num_buckets=3,
    )
    t.insert([{"id": i, "v": "x", "p": [None, "", "a"][i % 3]} for i in range(60)])
    changes = pa.Table.from_pylist(
        [{"mutation": "U", "id": i, "v": "y", "p": None} for i in range(0, 60, 2)]
    )
    txn = MutatorClient(wh, ["t"]).new_transaction().begin()
    handle = txn.table("t")
    prepared = prepare_changes(txn, "t", changes, key=["id"])
    parts = split_changes(prepared, handle, 2)
    assert sum(p.num_rows for p in parts) == prepared.num_rows

    def groups(batch: pa.Table) -> set[tuple[object, int]]:
        ids = batch.column("row__id").combine_chunks()
        buckets = [decode_bucket(b)[0] for b in pc.struct_field(ids, "bucketid").to_pylist()]
        return set(zip(batch.column("p").to_pylist(), buckets, strict=True))

    assert not groups(parts[0]) & groups(parts[1]) and all(p.num_rows for p in parts)
    # each part is still grouped and in order: its coordinator's validators take it
    txn.commit([apply_changes(handle, part) for part in parts])
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist() if r["v"] == "y") == list(
        range(0, 60, 2)
    )
