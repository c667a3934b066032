"""Loading landing files: formats, exactly once, bad input writing nothing, and concurrent
loads of one file committing it once (threads, explicit transactions, OS processes on SQLite
and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import gzip
import multiprocessing
import os
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from acid_platform import Warehouse
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.errors import (
    DuplicateSourceError,
    LandingFileError,
    NotNullViolationError,
    SchemaMismatchError,
    UnknownColumnError,
)
from acid_platform.streaming.landing import LandingFile, list_landing, load_files, stat_landing
from acid_platform.table.verify import verify_table
from acid_platform_tests.helpers import acid_dirs, open_warehouse
from acid_platform_tests.streaming.landing.workers import load_at_once

TYPED = [
    ("id", "int"),
    ("code", "string"),
    ("amount", "decimal(10,2)"),
    ("day", "date"),
    ("at", "timestamp"),
]
ROW = {
    "id": 1,
    "code": "007",
    "amount": Decimal("1.50"),
    "day": dt.date(2024, 1, 2),
    "at": dt.datetime(2024, 1, 2, 8, 30),
}


def csv_file(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(wh: Warehouse, table: str = "t") -> list[dict[str, Any]]:
    return sorted(wh.table(table).scan().to_arrow().to_pylist(), key=lambda r: str(r))


@pytest.mark.parametrize("kind", ["csv", "csv.gz", "jsonl", "parquet"])
def test_each_format_loads_into_the_tables_types(wh: Warehouse, landing: Path, kind: str) -> None:
    wh.create_table("t", TYPED)
    path = landing / f"a.{kind}"
    if kind.startswith("csv"):
        text = "ID,Code,amount,day,at\n1,007,1.50,2024-01-02,2024-01-02 08:30:00\n"
        path.write_bytes(gzip.compress(text.encode()) if kind.endswith("gz") else text.encode())
    elif kind == "jsonl":
        path.write_text(
            '{"id": 1, "code": "007", "amount": 1.5, "day": "2024-01-02", '
            '"at": "2024-01-02 08:30:00"}\n'
        )
    else:
        pq.write_table(
            pa.table({"id": [1], "code": ["007"], "amount": [1.5], "day": [ROW["day"]],
                      "at": [ROW["at"]]}),
            path,
        )  # fmt: skip

    result = load_files(wh, "t", [path])

    assert result.rows == 1 and not result.is_noop
    assert rows(wh) == [ROW]


def test_a_rerun_loads_nothing_and_a_rewritten_file_loads_again(
    wh: Warehouse, landing: Path
) -> None:
    wh.create_table("t", [("id", "int")])
    path = csv_file(landing / "a.csv", ["id", "1", "2"])
    first = load_files(wh, "t", [path, str(path)])  # named twice: loaded once
    assert (first.rows, len(first.loaded)) == (2, 1)

    again = load_files(wh, "t", [path])

    assert again.is_noop and again.rows == 0 and again.loads == ()
    (skip,) = again.skipped
    assert ((skip.txn_id,), (skip.write_id,)) == (first.txn_ids, first.write_ids)
    assert again.as_dict()["skipped"] is True
    csv_file(path, ["id", "1", "2", "3"])  # rewritten in place: a new identity
    assert load_files(wh, "t", [path]).rows == 3
    assert sorted(r["id"] for r in rows(wh)) == [1, 1, 2, 2, 3]
    assert len(wh.table("t").committed_sources()) == 2


@pytest.mark.parametrize(
    ("lines", "error", "message"),
    [
        (["id,name", "1,a", "x,b"], LandingFileError, "does not parse as csv"),
        (["id,name", "1,a,extra"], LandingFileError, "does not parse as csv"),
        (["id", "1"], SchemaMismatchError, "lacks column(s) ['name']"),
        (["id,name,colour", "1,a,red"], SchemaMismatchError, "has column(s) ['colour']"),
        (["id,name", ",a"], NotNullViolationError, "NOT NULL"),
    ],
)
def test_a_bad_file_aborts_only_its_own_transaction(
    wh: Warehouse, landing: Path, lines: list[str], error: type[Exception], message: str
) -> None:
    wh.create_table("t", [("id", "int"), ("name", "string")], not_null=["id"])
    good = csv_file(landing / "good.csv", ["id,name", "7,g"])
    bad = csv_file(landing / "bad.csv", lines)
    last = csv_file(landing / "last.csv", ["id,name", "8,h"])

    result = load_files(wh, "t", [good, bad, last])  # one batch of three transactions

    (failed,) = result.failed
    assert failed.file.uri == str(bad) and failed.error == error.__name__
    assert message in failed.message and str(bad) in str(failed)
    assert not result.ok and not result.is_noop
    assert [f.uri for f in result.loaded] == [str(good), str(last)]
    assert rows(wh) == [{"id": 7, "name": "g"}, {"id": 8, "name": "h"}]  # nothing of bad
    assert {s.key for s in wh.table("t").committed_sources()} == {
        stat_landing(good).key,
        stat_landing(last).key,
    }
    assert result.write_ids == (1, 3)  # the bad file's transaction (write id 2) aborted
    (bad_txn,) = wh.metastore.show_transactions()  # none open, the bad file's aborted
    assert bad_txn["Transaction State"] == "ABORTED"
    assert bad_txn["Transaction ID"] == result.txn_ids[0] + 1
    assert acid_dirs(Path(wh.root) / "t") == ["delta_0000001_0000003"]  # one batch, one delta
    assert all(f.passed for f in verify_table(wh, "default.t")), verify_table(wh, "default.t")
    again = load_files(wh, "t", [good, bad, last])  # a re-run: only the bad file, failing again
    assert again.loads == () and len(again.skipped) == 2 and len(again.failed) == 1


def test_unknown_missing_and_unreadable_files(wh: Warehouse, landing: Path) -> None:
    wh.create_table("t", [("id", "int")])
    notes = csv_file(landing / "notes.txt", ["id", "1"])
    (failed,) = load_files(wh, "t", [notes]).failed
    assert "does not say its format" in failed.message
    with pytest.raises(LandingFileError, match="unknown landing file format"):
        load_files(wh, "t", [notes], fmt="xml")
    assert load_files(wh, "t", [notes], fmt="csv").rows == 1  # told the format
    with pytest.raises(LandingFileError, match="does not exist"):
        load_files(wh, "t", [landing / "gone.csv"])
    with pytest.raises(LandingFileError, match="not a file"):
        load_files(wh, "t", [landing])
    (landing / "bad.parquet").write_bytes(b"PAR1 not really")
    (failed,) = load_files(wh, "t", [landing / "bad.parquet"]).failed
    assert "does not parse as parquet" in failed.message
    pq.write_table(pa.table({"id": ["one"]}), landing / "text.parquet")
    (failed,) = load_files(wh, "t", [landing / "text.parquet"]).failed
    assert failed.error == "SchemaMismatchError"
    assert "text.parquet does not fit table default.t" in failed.message
    assert len(wh.table("t").committed_sources()) == 1
    assert rows(wh) == [{"id": 1}]


def test_listing_a_landing_location(landing: Path, tmp_path: Path) -> None:
    for name in ["b.csv", "a.parquet", ".hidden.csv", "_SUCCESS", "day=1/c.csv"]:
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text("x")
    os.utime(landing / "b.csv", ns=(1, 1))  # the oldest comes first

    flat = list_landing(landing)
    assert [f.uri for f in flat or []] == [str(landing / "b.csv"), str(landing / "a.parquet")]
    deep = list_landing(f"file://{landing}", "*.csv", recursive=True)
    assert [f.uri for f in deep or []] == [  # one URI form: the resolved path
        f"{landing}/b.csv",
        f"{landing}/day=1/c.csv",
    ]
    assert list_landing(tmp_path / "nowhere") is None
    with pytest.raises(LandingFileError, match="not a directory"):
        list_landing(landing / "b.csv")
    stat = stat_landing(landing / "b.csv")
    assert stat == LandingFile(str(landing / "b.csv"), 1, 1, (landing / "b.csv").stat().st_ctime_ns)
    assert stat.key == f"{landing / 'b.csv'}|size=1|mtime_ns=1"
    assert stat.source("ab").info == {
        "uri": str(landing / "b.csv"),
        "size": 1,
        "mtime_ns": 1,
        "ctime_ns": stat.ctime_ns,
        "sha256": "ab",
    }


def test_a_load_that_finds_its_file_committed_meanwhile_loads_the_rest(
    wh: Warehouse, landing: Path
) -> None:
    """A concurrent load commits one of the files between this load's check and its INSERT:
    this load's transaction is refused, and it loads only the file still missing."""
    wh.create_table("t", [("id", "int")])
    a = csv_file(landing / "a.csv", ["id", "1"])
    b = csv_file(landing / "b.csv", ["id", "2"])
    other = Warehouse.open(wh.root, create=False)
    concurrent: list[int] = []
    started = threading.Event()

    def meanwhile(step: str) -> None:
        if step == "ingest.file_written" and not started.is_set():
            started.set()  # the concurrent load passes this step too
            concurrent.append(load_files(other, "t", [a]).rows)

    try:
        with on_checkpoint(meanwhile):
            result = load_files(wh, "t", [a, b])
    finally:
        other.close()

    assert concurrent == [1]
    assert [f.uri for f in result.loaded] == [str(b)] and result.rows == 1
    assert [s.key for s in result.skipped] == [stat_landing(a).key]
    assert sorted(r["id"] for r in rows(wh)) == [1, 2]


