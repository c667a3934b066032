"""Compaction never stands in a writer's way: inserts, updates and deletes on the same partition
commit while it runs, before and after its commit, and no row is lost or comes back."""

from __future__ import annotations

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform_tests.helpers import acid_dirs, warehouse_fixture
from acid_platform_tests.store_path import StorePath

from .conftest import BACKENDS, KV, table_rows

#: Writers during a compaction on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=[*BACKENDS, "s3"])


def _by_key(wh: Warehouse) -> dict[int, tuple[str, tuple[int, int, int]]]:
    return {r[3]: (r[4], r[:3]) for r in table_rows(wh, "t")}


@pytest.mark.parametrize(
    ("wh", "kind"),
    [
        *[(backend, kind) for backend in BACKENDS for kind in ("major", "minor")],
        pytest.param("s3", "major", marks=pytest.mark.slow),  # one of the two is enough on S3
    ],
    indirect=["wh"],
)
def test_writers_commit_while_a_compaction_runs(wh: Warehouse, kind: str) -> None:
    t = wh.create_table("t", KV)
    t.insert([{"k": k, "v": f"v{k}"} for k in range(10)])  # write 1
    t.insert([{"k": k, "v": f"v{k}"} for k in range(10, 20)])  # write 2
    t.update({"v": "'u'"}, where="k < 5")  # write 3
    t.delete("k in (15, 16)")  # write 4
    oracle = {k: ("u" if k < 5 else f"v{k}") for k in range(20) if k not in (15, 16)}
    ids_before = {k: rid for k, (_, rid) in _by_key(wh).items()}
    other = Warehouse.open(wh.root, wh.metastore.url, conf={"acid.lock.wait.timeout.s": "10"})
    late = Warehouse.open(wh.root, wh.metastore.url, conf={"acid.lock.wait.timeout.s": "10"})
    steps: list[str] = []

    def writers(step: str) -> None:
        if step == "worker.planned":  # the compactor's snapshot is taken (write ids <= 4)
            t.insert([{"k": k, "v": f"n{k}"} for k in range(100, 105)])  # write 5
            t.delete("k = 0")  # write 6: deletes a row the compaction is rewriting
            oracle.update({k: f"n{k}" for k in range(100, 105)})
            del oracle[0]
            other.transaction()
            other.table("t").update({"v": "'A'"}, where="k = 7")  # write 7, open for now
            steps.append(step)
        elif step == "worker.files_written":  # output written, compactor txn still open
            other.commit()
            oracle[7] = "A"
            t.update({"v": "'mid'"}, where="k = 12")  # write 8
            oracle[12] = "mid"
            late.transaction()  # opens before the compactor commits, commits after it
            late.table("t").delete("k = 1")  # write 9
            steps.append(step)

    with on_checkpoint(writers):
        (info,) = compact_table(wh, "t", kind=kind)
    assert steps == ["worker.planned", "worker.files_written"]
    assert info.highest_write_id == 4
    late.commit()
    del oracle[1]
    assert {k: v for k, (v, _) in _by_key(wh).items()} == oracle
    run_cleaner(wh)
    got = _by_key(wh)
    assert {k: v for k, (v, _) in got.items()} == oracle
    untouched = [k for k in oracle if k in ids_before and k not in (7, 12)]
    assert all(got[k][1] == ids_before[k] for k in untouched)  # ROW__IDs kept
    d = StorePath(t.spec.location)
    v = f"_v{info.txn_id:07d}"
    expected = (
        [f"base_0000004{v}"]
        if kind == "major"
        else [f"delete_delta_0000001_0000004{v}", f"delta_0000001_0000004{v}"]
    )
    assert [n for n in acid_dirs(d) if n.endswith(v)] == expected
    assert not [n for n in acid_dirs(d) if n.startswith(("delta_0000001_0000001", "base_0000001"))]
    other.close()
    late.close()
