"""Worker and cleaner: failures, bad input, revoked workers, readers holding snapshots and leases,
aborted directories, executors."""

from __future__ import annotations

import pickle

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import (
    CallableExecutor,
    ExecutorRouter,
    RewritePlan,
    RewriteResult,
    compact_table,
    execute_plan,
    run_cleaner,
    run_worker,
)
from acid_platform.compaction.cleaner import Cleaner
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.errors import CompactionError, SemanticError, UnsupportedOperationError
from acid_platform.format import ValidCompactorWriteIdList
from acid_platform.table.schema import data_schema
from acid_platform_tests.helpers import acid_dirs, warehouse_fixture
from acid_platform_tests.store_path import StorePath

from .conftest import (
    BACKENDS,
    KV,
    snapshot_rows,
    streaming_batch,
    table_rows,
    write_insert_delta,
)

#: Worker and cleaner on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=[*BACKENDS, "s3"])


def _kv(n: int, start: int = 0) -> list[dict[str, object]]:
    return [{"k": i, "v": f"v{i}"} for i in range(start, start + n)]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "bad_stripe"])
def test_corrupt_file_fails_the_compaction_and_deletes_nothing(wh: Warehouse, damage: str) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(3000))
    t.insert(_kv(3000, 3000))
    t.delete("k < 10")
    d = StorePath(t.spec.location)
    victim = d / "delta_0000002_0000002_0000" / "bucket_00000"
    data = victim.read_bytes()
    if damage == "garbage":
        victim.write_bytes(b"this is not an ORC file" * 10)
    elif damage == "truncated":
        victim.write_bytes(data[: len(data) // 2])
    else:  # the tail is fine, the compressed stripe data is not
        lo, hi = len(data) * 3 // 10, len(data) // 2
        victim.write_bytes(data[:lo] + bytes(255 - b for b in data[lo:hi]) + data[hi:])
    before = d.files()
    with pytest.raises(
        CompactionError, match=r"compaction \d+ of default.t failed: .*bucket_00000"
    ):
        compact_table(wh, "t", kind="major")
    (row,) = wh.metastore.show_compactions()
    assert row["State"] == "failed"
    assert "delta_0000002_0000002_0000/bucket_00000" in row["Error message"]
    assert d.files() == before  # inputs untouched, the worker's own output removed
    assert run_cleaner(wh).removed == ()
    assert d.files() == before


def test_a_dead_worker_is_revoked_and_its_output_never_seen(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    for i in range(3):
        t.insert(_kv(2, 10 * i))
    before = table_rows(wh, "t")

    class Died(BaseException):
        """Stands for a worker process that stops dead (not an error it can record)."""

    def die(step: str) -> None:
        if step == "worker.files_written":
            raise Died

    ms = wh.metastore
    ms.enqueue_compaction("default", "t", None, "major")
    with on_checkpoint(die), pytest.raises(Died):
        run_worker(wh)
    (row,) = ms.show_compactions()
    dead_txn = row["TxnId"]
    assert row["State"] == "working"
    d = StorePath(t.spec.location)
    assert f"base_0000003_v{dead_txn:07d}" in acid_dirs(d)
    assert table_rows(wh, "t") == before  # open txn: invisible
    assert ms.revoke_timed_out_workers(timeout_s=0) == [row["CompactionId"]]
    assert ms.get_txn_state(dead_txn) == "aborted"
    assert table_rows(wh, "t") == before  # aborted txn: invisible for ever
    (outcome,) = run_worker(wh)
    assert outcome.state.value == "ready for cleaning" and outcome.compactor_txn_id != dead_txn
    report = run_cleaner(wh)
    assert (d / f"base_0000003_v{dead_txn:07d}").path in report.removed
    assert acid_dirs(d) == [f"base_0000003_v{outcome.compactor_txn_id:07d}"]
    assert table_rows(wh, "t") == before


def test_reader_with_a_lease_keeps_its_files_through_compaction_and_cleaning(
    wh: Warehouse,
) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(5))
    t.insert(_kv(5, 5))
    ms = wh.metastore
    d = StorePath(t.spec.location)
    schema = data_schema(t.spec)
    # the reader's order: lease first, then the snapshot it reads (the lease never sees more)
    lease = ms.open_read_lease(ms.valid_txns(), ttl_s=600)
    txns = ms.valid_txns()
    ids = ms.valid_write_ids(None, "default", "t", valid_txns=txns)
    old = snapshot_rows(d, ids, txns, schema)
    t.update({"v": "'new'"}, where="k < 3")
    t.delete("k > 7")
    compact_table(wh, "t", kind="major")
    report = run_cleaner(wh)
    assert report.entries == () and report.removed == ()
    assert snapshot_rows(d, ids, txns, schema) == old  # no missing file
    ms.close_read_lease(lease)
    assert run_cleaner(wh).cleaned_ids
    assert len(acid_dirs(d)) == 1
    assert sorted(r[3:] for r in table_rows(wh, "t")) == [
        (0, "new"),
        (1, "new"),
        (2, "new"),
        (3, "v3"),
        (4, "v4"),
        (5, "v5"),
        (6, "v6"),
        (7, "v7"),
    ]


def test_open_read_only_txn_holds_the_cleaner(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(4))
    t.insert(_kv(4, 4))
    ms = wh.metastore
    d = StorePath(t.spec.location)
    reader = ms.open_txn(read_only=True)
    txns = ms.valid_txns(reader)
    ids = ms.valid_write_ids(reader, "default", "t", valid_txns=txns)
    old = snapshot_rows(d, ids, txns, data_schema(t.spec))
    t.delete("k = 0")
    compact_table(wh, "t", kind="minor")
    compact_table(wh, "t", kind="major")  # a second compaction waiting for the same reader
    assert run_cleaner(wh).removed == ()
    assert snapshot_rows(d, ids, txns, data_schema(t.spec)) == old
    ms.commit_txn(reader)
    report = run_cleaner(wh)
    assert len(report.cleaned_ids) == 2
    assert len(acid_dirs(d)) == 1 and acid_dirs(d)[0].startswith("base_0000003_v")
    assert [r[3] for r in table_rows(wh, "t")] == list(range(1, 8))


def test_aborted_directories_are_swept_without_a_compaction(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(2))
    wh.transaction()
    t.insert(_kv(2, 100))
    wh.rollback()
    d = StorePath(t.spec.location)
    assert acid_dirs(d) == ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    report = run_cleaner(wh)
    assert report.entries == () and report.aborted_removed == (
        (d / "delta_0000002_0000002_0000").path,
    )
    assert acid_dirs(d) == ["delta_0000001_0000001_0000"]
    assert [r[3] for r in table_rows(wh, "t")] == [0, 1]
    # the metadata stays until a compaction's cleaning forgets it
    assert [a.aborted_txns for a in wh.metastore.write_activity()] == [1]
    assert Cleaner(wh).clean_aborted() == []


def test_large_partitions_go_to_the_large_executor_with_a_picklable_plan(
    wh: Warehouse,
) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(3))
    t.insert(_kv(3, 3))
    seen: list[RewritePlan] = []

    def remote(plan: RewritePlan) -> RewriteResult:
        copy = pickle.loads(pickle.dumps(plan))  # what a Spark driver would ship
        assert isinstance(copy.request.write_ids, ValidCompactorWriteIdList)
        seen.append(copy)
        return execute_plan(copy)

    router = ExecutorRouter(threshold_bytes=0, large=CallableExecutor(remote, "spark"))
    (info,) = compact_table(wh, "t", kind="major", executor=router)
    assert info.state.value == "ready for cleaning" and len(seen) == 1
    assert seen[0].input_bytes > 0 and len(seen[0].tasks) == 1
    small = ExecutorRouter(threshold_bytes=1 << 40, large=CallableExecutor(remote, "spark"))
    t.insert(_kv(1, 9))
    ms = wh.metastore
    ms.enqueue_compaction("default", "t", None, "major")
    (outcome,) = run_worker(wh, executor=small)
    assert outcome.executor == "embedded" and len(seen) == 1


def test_dropped_table_fails_its_queued_compaction(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(1))
    wh.metastore.enqueue_compaction("default", "t", None, "minor")
    (outcome,) = run_worker(wh)
    assert outcome.succeeded  # not enough to compact: cleaning only
    t.insert(_kv(1, 1))
    cq = wh.metastore.enqueue_compaction("default", "t", None, "major")
    assert cq is not None
    wh.drop_table("t")
    assert run_worker(wh) == []  # the queue went with the table


def test_a_non_acid_table_or_an_unknown_type_is_refused_and_nothing_queued(wh: Warehouse) -> None:
    """Hive's AlterTableCompactOperation refuses a non-ACID table before queuing anything;
    HiveQL and the Spark procedure share :func:`compact_table`, so both do."""
    wh.create_table("plain", KV, properties={"transactional": "false"})
    wh.create_table("t", KV).insert(_kv(2))
    with pytest.raises(
        UnsupportedOperationError,
        match=r"^Compaction is not allowed on non-ACID table default\.plain$",
    ):
        wh.sql("ALTER TABLE plain COMPACT 'major' AND WAIT")
    with pytest.raises(SemanticError, match="type 'huge' is not one of major, minor, rebalance"):
        compact_table(wh, "t", kind="huge")
    assert wh.show_compactions() == []


def test_aborted_rows_inside_a_delta_left_in_place_never_come_back(wh: Warehouse) -> None:
    """A streaming delta with an aborted txn in the middle that a compaction does not rewrite
    (not enough to compact): the recorded highest write id stays below it, so cleaning does not
    forget that the write id is aborted."""
    t = wh.create_table("t", KV)
    ms = wh.metastore
    d = StorePath(t.spec.location)
    txns, _ = streaming_batch(ms, "default", "t", 3)
    write_insert_delta(
        d / "delta_0000001_0000003", [(1, [(1, "a")]), (2, [(2, "b")]), (3, [(3, "c")])]
    )
    ms.commit_txn(txns[0])
    ms.abort_txn(txns[1])
    ms.commit_txn(txns[2])
    assert [r[3] for r in table_rows(wh, "t")] == [1, 3]
    (info,) = compact_table(wh, "t", kind="minor")  # one delta: not enough to compact
    assert info.highest_write_id == 0
    assert run_cleaner(wh).cleaned_ids == (info.id,)
    assert [a.aborted_txns for a in ms.write_activity()] == [1]
    assert [r[3] for r in table_rows(wh, "t")] == [1, 3]
    t.insert(_kv(1, 10))
    (major,) = compact_table(wh, "t", kind="major")  # now rewritten without write id 2
    assert major.highest_write_id == 4
    run_cleaner(wh)
    assert acid_dirs(d) == [f"base_0000004_v{major.txn_id:07d}"]
    assert [r[3] for r in table_rows(wh, "t")] == [1, 3, 10]
    assert all(a.aborted_txns == 0 for a in ms.write_activity())


def test_a_streamed_scan_reads_its_snapshot_across_compaction_and_cleaning(wh: Warehouse) -> None:
    """The table API's own reader: a streamed scan over two partitions, one batch taken, then
    both are compacted and cleaned under it; the rest of the stream still reads the snapshot it
    started with, and its lease is all that holds the cleaner back."""
    t = wh.create_table("t", KV, partition_columns=[("p", "string")])
    for i in range(2):
        t.insert([{"k": 10 * i + j, "v": f"v{i}", "p": f"p{j}"} for j in range(2)])
    t.delete("k = 11")
    want = sorted((r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist())
    reader = t.scan(columns=["k", "v"]).to_batches()
    got = [(r["k"], r["v"]) for r in reader.read_next_batch().to_pylist()]
    t.update({"v": "'new'"})
    t.insert([{"k": 99, "v": "late", "p": "p0"}])
    assert len(compact_table(wh, "t", kind="major")) == 2
    assert run_cleaner(wh).removed == ()  # the stream's lease holds every input
    got += [(r["k"], r["v"]) for r in reader.read_all().to_pylist()]
    assert sorted(got) == want
    assert wh.metastore.show_read_leases() == []  # released when exhausted
    assert len(run_cleaner(wh).removed) > 2
    for part in ("p0", "p1"):
        (only,) = acid_dirs(StorePath(t.spec.location) / f"p={part}")
        assert only.startswith("base_")
    assert sorted(r["v"] for r in t.scan().to_arrow().to_pylist()) == ["late"] + ["new"] * 3
