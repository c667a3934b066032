"""Sources recorded in a transaction: committed into the table with it, exactly once; gone if
it aborts; the second of two concurrent loads of one source is aborted at commit. SQLite and
PostgreSQL (the ``url`` fixture)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from acid_platform.errors import DuplicateSourceError, NoSuchObjectError, TxnAbortedError
from acid_platform.metastore import Metastore, Source
from acid_platform.metastore.migrate import HEAD, current_revision, upgrade
from acid_platform.metastore.store import normalize_url
from acid_platform_tests.helpers import fresh_namespace, make_table, reset_store

from .conftest import FakeClock

FILE = Source("file:///landing/a.csv|size=10|mtime_ns=1", {"uri": "file:///landing/a.csv"})


def keys(ms: Metastore, db: str = "db", table: str = "t") -> list[str]:
    return [s.key for s in ms.committed_sources(db, table)]


def test_a_source_is_committed_with_its_transaction(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms)
    txn = ms.open_txn()
    write_id = ms.allocate_write_id(txn, "db", "t")
    ms.record_source(txn, "db", "t", FILE)
    assert ms.committed_source("db", "t", FILE.key) is None  # not before the commit

    ms.commit_txn(txn)

    found = ms.committed_source("db", "t", FILE.key)
    assert found is not None
    assert (found.txn_id, found.write_id, found.db, found.table) == (txn, write_id, "db", "t")
    assert found.info == {"uri": "file:///landing/a.csv"}
    assert found.committed_at == int(clock.now * 1000)


def test_an_aborted_transaction_commits_no_source(ms: Metastore) -> None:
    make_table(ms)
    txn = ms.open_txn()
    ms.record_source(txn, "db", "t", FILE)
    ms.abort_txn(txn)
    assert keys(ms) == []

    again = ms.open_txn()  # the source can be loaded by a later transaction
    ms.record_source(again, "db", "t", FILE)
    ms.commit_txn(again)
    assert keys(ms) == [FILE.key]


def test_a_committed_source_is_refused_when_recorded_again(ms: Metastore) -> None:
    make_table(ms)
    first = ms.open_txn()
    ms.record_source(first, "db", "t", FILE)
    ms.commit_txn(first)

    second = ms.open_txn()
    with pytest.raises(DuplicateSourceError, match=f"already committed into db.t by txnid:{first}"):
        ms.record_source(second, "db", "t", FILE)
    assert ms.get_txn_state(second) == "open"  # the caller decides (the table layer aborts)
    ms.record_source(second, "db", "t", Source("b"))
    with pytest.raises(DuplicateSourceError, match="recorded .* in txnid"):
        ms.record_source(second, "db", "t", Source("b"))  # twice in one transaction


def test_several_sources_are_recorded_all_or_none(ms: Metastore) -> None:
    make_table(ms)
    first = ms.open_txn()
    ms.record_sources(first, "db", "t", [FILE])
    ms.commit_txn(first)
    txn = ms.open_txn()
    with pytest.raises(DuplicateSourceError, match="already committed"):
        ms.record_sources(txn, "db", "t", [Source("new"), FILE])
    with pytest.raises(DuplicateSourceError, match="recorded .* in txnid"):
        ms.record_sources(txn, "db", "t", [Source("new"), Source("new")])
    ms.record_sources(txn, "db", "t", [Source("new"), Source("other")])  # none was recorded
    ms.commit_txn(txn)
    assert sorted(keys(ms)) == sorted([FILE.key, "new", "other"])


def test_the_second_of_two_concurrent_loads_is_aborted_at_commit(ms: Metastore) -> None:
    make_table(ms)
    a, b = ms.open_txns(2)
    for txn in (a, b):
        ms.allocate_write_id(txn, "db", "t")
        ms.record_source(txn, "db", "t", FILE)
        ms.record_source(txn, "db", "t", Source(f"own-{txn}"))
    ms.commit_txn(b)

    with pytest.raises(DuplicateSourceError, match=f"txnid:{a} is aborted"):
        ms.commit_txn(a)

    assert ms.get_txn_state(a) == "aborted"
    assert sorted(keys(ms)) == sorted([FILE.key, f"own-{b}"])  # none of a's sources
    with pytest.raises(TxnAbortedError):
        ms.commit_txn(a)


def test_sources_are_per_table_and_go_with_the_table(ms: Metastore) -> None:
    make_table(ms, name="t")
    make_table(ms, name="u")
    txn = ms.open_txn()
    ms.record_source(txn, "db", "t", FILE)
    ms.record_source(txn, "db", "u", FILE)  # the same file into another table
    ms.commit_txn(txn)
    assert keys(ms, table="t") == keys(ms, table="u") == [FILE.key]

    ms.drop_table("db", "t")
    with pytest.raises(NoSuchObjectError):
        ms.committed_sources("db", "t")
    with pytest.raises(NoSuchObjectError):
        ms.record_source(ms.open_txn(), "db", "t", FILE)
    make_table(ms, name="t")
    assert keys(ms, table="t") == []  # a new table of the same name loaded nothing


def test_a_timed_out_transaction_commits_no_source(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms)
    txn = ms.open_txn()
    ms.record_source(txn, "db", "t", FILE)
    clock.advance(ms.txn_timeout_s + 1)
    assert ms.reap_timed_out() == [txn]
    assert keys(ms) == []
    fresh = ms.open_txn()
    ms.record_source(fresh, "db", "t", FILE)
    ms.commit_txn(fresh)
    assert keys(ms) == [FILE.key]


def test_long_keys_and_many_sources(ms: Metastore) -> None:
    make_table(ms)
    long_key = "s3://bucket/" + "d/" * 2000 + "f.parquet"
    many = [Source(f"file-{i}") for i in range(620)]  # more than one IN (...) batch
    txn = ms.open_txn()
    ms.record_sources(txn, "db", "t", [Source(long_key), *many[:300]])
    ms.record_sources(txn, "db", "t", many[300:])
    ms.commit_txn(txn)
    assert len(ms.committed_sources("db", "t")) == 621
    wanted = [long_key, *(s.key for s in many[::2]), "never-loaded"]
    assert len(ms.committed_sources("db", "t", wanted)) == 1 + 310


def test_threads_loading_one_source_commit_it_once(url: str) -> None:
    with Metastore(url) as setup:
        make_table(setup)
    results: list[str] = []
    barrier = threading.Barrier(6)

    def load(i: int) -> None:
        with Metastore(url) as ms:
            txn = ms.open_txn()
            ms.allocate_write_id(txn, "db", "t")
            barrier.wait(timeout=60)
            try:
                ms.record_source(txn, "db", "t", FILE)
                ms.commit_txn(txn)
                results.append("committed")
            except DuplicateSourceError:
                ms.abort_txn(txn)  # no-op when the commit aborted it already
                results.append("duplicate")

    threads = [threading.Thread(target=load, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(results) == ["committed"] + ["duplicate"] * 5
    with Metastore(url) as ms:
        (committed,) = ms.committed_sources("db", "t")
        assert ms.get_txn_state(committed.txn_id) == "committed"


@dataclass(frozen=True)
class Step:
    txn: int  # 0..2
    action: str  # "record" | "commit" | "abort"
    key: int  # 0..2 (for record)


steps = st.lists(
    st.builds(
        Step,
        st.integers(0, 2),
        st.sampled_from(["record", "record", "commit", "abort"]),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_sources_match_the_model(url: str, script: list[Step]) -> None:
    """Any interleaving of three transactions recording, committing and aborting: a source is
    committed at most once, by the first transaction to commit it, with all that
    transaction's sources or none."""
    reset_store(url)
    with Metastore(url, clock=FakeClock()) as ms:
        make_table(ms)
        txns = ms.open_txns(3)
        state = ["open"] * 3
        recorded: list[set[str]] = [set(), set(), set()]
        committed: dict[str, int] = {}
        for step in script:
            i, txn, key = step.txn, txns[step.txn], f"k{step.key}"
            if state[i] != "open":
                continue
            if step.action == "record":
                duplicate = key in committed or key in recorded[i]
                if duplicate:
                    with pytest.raises(DuplicateSourceError):
                        ms.record_source(txn, "db", "t", Source(key))
                else:
                    ms.record_source(txn, "db", "t", Source(key))
                    recorded[i].add(key)
            elif step.action == "commit":
                if recorded[i] & committed.keys():
                    with pytest.raises(DuplicateSourceError):
                        ms.commit_txn(txn)
                    state[i] = "aborted"
                else:
                    ms.commit_txn(txn)
                    state[i] = "committed"
                    committed |= dict.fromkeys(recorded[i], txn)
            else:
                ms.abort_txn(txn)
                state[i] = "aborted"
        assert {s.key: s.txn_id for s in ms.committed_sources("db", "t")} == committed
        assert [ms.get_txn_state(t).value for t in txns] == state


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_metastore_of_the_first_revision_is_upgraded_in_place(
    backend: str, tmp_path: Path
) -> None:
    url, cleanup = fresh_namespace(backend, tmp_path)
    engine = create_engine(normalize_url(url))
    try:
        upgrade(engine, "0001")  # a warehouse made before sources existed
        with engine.connect() as conn:
            assert current_revision(conn) == "0001"
        with Metastore(url) as ms:  # opening it migrates
            make_table(ms)
            txn = ms.open_txn()
            ms.record_source(txn, "db", "t", FILE)
            ms.commit_txn(txn)
            assert keys(ms) == [FILE.key]
        with engine.connect() as conn:
            assert current_revision(conn) == HEAD
    finally:
        engine.dispose()
        cleanup()
