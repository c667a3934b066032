"""Every table operation on local disk and on a real S3 server, with the same answers: DML
checked against an oracle, compaction and cleaning, a reader across compaction, the change feed,
and what the store is asked per statement."""

from __future__ import annotations

import random
from typing import Any

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.format import read_acid
from acid_platform.table.schema import data_schema

from .conftest import acid_dirs_of

KV = [("k", "int"), ("v", "string")]


def rows(wh: Warehouse, name: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in wh.table(name).scan().to_arrow().to_pylist())


@pytest.mark.slow
def test_every_dml_matches_an_oracle(wh: Warehouse) -> None:
    t = wh.create_table("t", KV, partition_columns=[("p", "string")])
    oracle: dict[int, tuple[str, str]] = {}
    rng = random.Random(11)
    next_key = 0
    for step in range(14):
        op = rng.choice(["insert", "insert", "update", "delete", "merge"])
        if op == "insert" or not oracle:
            batch: list[dict[str, Any]] = [
                {"k": next_key + i, "v": f"v{step}", "p": rng.choice("ab")} for i in range(20)
            ]
            next_key += 20
            t.insert(batch)
            oracle.update({r["k"]: (r["v"], r["p"]) for r in batch})
        elif op == "update":
            lo = rng.randrange(next_key)
            wh.sql(f"UPDATE t SET v = 'u{step}' WHERE k >= {lo} AND k < {lo + 15}")
            for k in [k for k in oracle if lo <= k < lo + 15]:
                oracle[k] = (f"u{step}", oracle[k][1])
        elif op == "delete":
            lo = rng.randrange(next_key)
            wh.sql(f"DELETE FROM t WHERE k >= {lo} AND k < {lo + 7}")
            for k in [k for k in oracle if lo <= k < lo + 7]:
                del oracle[k]
        else:
            lo = rng.randrange(next_key)
            wh.sql(
                f"MERGE INTO t USING (SELECT k, 'm{step}' AS v FROM t WHERE k >= {lo} AND k < "
                f"{lo + 5} UNION ALL SELECT {next_key} AS k, 'n{step}' AS v) s ON t.k = s.k "
                "WHEN MATCHED THEN UPDATE SET v = s.v "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v, 'a')"
            )
            for k in [k for k in oracle if lo <= k < lo + 5]:
                oracle[k] = (f"m{step}", oracle[k][1])
            oracle[next_key] = (f"n{step}", "a")
            next_key += 1
        assert rows(wh, "t") == sorted((k, v, p) for k, (v, p) in oracle.items()), (step, op)


def test_multi_statement_transaction_commits_whole_or_not_at_all(wh: Warehouse) -> None:
    a = wh.create_table("a", KV)
    b = wh.create_table("b", KV)
    a.insert([{"k": 1, "v": "x"}])
    with wh.transaction():
        a.update({"v": "'y'"}, where="k = 1")
        b.insert([{"k": 1, "v": "moved"}])
    assert rows(wh, "a") == [(1, "y")] and rows(wh, "b") == [(1, "moved")]
    with pytest.raises(RuntimeError, match="boom"), wh.transaction():
        a.delete("k = 1")
        b.insert([{"k": 2, "v": "lost"}])
        raise RuntimeError("boom")
    assert rows(wh, "a") == [(1, "y")] and rows(wh, "b") == [(1, "moved")]


def test_compaction_and_cleaning_keep_a_readers_snapshot(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    for i in range(4):
        t.insert([{"k": k, "v": f"v{k}"} for k in range(i * 10, i * 10 + 10)])
    t.delete("k < 5")
    ms = wh.metastore
    lease = ms.open_read_lease(ms.valid_txns(), ttl_s=600)
    txns = ms.valid_txns()
    ids = ms.valid_write_ids(None, "default", "t", valid_txns=txns)
    schema = data_schema(t.spec)

    def old_snapshot() -> list[tuple[Any, ...]]:
        data = read_acid(t.spec.location, ids, txns, schema=schema)
        return sorted(tuple(r.values()) for r in data.to_pylist())

    before = old_snapshot()
    assert len(before) == 35
    t.update({"v": "'new'"}, where="k >= 30")
    compact_table(wh, "t", kind="minor")
    compact_table(wh, "t", kind="major")
    report = run_cleaner(wh)
    assert report.removed == ()  # the lease holds every directory the reader needs
    assert old_snapshot() == before
    ms.close_read_lease(lease)
    assert run_cleaner(wh).removed
    (base,) = acid_dirs_of(wh, t.spec.location)
    assert base.startswith("base_")
    expected = sorted((k, "new" if k >= 30 else f"v{k}") for k in range(5, 40))
    assert rows(wh, "t") == expected


def test_change_feed_across_minor_compaction(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert([{"k": 1, "v": "a"}, {"k": 2, "v": "b"}])
    t.update({"v": "'c'"}, where="k = 2")
    t.delete("k = 1")
    before = t.changes(0).to_arrow().to_pylist()
    compact_table(wh, "t", kind="minor")
    run_cleaner(wh)
    after = t.changes(0).to_arrow().to_pylist()
    key = lambda r: (r["_write_id"], r["_change_type"], r["k"])  # noqa: E731
    assert sorted(after, key=key) == sorted(before, key=key)
    assert {r["_change_type"] for r in after} >= {"insert", "delete"}


def test_insert_overwrite_and_drop(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert([{"k": 1, "v": "a"}])
    wh.sql("INSERT OVERWRITE TABLE t SELECT 2, 'b'")
    assert rows(wh, "t") == [(2, "b")]
    location = t.spec.location
    wh.drop_table("t")
    assert acid_dirs_of(wh, location) == []
