"""Compaction with a streaming batch live: it never compacts past an open streaming
transaction, readers stay correct through minor and major compactions and the cleaner, and the
batch's delta is compacted once the batch has closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter
from acid_platform.table.verify import verify_table


def _ids(wh: Warehouse) -> list[int]:
    return sorted(r["id"] for r in wh.table("t").scan(columns=["id"]).to_arrow().to_pylist())


def _dirs(t_path: Path) -> list[str]:
    return sorted(p.name for p in t_path.iterdir() if p.is_dir())


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_compaction_during_a_live_batch(wh: Warehouse, kind: str) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=2)
    root = Path(t.spec.location)
    t.insert([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])  # write id 1
    t.insert([{"id": 3, "v": "c"}])  # write id 2
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(10)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(1)
        .connect()
    )
    expected = [1, 2, 3]
    for k in range(3):  # write ids 3, 4, 5; 4 aborts
        conn.begin_transaction()
        conn.write([f"{100 * k + i},s".encode() for i in range(5)])
        if k == 1:
            conn.abort_transaction()
        else:
            conn.commit_transaction()
            expected += [100 * k + i for i in range(5)]
    conn.begin_transaction()  # write id 6 stays open through the compactions
    conn.write([b"900,open", b"901,open"])
    open_write_id = conn.current_write_id
    assert open_write_id == 6

    (info,) = compact_table(wh, "t", kind=kind)
    assert info.state.value == "ready for cleaning"
    outputs = [d for d in _dirs(root) if d.endswith(f"_v{info.txn_id:07d}")]
    name = "base_0000002" if kind == "major" else "delta_0000001_0000002"
    assert outputs == [f"{name}_v{info.txn_id:07d}"]  # the batch's delta is not compacted
    assert info.highest_write_id is not None and info.highest_write_id < open_write_id
    assert _ids(wh) == sorted(expected)  # a reader right after the compaction
    run_cleaner(wh)  # Hive 4's rule: the batch's txns are older than the compaction, so its
    assert outputs[0] in _dirs(root)  # inputs stay while they are open; the batch's delta too
    assert "delta_0000003_0000012" in _dirs(root) and "delta_0000001_0000001_0000" in _dirs(root)
    assert _ids(wh) == sorted(expected)

    conn.write(b"902,open")
    conn.commit_transaction()
    expected += [900, 901, 902]
    for k in range(2):
        conn.begin_transaction()
        conn.write(f"{1000 + k},late".encode())
        conn.commit_transaction()
        expected.append(1000 + k)
    assert _ids(wh) == sorted(expected)
    conn.close()
    assert [f for f in verify_table(wh, "t") if not f.passed] == []

    (final,) = compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert _dirs(root) == [f"base_0000012_v{final.txn_id:07d}"]
    assert _ids(wh) == sorted(expected)
    assert [f for f in verify_table(wh, "t") if not f.passed] == []
