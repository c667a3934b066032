"""One name per concept in the table API (issue 30, item 3): ``Table.scan()`` and
``Table.changes()`` are lazy and hold their reader lease only while needed (a forgotten one is
released when collected); ``where`` is the one predicate word; one ``transaction()``, one
``rollback()``; ``Table.replace_partitions``; the user's ``Transaction`` is its user surface
only; and every deprecated name still works, warning with a ``DeprecationWarning``."""

from __future__ import annotations

import gc
from typing import Any

import pyarrow as pa
import pytest

import acid_platform.table
from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.errors import InvalidPartitionError, ScanClosedError
from acid_platform.table import Table, Transaction
from acid_platform.table import scan as scan_module
from acid_platform.table.changes import ChangeScan
from acid_platform.table.dml_terms import Clause, ClauseKind
from acid_platform.table.scan import TableScan
from acid_platform.table.transaction import ledger_of
from acid_platform_tests.helpers import acid_dirs, warehouse_fixture

COLS = [("id", "int"), ("v", "string")]

wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"})


def ids(data: pa.Table | pa.RecordBatchReader | Any) -> list[int]:
    """The ``id`` column, sorted: of an Arrow table, a batch reader or a DataFrame."""
    if isinstance(data, pa.RecordBatchReader):
        data = data.read_all()
    if isinstance(data, pa.Table):
        return sorted(data.column("id").to_pylist())
    return sorted(int(i) for i in data["id"])


def table_of(wh: Warehouse, rows: int = 6, *, partitioned: bool = True) -> Table:
    parts = [("p", "string")] if partitioned else []
    t = wh.create_table("t", COLS, partition_columns=parts)
    part = (lambda i: {"p": f"p{i % 3}"}) if partitioned else (lambda i: {})
    t.insert([{"id": i, "v": f"v{i}", **part(i)} for i in range(rows)])
    return t


def leases(wh: Warehouse) -> int:
    return len(wh.metastore.show_read_leases())


# --------------------------------------------------------------------------- the lazy scan


