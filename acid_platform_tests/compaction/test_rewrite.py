"""What minor and major compaction write: names, ROW__IDs, aborted and open write ids,
original files, buckets, compression, ordering, and invisibility until the compactor commits."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po

from acid_platform import Warehouse
from acid_platform.compaction import (
    RewriteRequest,
    compact_table,
    rewrite_partition,
    run_cleaner,
)
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.format import (
    ValidCompactorWriteIdList,
    ValidTxnList,
    decode_bucket,
    encode_bucket,
)
from acid_platform_tests.helpers import acid_dirs, events, warehouse_fixture
from acid_platform_tests.store_path import StorePath

from .conftest import (
    BACKENDS,
    KV,
    event_keys,
    kv_schema,
    streaming_batch,
    table_rows,
    write_insert_delta,
)

B0 = encode_bucket(0)

#: Minor and major compaction on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=[*BACKENDS, "s3"])


def _kv(n: int, start: int = 0, tag: str = "v") -> list[dict[str, object]]:
    return [{"k": i, "v": f"{tag}{i}"} for i in range(start, start + n)]


def test_events_of_aborted_txns_are_dropped(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    ms = wh.metastore
    d = StorePath(t.spec.location)
    txns, ids = streaming_batch(ms, "default", "t", 3)
    assert ids == [1, 2, 3]
    write_insert_delta(
        d / "delta_0000001_0000003", [(1, [(1, "a")]), (2, [(2, "b")]), (3, [(3, "c")])]
    )
    ms.commit_txn(txns[0])
    ms.abort_txn(txns[1])
    ms.commit_txn(txns[2])
    wh.transaction()  # a whole aborted statement: delta_4_4_0 never becomes visible
    t.insert(_kv(2, 100, "gone"))
    wh.rollback()
    t.insert(_kv(1, 10))  # write 5
    before = table_rows(wh, "t")
    assert [r[3] for r in before] == [1, 3, 10]

    (minor,) = compact_table(wh, "t", kind="minor")
    v = f"_v{minor.txn_id:07d}"
    assert [e[4] for e in event_keys(d / f"delta_0000001_0000005{v}" / "bucket_00000")] == [1, 3, 5]
    assert table_rows(wh, "t") == before
    report = run_cleaner(wh)
    assert any("delta_0000004_0000004_0000" in p for p in report.removed)  # aborted dir
    assert acid_dirs(d) == [f"delta_0000001_0000005{v}"]
    t.insert(_kv(1, 20))  # write 6: a major compaction needs more than one directory
    before = table_rows(wh, "t")
    (major,) = compact_table(wh, "t", kind="major")
    base = f"base_0000006_v{major.txn_id:07d}"
    assert [e[1] for e in event_keys(d / base / "bucket_00000")] == [1, 3, 5, 6]
    run_cleaner(wh)
    assert acid_dirs(d) == [base]
    assert table_rows(wh, "t") == before
    # the aborted txns' metadata went with their files
    assert all(a.aborted_txns == 0 for a in ms.write_activity())


def test_streaming_delta_with_an_open_txn_is_not_compacted_past(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    ms = wh.metastore
    d = StorePath(t.spec.location)
    t.insert(_kv(2, 0))  # write 1
    t.insert(_kv(2, 2))  # write 2
    txns, ids = streaming_batch(ms, "default", "t", 3)  # writes 3, 4, 5
    write_insert_delta(
        d / "delta_0000003_0000005", [(3, [(30, "s3")]), (4, [(40, "s4")]), (5, [(50, "s5")])]
    )
    ms.commit_txn(txns[0])
    ms.commit_txn(txns[1])
    t.insert(_kv(1, 6))  # write 6, committed while write 5 is open
    before = table_rows(wh, "t")
    assert [r[3] for r in before] == [0, 1, 2, 3, 30, 40, 6]

    (minor,) = compact_table(wh, "t", kind="minor")
    assert minor.highest_write_id == 2  # below the streaming delta that stays in place
    v = f"_v{minor.txn_id:07d}"
    assert f"delta_0000001_0000002{v}" in acid_dirs(d)
    assert table_rows(wh, "t") == before
    assert run_cleaner(wh).entries == ()  # the streaming txn is older than the compaction

    ms.commit_txn(txns[2])
    run_cleaner(wh)
    assert acid_dirs(d) == [
        f"delta_0000001_0000002{v}",
        "delta_0000003_0000005",
        "delta_0000006_0000006_0000",
    ]
    after_commit = table_rows(wh, "t")
    assert [r[3] for r in after_commit] == [0, 1, 2, 3, 30, 40, 50, 6]
    (major,) = compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert acid_dirs(d) == [f"base_0000006_v{major.txn_id:07d}"]
    assert table_rows(wh, "t") == after_commit


def test_original_files_keep_their_synthetic_row_ids(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    d = StorePath(t.spec.location)
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    for name, ks in (("000000_0", [1, 2, 3]), ("000000_0_copy_1", [4, 5])):
        with (d / name).open_output() as out:
            rows = {"k": pa.array(ks, pa.int32()), "v": [f"o{k}" for k in ks]}
            po.write_table(pa.table(rows, schema=schema), out)
    t.insert(_kv(1, 10))  # write 1
    t.delete("k = 2")  # deletes an original row: (0, bucket 0, rowid 1)
    before = table_rows(wh, "t")
    assert [r[:3] for r in before if r[0] == 0] == [(0, B0, 0), (0, B0, 2), (0, B0, 3), (0, B0, 4)]

    (major,) = compact_table(wh, "t", kind="major")
    base = d / f"base_0000002_v{major.txn_id:07d}" / "bucket_00000"
    assert [k[1:4] for k in event_keys(base)] == [
        (0, B0, 0), (0, B0, 2), (0, B0, 3), (0, B0, 4), (1, B0, 0),
    ]  # fmt: skip
    assert table_rows(wh, "t") == before
    run_cleaner(wh)
    assert sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) == [base.parent.name]
    assert table_rows(wh, "t") == before


def test_one_file_per_bucket_sorted_with_the_tables_compression(wh: Warehouse) -> None:
    t = wh.create_table(
        "b", KV, bucket_columns=["k"], num_buckets=4, properties={"orc.compress": "SNAPPY"}
    )
    d = StorePath(t.spec.location)
    for start in range(0, 40, 10):
        t.insert(_kv(10, start))
    t.update({"v": "'new'"}, where="k % 3 = 0")
    t.delete("k % 7 = 0")
    before = table_rows(wh, "b")

    (minor,) = compact_table(wh, "b", kind="minor")
    v = f"_v{minor.txn_id:07d}"
    for kind in ("delta", "delete_delta"):
        out = d / f"{kind}_0000001_0000006{v}"
        files = sorted(p.name for p in out.iterdir() if p.name.startswith("bucket_"))
        assert files == [f"bucket_0000{b}" for b in range(4)]
        for f in files:
            keys = event_keys(out / f)
            assert keys == sorted(keys, key=lambda e: (e[1], e[2], e[3], -e[4]))
            assert {decode_bucket(e[2])[0] for e in keys} == {int(f[-1])}
            assert po.ORCFile((out / f).open()).compression == "SNAPPY"
    assert table_rows(wh, "b") == before

    (major,) = compact_table(wh, "b", kind="major")
    base = d / f"base_0000006_v{major.txn_id:07d}"
    total = 0
    for b in range(4):
        bucket = base / f"bucket_0000{b}"
        orc = po.ORCFile(bucket.open())
        assert orc.compression == "SNAPPY"
        meta = orc.metadata
        assert meta[b"hive.acid.version"] == b"2" and meta[b"hive.acid.key.index"]
        keys = event_keys(bucket)
        assert keys == sorted(keys) and all(k[0] == 0 and k[1] == k[4] for k in keys)
        total += len(keys)
    assert total == len(before)
    run_cleaner(wh)
    assert table_rows(wh, "b") == before


def test_output_is_invisible_until_the_compactor_commits(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    d = StorePath(t.spec.location)
    for i in range(3):
        t.insert(_kv(2, 10 * i))
    t.delete("k = 10")
    before = table_rows(wh, "t")
    seen: list[str] = []

    def mid_compaction(step: str) -> None:
        if step != "worker.files_written":
            return
        # the base is complete on disk, its txn is open: readers must not use it
        written = [n for n in acid_dirs(d) if n.startswith("base_")]
        assert len(written) == 1 and (d / written[0] / "bucket_00000").exists()
        assert table_rows(wh, "t") == before
        seen.append(written[0])

    with on_checkpoint(mid_compaction):
        (info,) = compact_table(wh, "t", kind="major")
    assert seen == [f"base_0000004_v{info.txn_id:07d}"]
    # now visible: the old deltas are shadowed (obsolete) but still there until cleaned
    assert table_rows(wh, "t") == before
    assert len(acid_dirs(d)) == 5


def test_partitioned_table_compacts_every_partition_or_one(wh: Warehouse) -> None:
    t = wh.create_table("p", KV, partition_columns=[("ds", "string")])
    for ds in ("2024-01-01", "2024-01-02"):
        for i in range(3):
            t.insert([{"k": i, "v": f"{ds}-{i}", "ds": ds}])
    before = table_rows(wh, "p")
    (one,) = compact_table(wh, "p", partition={"ds": "2024-01-02"}, kind="major")
    assert one.partition == "ds=2024-01-02"
    infos = compact_table(wh, "p", kind="minor")
    assert sorted(str(i.partition) for i in infos) == ["ds=2024-01-01", "ds=2024-01-02"]
    run_cleaner(wh)
    root = StorePath(t.spec.location)
    assert acid_dirs(root / "ds=2024-01-02") == [f"base_0000006_v{one.txn_id:07d}"]
    (minor,) = [i for i in infos if i.partition == "ds=2024-01-01"]
    assert acid_dirs(root / "ds=2024-01-01") == [f"delta_0000001_0000003_v{minor.txn_id:07d}"]
    assert table_rows(wh, "p") == before


def test_not_enough_to_compact_writes_nothing(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    t.insert(_kv(3))
    t.delete("k = 1")  # one delta and one delete delta: Hive leaves them
    (info,) = compact_table(wh, "t", kind="minor")
    assert info.state.value == "ready for cleaning"
    d = StorePath(t.spec.location)
    assert acid_dirs(d) == ["delete_delta_0000002_0000002_0000", "delta_0000001_0000001_0000"]
    assert run_cleaner(wh).cleaned_ids == (info.id,)
    assert [r[3] for r in table_rows(wh, "t")] == [0, 2]
    assert events(d / "delta_0000001_0000001_0000" / "bucket_00000")[0]["row"] == {
        "k": 0,
        "v": "v0",
    }


def test_inputs_out_of_rowid_order_are_sorted(tmp_path: Path) -> None:
    """Hand-made deltas whose files do not follow each other in ROW__ID order: the rewrite
    sorts in memory instead of streaming (Hive's readers need sorted files)."""
    table = tmp_path / "t"
    write_insert_delta(table / "delta_0000001_0000001_0000", [(1, [(5, "a"), (6, "b")])])
    # statement 1, but events stamped as statement 0: rowids restart below the previous file's
    write_insert_delta(table / "delta_0000001_0000001_0001", [(1, [(7, "c")])])
    ids = ValidCompactorWriteIdList("db.t", 1)
    request = RewriteRequest("major", str(table), ids, ValidTxnList(9), 9, kv_schema())
    result = rewrite_partition(request)
    assert result is not None and result.rows_written == 3
    keys = event_keys(table / "base_0000001_v0000009" / "bucket_00000")
    assert [k[1:4] for k in keys] == [(1, B0, 0), (1, B0, 0), (1, B0, 1)]
