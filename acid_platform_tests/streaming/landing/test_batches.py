"""Landing files go in through transaction batches: one transaction per file, one
``delta_<minW>_<maxW>`` per partition spanning the batch's write ids, each file's identity
committed by its own transaction — so exactly-once holds across re-runs, overlapping and
concurrent loads, and a ``kill -9`` half-way through a batch."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from pathlib import Path

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.streaming.landing import load_files, stat_landing
from acid_platform.table.verify import verify_table
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.streaming.landing.workers import load_then_die


def land(landing: Path, name: str, ids: range, day: str | None = None) -> Path:
    path = landing / name
    extra = "" if day is None else f",{day}"
    header = "id" + ("" if day is None else ",ds")
    path.write_text(header + "\n" + "".join(f"{i}{extra}\n" for i in ids))
    return path


def ids_in(wh: Warehouse, table: str = "t") -> list[int]:
    return sorted(r["id"] for r in wh.table(table).scan().to_arrow().to_pylist())


def test_a_load_is_one_batch_with_one_delta_per_partition(wh: Warehouse, landing: Path) -> None:
    wh.create_table("t", [("id", "int")], partition_columns=[("ds", "string")])
    days = ["d1", "d2", "d1", "d1"]  # d2 gets rows from one transaction of four
    files = [
        land(landing, f"f{k}.csv", range(10 * k, 10 * k + 3), day) for k, day in enumerate(days)
    ]

    result = load_files(wh, "t", files)

    assert (
        result.ok and result.rows == 12 and [f.uri for f in result.loaded] == list(map(str, files))
    )
    assert result.write_ids == (1, 2, 3, 4)  # one write id per file, consecutive: one batch
    assert list(result.txn_ids) == list(range(result.txn_ids[0], result.txn_ids[0] + 4))
    root = Path(wh.table("t").spec.location)
    for day in ("d1", "d2"):  # one delta per partition, spanning the whole batch
        assert acid_dirs(root / f"ds={day}") == ["delta_0000001_0000004"]
    assert not list(root.glob("*/*/*_flush_length"))  # the batch closed: side files gone
    assert result.dirs_written == tuple(
        str(root / f"ds={day}" / "delta_0000001_0000004") for day in ("d1", "d2")
    )
    committed = {s.key: s for s in wh.table("t").committed_sources()}
    for k, path in enumerate(files):  # each file committed by its own transaction
        source = committed[stat_landing(path).key]
        assert (source.txn_id, source.write_id) == (result.txn_ids[k], k + 1)
    assert ids_in(wh) == sorted(i for k in range(4) for i in range(10 * k, 10 * k + 3))
    assert [f for f in verify_table(wh, "default.t") if not f.passed] == []


def test_batches_of_a_given_size(wh: Warehouse, landing: Path) -> None:
    wh.create_table("t", [("id", "int")])
    files = [land(landing, f"f{k}.csv", range(k, k + 1)) for k in range(7)]

    result = load_files(wh, "t", files, batch_size=3)

    assert result.write_ids == tuple(range(1, 8))
    assert acid_dirs(Path(wh.table("t").spec.location)) == [
        "delta_0000001_0000003",
        "delta_0000004_0000006",
        "delta_0000007_0000007",  # a batch of one: delta_w_w, as an INSERT writes
    ]
    assert ids_in(wh) == list(range(7))


def test_exactly_once_across_reruns_and_overlapping_loads(wh: Warehouse, landing: Path) -> None:
    wh.create_table("t", [("id", "int")])
    a, b, c, d = (
        land(landing, f"{n}.csv", range(10 * k, 10 * k + 2)) for k, n in enumerate("abcd")
    )
    first = load_files(wh, "t", [a, b])

    second = load_files(wh, "t", [b, c, d, a])

    assert [f.uri for f in second.loaded] == [str(c), str(d)]
    assert sorted(s.key for s in second.skipped) == sorted(stat_landing(p).key for p in (a, b))
    assert second.write_ids == (3, 4) and first.write_ids == (1, 2)
    assert load_files(wh, "t", [a, b, c, d]).is_noop
    assert ids_in(wh) == [0, 1, 10, 11, 20, 21, 30, 31]


def test_concurrent_batches_over_the_same_files_load_each_once(
    wh: Warehouse, landing: Path
) -> None:
    """Four loads of six files (in different orders) at once: each file's rows committed by
    exactly one transaction; the others' transactions for it are aborted, reported skipped."""
    wh.create_table("t", [("id", "int")])
    files = [land(landing, f"f{k}.csv", range(100 * k, 100 * k + 5)) for k in range(6)]
    barrier = threading.Barrier(4)
    results = []

    def load(order: list[Path]) -> None:
        with Warehouse.open(wh.root, create=False) as mine:
            barrier.wait(timeout=60)
            results.append(load_files(mine, "t", order))

    orders = [files, files[::-1], files[2:] + files[:2], files[3:] + files[:3]]
    threads = [threading.Thread(target=load, args=(order,)) for order in orders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert len(results) == 4 and all(r.ok for r in results)
    loaded = Counter(f.uri for r in results for f in r.loaded)
    assert loaded == Counter(str(f) for f in files)  # each file loaded by exactly one load
    for r in results:
        assert len(r.loaded) + len(r.skipped) == 6
    assert ids_in(wh) == sorted(i for k in range(6) for i in range(100 * k, 100 * k + 5))
    assert len(wh.table("t").committed_sources()) == 6


def test_kill_9_half_way_through_a_batch(wh: Warehouse, landing: Path) -> None:
    """A loader killed while writing the third of five files (two committed): the two stay
    visible, nothing of the rest is; a re-run loads the three exactly once; the dead
    transactions are reaped; compaction and cleaning keep it all."""
    wh.create_table("t", [("id", "int")])
    files = [land(landing, f"f{k}.csv", range(10 * k, 10 * k + 4)) for k in range(5)]
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=load_then_die, args=(wh.root, "t", list(map(str, files)), 3))
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == -9

    assert ids_in(wh) == [0, 1, 2, 3, 10, 11, 12, 13]  # exactly the committed files
    assert acid_dirs(Path(wh.table("t").spec.location)) == ["delta_0000001_0000005"]
    assert len(wh.table("t").committed_sources()) == 2

    rerun = load_files(wh, "t", files)

    assert [f.uri for f in rerun.loaded] == list(map(str, files[2:])) and len(rerun.skipped) == 2
    assert rerun.write_ids == (6, 7, 8)
    expected = sorted(i for k in range(5) for i in range(10 * k, 10 * k + 4))
    assert ids_in(wh) == expected
    reaped = wh.metastore.reap_timed_out(timeout_s=0.001)  # the dead loader's open txns
    assert len(reaped) == 3
    assert ids_in(wh) == expected and len(wh.table("t").committed_sources()) == 5
    compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert ids_in(wh) == expected
    assert [f for f in verify_table(wh, "default.t") if not f.passed] == []


def test_an_insert_only_table_takes_each_file_in_an_insert_of_its_own(
    wh: Warehouse, landing: Path
) -> None:
    """Ingest V2 writes full ACID tables only (as Hive's): an insert-only table still loads,
    one INSERT per file, with the same guarantees."""
    wh.sql(
        "CREATE TABLE mm (id int) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    a, b = land(landing, "a.csv", range(3)), land(landing, "b.csv", range(3, 5))
    bad = landing / "bad.csv"
    bad.write_text("id\nnot-a-number\n")

    result = load_files(wh, "mm", [a, bad, b])

    assert [f.uri for f in result.loaded] == [str(a), str(b)] and result.write_ids == (1, 2)
    assert [f.file.uri for f in result.failed] == [str(bad)]
    assert ids_in(wh, "mm") == [0, 1, 2, 3, 4]
    again = load_files(wh, "mm", [a, b])
    assert again.is_noop and len(again.skipped) == 2
