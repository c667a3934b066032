"""Coordinators in other OS processes: one transaction over two tables commits atomically or
aborts leaving nothing; a coordinator process killed mid-write leaves nothing visible, and its
transaction is aborted by the time-out reaper."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.streaming.mutate import MutationReport, MutatorClient, prepare_changes
from acid_platform.streaming.mutate.changes import split_changes
from acid_platform_tests.helpers import open_warehouse, poll
from acid_platform_tests.streaming.mutate import workers
from acid_platform_tests.streaming.mutate.conftest import acct_rows, make_acct, with_row_ids


def _change_set(wh: Warehouse, name: str) -> pa.Table:
    """Update every 5th account, delete every 7th of the others, insert 12 new ones."""
    rows = wh.table(name).scan().to_arrow().to_pylist()
    changes = [
        {"mutation": "U", **{**r, "name": r["name"] + "!"}} for r in rows if r["id"] % 5 == 0
    ]
    changes += [{"mutation": "D", **r} for r in rows if r["id"] % 7 == 1 and r["id"] % 5]
    changes += [{"mutation": "I", **r} for r in acct_rows(12, first=500)]
    return pa.Table.from_pylist(changes)


@pytest.mark.slow
@pytest.mark.parametrize("end", ["commit", "abort"])
def test_coordinators_in_other_processes_write_one_transaction_over_two_tables(
    wh: Warehouse, end: str
) -> None:
    a, b = make_acct(wh, "a"), make_acct(wh, "b", buckets=2)
    before = (with_row_ids(a), with_row_ids(b))
    txn = MutatorClient(wh, ["a", "b"]).new_transaction().begin()
    jobs = []
    for name, workers_n in (("a", 2), ("b", 1)):
        handle = txn.table(name)
        prepared = prepare_changes(txn, name, _change_set(wh, name), ["id"])
        for part in split_changes(prepared, handle, workers_n):
            jobs.append((handle.encode(), workers.to_ipc(part)))
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(workers.apply_batch, *zip(*jobs, strict=True)))
    pids = {pid for pid, _ in results}
    assert os.getpid() not in pids and len(pids) >= 2
    reports = [MutationReport.from_json(text) for _, text in results]
    assert {r.table for r in reports} == {"default.a", "default.b"}
    assert (with_row_ids(a), with_row_ids(b)) == before  # written, not visible
    if end == "abort":
        txn.abort()
        assert (with_row_ids(a), with_row_ids(b)) == before
        return
    with wh.transaction():  # a snapshot taken before the commit still sees neither change
        b.scan().to_arrow()
        txn.commit(reports)
        assert (with_row_ids(a), with_row_ids(b)) == before
    for t in (a, b):
        rows = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
        assert all(rows[i]["name"].endswith("!") for i in rows if i % 5 == 0 and i < 40)
        assert not any(i % 7 == 1 and i % 5 and i < 40 for i in rows)
        assert {i for i in rows if i >= 500} == set(range(500, 512))


@pytest.mark.slow
def test_a_coordinator_killed_mid_write_leaves_nothing_and_its_transaction_times_out(
    tmp_path: Path,
) -> None:
    timeout_s = 2.0
    with open_warehouse(tmp_path) as setup:
        make_acct(setup)
    wh = Warehouse.open(tmp_path / "wh", txn_timeout_s=timeout_s)
    try:
        acct = wh.table("acct")
        before = with_row_ids(acct)
        marker = tmp_path / "mid-write.json"
        child = multiprocessing.get_context("spawn").Process(
            target=workers.write_then_hang,
            args=(str(tmp_path / "wh"), timeout_s, str(marker), 70_000),
        )
        child.start()
        poll(marker.exists, "the coordinator to be mid-write")
        state = json.loads(marker.read_text())
        assert state["pid"] == child.pid
        os.kill(state["pid"], signal.SIGKILL)
        child.join(30)
        assert child.exitcode == -signal.SIGKILL
        txn_id = state["txn_id"]
        left = [
            p
            for p in Path(acct.spec.location).rglob("bucket_*")
            if f"_{state['write_id']:07d}_" in p.parent.name
        ]
        assert left  # the second group's file, open and half written
        assert with_row_ids(acct) == before  # nothing visible while the txn hangs open

        def reaped() -> bool:
            wh.metastore.reap_timed_out()
            return wh.metastore.get_txn_state(txn_id).value == "aborted"

        poll(reaped, "the time-out reaper to abort the transaction")
        assert not [r for r in wh.metastore.show_locks() if r["Transaction ID"] == txn_id]
        assert with_row_ids(acct) == before
        acct.update({"name": "'after'"}, "id = 1")  # its lock is gone: writers go on
        assert [r["name"] for r in acct.scan(where="id = 1").to_arrow().to_pylist()] == ["after"]
    finally:
        wh.close()