def test_two_transactions_loading_one_file_commit_it_once(wh: Warehouse, landing: Path) -> None:
    """Both INSERT the file's rows with its identity; the second to commit is aborted and
    nothing it wrote is visible (its files stay on disk for the cleaner)."""
    t = wh.create_table("t", [("id", "int")])
    source = stat_landing(csv_file(landing / "a.csv", ["id", "1"])).source("digest")
    other = Warehouse.open(wh.root, create=False)
    try:
        wh.transaction()
        other.transaction()
        wh.table("t").insert([{"id": 1}], sources=[source])
        other.table("t").insert([{"id": 1}], sources=[source])
        other.commit()
        with pytest.raises(DuplicateSourceError, match="is aborted, nothing it wrote is visible"):
            wh.commit()
    finally:
        other.close()

    assert not wh.in_transaction
    assert rows(wh) == [{"id": 1}]
    assert len(acid_dirs(Path(wh.root) / "t")) == 2  # the aborted delta, invisible
    assert all(f.passed for f in verify_table(wh, "default.t")), verify_table(wh, "default.t")
    (committed,) = t.committed_sources()
    assert wh.metastore.get_txn_state(committed.txn_id) == "committed"


def test_threads_loading_one_file_load_it_once(wh: Warehouse, landing: Path) -> None:
    wh.create_table("t", [("id", "int")])
    path = csv_file(landing / "a.csv", ["id", *map(str, range(50))])
    barrier = threading.Barrier(4)
    results: list[tuple[int, int]] = []

    def load() -> None:
        with Warehouse.open(wh.root, create=False) as mine:
            barrier.wait(timeout=60)
            result = load_files(mine, "t", [path])
            results.append((result.rows, len(result.loaded)))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == [(0, 0)] * 3 + [(50, 1)]
    assert sorted(r["id"] for r in rows(wh)) == list(range(50))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_processes_loading_one_file_load_it_once(
    tmp_path: Path, backend: str, landing: Path
) -> None:
    with open_warehouse(tmp_path, backend=backend) as wh:
        wh.create_table("t", [("id", "int")])
        path = csv_file(landing / "a.csv", ["id", *map(str, range(100))])
        ctx = multiprocessing.get_context("spawn")
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(
                target=load_at_once,
                args=(wh.root, wh.metastore.url, "t", str(path), barrier, out),
            )
            for _ in range(4)
        ]
        for proc in procs:
            proc.start()
        results = [out.get(timeout=300) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * 4
        assert sorted(results) == [(0, 0, 1)] * 3 + [(100, 1, 0)]
        assert sorted(r["id"] for r in rows(wh)) == list(range(100))
        assert len(wh.table("t").committed_sources()) == 1


def test_a_partitioned_table_and_a_new_table(wh: Warehouse, landing: Path) -> None:
    from acid_platform.streaming.landing import ensure_table

    table = ensure_table(wh, "sales.returns", {"id": "int"}, {"ds": "date"})
    assert ensure_table(wh, "sales.returns", {"other": "int"}).spec == table.spec  # exists
    path = csv_file(landing / "r.csv", ["id,ds", "1,2024-01-01", "2,2024-01-02"])
    assert load_files(wh, "sales.returns", [path]).rows == 2
    assert wh.list_partitions("sales.returns") == ["ds=2024-01-01", "ds=2024-01-02"]
    with pytest.raises(UnknownColumnError):
        wh.table("sales.returns").insert([{"nope": 1}])