def test_scan_returns_a_lazy_scan_that_reads_nothing_until_asked(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table_of(wh)
    listed: list[str] = []
    list_dirs = scan_module.list_partition_dirs

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        listed.append(path)
        return list_dirs(path, *args, **kwargs)

    monkeypatch.setattr(scan_module, "list_partition_dirs", counting)
    scan = t.scan(["id"], where="id > 1")
    assert isinstance(scan, TableScan)
    assert listed == []  # nothing listed, nothing read
    assert leases(wh) == 1  # the snapshot is held from scan() on
    assert ids(scan.to_arrow()) == [2, 3, 4, 5]
    assert len(listed) == 1 and leases(wh) == 0  # read: released
    with pytest.raises(ScanClosedError):
        scan.to_arrow()


def test_every_way_to_read_a_scan_gives_the_same_rows(wh: Warehouse) -> None:
    t = table_of(wh)
    want = ids(t.scan(where="p = 'p1'").to_arrow())
    assert want == [1, 4]
    assert ids(t.scan(where="p = 'p1'").to_pandas()) == want
    reader = t.scan(where="p = 'p1'").to_arrow_batch_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert ids(reader) == want
    assert ids(t.scan(where="p = 'p1'").to_batches()) == want
    assert [p.name for p in t.scan(where="p = 'p1'").plan_files()] == ["p=p1"]
    assert ids(t.to_arrow()) == list(range(6))


def test_changes_returns_a_lazy_change_scan(wh: Warehouse) -> None:
    t = table_of(wh)
    t.delete("id = 0")
    feed = t.changes(0, key="id", where="p = 'p0'")
    assert isinstance(feed, ChangeScan)
    assert leases(wh) == 1
    rows = feed.to_arrow()
    assert leases(wh) == 0
    assert sorted(
        zip(rows.column("id").to_pylist(), rows.column("_change_type").to_pylist(), strict=True)
    ) == [
        (0, "delete"),
        (0, "insert"),
        (3, "insert"),
    ]
    assert ids(t.changes(0, where="p = 'p0'").to_pandas()) == ids(rows)
    assert ids(t.changes(0, where="p = 'p0'").to_arrow_batch_reader()) == ids(rows)
    assert ids(t.changes(0, where="p = 'p0'").to_batches()) == ids(rows)


def test_a_scan_in_a_transaction_reads_its_snapshot(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    with wh.transaction() as txn:
        t.insert([{"id": 10, "v": "x"}])
        scan = t.scan(["id"])
        assert leases(wh) == 0  # the transaction's snapshot: no lease
        assert ids(scan.to_arrow()) == [*range(6), 10]
        assert ids(t.scan(["id"], snapshot=txn.snapshot(t.spec)).to_arrow()) == [*range(6), 10]


# --------------------------------------------------------------------------- forgotten scans


def test_a_forgotten_scan_releases_its_lease_when_collected(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    scan = t.scan()
    feed = t.changes(0)
    assert leases(wh) == 2
    del scan, feed
    gc.collect()
    assert leases(wh) == 0


def test_a_forgotten_scan_does_not_hold_the_cleaner_back(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    t.insert([{"id": 6, "v": "v6"}])
    held = t.scan()  # read later: its files stay
    compact_table(wh, "t", kind="major")
    assert run_cleaner(wh).removed == ()
    assert ids(held.to_arrow()) == list(range(7))

    t.insert([{"id": 7, "v": "v7"}])
    t.scan()  # never read, never kept: collected at once
    forgotten = t.scan()
    del forgotten
    gc.collect()
    compact_table(wh, "t", kind="major")
    assert run_cleaner(wh).removed != ()
    assert [d for d in acid_dirs(t.spec.location) if not d.startswith("base_")] == []
    assert ids(t.scan().to_arrow()) == list(range(8))


# --------------------------------------------------------------------------- where


def test_where_is_the_one_predicate_word_and_filter_its_deprecated_alias(wh: Warehouse) -> None:
    t = table_of(wh)
    want = ids(t.scan(where="id >= 3").to_arrow())
    with pytest.warns(DeprecationWarning, match="filter= is deprecated: use where=") as caught:
        old = t.scan(filter="id >= 3").to_arrow()
    assert ids(old) == want == [3, 4, 5]
    assert caught[0].filename == __file__  # the warning names the caller's line
    with pytest.warns(DeprecationWarning, match="filter= is deprecated: use where="):
        old_feed = t.changes(0, filter="id >= 3").to_arrow()
    assert ids(old_feed) == ids(t.changes(0, where="id >= 3").to_arrow()) == want
    with pytest.raises(TypeError, match="give where= only"):
        t.scan(where="id > 1", filter="id > 2")

    t.update({"v": "'u'"}, where="id = 1")
    t.delete(where="id = 2")
    assert sorted(r["v"] for r in t.scan(["v"], where="id < 3").to_arrow().to_pylist()) == [
        "u",
        "v0",
    ]


def test_update_takes_values_and_set_is_a_deprecated_alias(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    t.update(values={"v": "'a'"}, where="id = 1")
    with pytest.warns(DeprecationWarning, match="set= is deprecated: use values="):
        t.update(set={"v": "'b'"}, where="id = 2")
    got = {r["id"]: r["v"] for r in t.scan(where="id IN (1, 2)").to_arrow().to_pylist()}
    assert got == {1: "a", 2: "b"}


def test_merge_clauses_take_where_and_condition_is_a_deprecated_alias(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    source = pa.table({"id": [1, 2, 3], "v": ["x", "y", "z"]})
    (
        t.merge(source, "t.id = s.id")
        .when_matched_update({"v": "s.v"}, where="s.id = 1")
        .when_matched_delete(where="s.id = 2")
        .execute()
    )
    with pytest.warns(DeprecationWarning) as caught:
        merger = t.merge(source, "t.id = s.id").when_matched_update(
            set={"v": "'w'"}, condition="s.id = 3"
        )
    assert {str(w.message).split(" is")[0] for w in caught} == {"set=", "condition="}
    assert all(w.filename == __file__ for w in caught)
    merger.execute()
    got = {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {0: "v0", 1: "x", 3: "w", 4: "v4", 5: "v5"}
    clause = Clause(ClauseKind.MATCHED_DELETE, "s.id = 1")
    with pytest.warns(DeprecationWarning, match="Clause.condition is deprecated"):
        assert clause.condition == clause.where == "s.id = 1"


# --------------------------------------------------------------------------- transactions


def test_one_transaction_and_one_rollback(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    txn = wh.transaction()
    t.insert([{"id": 10, "v": "x"}])
    wh.rollback()  # ROLLBACK: the transaction's rollback(), and the session's ends
    assert not wh.in_transaction and txn.state == "aborted" and not txn.is_open
    with wh.transaction() as txn:
        t.insert([{"id": 11, "v": "y"}])
    assert txn.state == "committed"
    assert ids(t.scan().to_arrow()) == [*range(6), 11]


def test_the_transaction_shows_its_user_surface_only(wh: Warehouse) -> None:
    public = {n for n in dir(Transaction) if not n.startswith("_")}
    deprecated = {"abort", "txn_id"}
    assert public - deprecated == {"commit", "id", "is_open", "rollback", "snapshot", "state"}
    with wh.transaction() as txn:
        ledger = ledger_of(txn)  # the statement lifecycle's: locks, ids, records
        assert ledger.txn_id == txn.id and ledger.explicit


def test_deprecated_transaction_names_warn_and_work(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    with pytest.warns(DeprecationWarning, match=r"TableWarehouse.begin\(\) is deprecated"):
        txn = wh.begin()
    assert wh.current_transaction is txn
    with pytest.warns(DeprecationWarning, match="Transaction.txn_id is deprecated"):
        assert txn.txn_id == txn.id
    t.insert([{"id": 10, "v": "x"}])
    with pytest.warns(DeprecationWarning, match=r"Transaction.abort\(\) is deprecated"):
        txn.abort()
    assert txn.state == "aborted"
    wh.rollback()
    assert ids(t.scan().to_arrow()) == list(range(6))


# --------------------------------------------------------------------------- deprecated reads


def test_deprecated_read_methods_warn_and_return_what_they_did(wh: Warehouse) -> None:
    t = table_of(wh)
    want = ids(t.scan().to_arrow())
    snapshot = transaction_snapshot(wh, t)
    with pytest.warns(DeprecationWarning, match=r"Table.scan_at\(snapshot, …\) is deprecated"):
        assert ids(t.scan_at(snapshot, ["id"], "id >= 0")) == want
    with pytest.warns(DeprecationWarning, match=r"Table.scan_batches\(…\) is deprecated"):
        reader = t.scan_batches(["id"])
    assert isinstance(reader, pa.RecordBatchReader) and ids(reader) == want
    with pytest.warns(DeprecationWarning, match=r"Table.plan_scan\(…\) is deprecated"):
        planned = t.plan_scan(["id"], exact_filter=False)
    assert isinstance(planned, TableScan) and ids(planned.to_arrow()) == want
    with pytest.warns(DeprecationWarning, match=r"Table.changes_batches\(…\) is deprecated"):
        feed = t.changes_batches(0, filter="id > 2")
    assert isinstance(feed, pa.RecordBatchReader) and ids(feed) == [3, 4, 5]
    with pytest.warns(DeprecationWarning, match=r"Table.plan_changes\(…\) is deprecated"):
        planned_feed = t.plan_changes(0)
    assert isinstance(planned_feed, ChangeScan) and ids(planned_feed.to_arrow()) == want
    assert leases(wh) == 0


def transaction_snapshot(wh: Warehouse, t: Table) -> Any:
    """The snapshot of a transaction of its own (a snapshot is values: it stays readable after
    the transaction ends, as long as nothing is cleaned)."""
    with wh.transaction() as txn:
        snapshot = txn.snapshot(t.spec)
    return snapshot


# --------------------------------------------------------------------------- replace_partitions


def test_replace_partitions_is_one_insert_overwrite_of_the_listed_partitions(
    wh: Warehouse,
) -> None:
    t = table_of(wh)  # p0: 0, 3; p1: 1, 4; p2: 2, 5
    metrics = t.replace_partitions([{"id": 100, "v": "new", "p": "p0"}], ["p=p1", "p=p0"])
    assert metrics.rows_inserted == 1 and len(metrics.statement_ids) == 1
    bases = [p.name for p in t.scan().plan_files() if p.state.base is not None]
    assert bases == ["p=p0", "p=p1"]  # a base in each listed partition, p2 untouched
    assert ids(t.scan(where="p = 'p0'").to_arrow()) == [100]
    assert ids(t.scan(where="p = 'p1'").to_arrow()) == []
    assert ids(t.scan(where="p = 'p2'").to_arrow()) == [2, 5]

    with pytest.raises(InvalidPartitionError, match=r"lie outside the partitions replaced"):
        t.replace_partitions([{"id": 7, "v": "x", "p": "p2"}], ["p=p0"])
    assert ids(t.scan().to_arrow()) == [2, 5, 100]  # nothing written
    with pytest.raises(InvalidPartitionError, match="is partitioned"):
        t.replace_partitions([], [None])


def test_replace_partitions_of_an_unpartitioned_table_and_overwrite_empty(wh: Warehouse) -> None:
    t = table_of(wh, partitioned=False)
    t.replace_partitions(pa.table({"id": [9], "v": ["n"]}), [None])
    assert ids(t.scan().to_arrow()) == [9]
    with pytest.warns(
        DeprecationWarning, match=r"Table.overwrite_empty\(partitions\) is deprecated"
    ):
        metrics = t.overwrite_empty([None])
    assert metrics.rows_inserted == 0 and ids(t.scan().to_arrow()) == []
    assert [d for d in acid_dirs(t.spec.location) if d.startswith("base_")]


# --------------------------------------------------------------------------- distinct names


def test_the_table_package_exports_no_second_warehouse() -> None:
    assert "TableWarehouse" not in acid_platform.table.__all__
    with pytest.raises(AttributeError):
        acid_platform.table.TableWarehouse  # noqa: B018 - the lookup is the test
