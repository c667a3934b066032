"""Compaction on Spark executors gives what the embedded executor gives, written by executors.

Each scenario builds the same partitioned, bucketed table twice (same statements, so the same
txn and write ids), compacts one copy with the embedded executor and the other on Spark, and
compares directory names, the bytes of every output file, the rows with their ROW__IDs, and the
queue entries. Failures (a corrupt delta) must come back as the embedded path's typed error, with
nothing deleted and no output left visible.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.compaction import (
    CompactionOutcome,
    RewriteRequest,
    compact_table,
    execute_plan,
    plan_rewrite,
    run_cleaner,
    run_worker,
)
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.engines.spark import SparkCompactionExecutor, compaction_router
from acid_platform.engines.spark.compaction import (
    SparkRewriteResult,
    retryable,
)
from acid_platform.engines.spark.python_workers import worker_error
from acid_platform.errors import CompactionError
from acid_platform.format import ValidCompactorWriteIdList
from acid_platform.table import Table
from acid_platform.table.schema import data_schema

COLUMNS = [("id", "int"), ("v", "string"), ("n", "bigint")]
PARTS = [("p", "int")]
ALL_ON_SPARK = {"acid.compactor.large.partition.bytes": "0"}


def _open(root: Path) -> Warehouse:
    return Warehouse.open(root, conf={"acid.lock.wait.timeout.s": "10"})


def _rows(lo: int, hi: int, parts: int = 3) -> list[dict[str, Any]]:
    return [{"id": i, "v": f"v{i}", "n": i * 7, "p": i % parts} for i in range(lo, hi)]


def _build(wh: Warehouse) -> Table:
    """3 partitions x 2 buckets: 6 insert deltas, 2 updates and 2 deletes (delete deltas)."""
    t = wh.create_table("t", COLUMNS, partition_columns=PARTS, bucket_columns=["id"], num_buckets=2)
    for k in range(6):
        t.insert(_rows(k * 400, (k + 1) * 400))
    t.update({"v": "concat(v, '!')", "n": "n + 1"}, where="id % 5 = 0")
    t.delete("id % 11 = 0")
    t.update({"v": "'again'"}, where="id % 13 = 1")
    t.delete("id BETWEEN 100 AND 180")
    return t


def _more(t: Table) -> None:
    t.insert(_rows(5000, 5300))
    t.update({"n": "-n"}, where="id % 17 = 2")
    t.delete("id % 19 = 3")


def _scan(wh: Warehouse) -> list[tuple[Any, ...]]:
    rows = wh.table("t").scan(with_row_id=True).to_arrow().to_pylist()
    return sorted(
        (r["p"], r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"])
        + (r["id"], r["v"], r["n"])
        for r in rows
    )


def _files(wh: Warehouse) -> dict[str, bytes]:
    """Every file under the table, by path relative to the table, with its bytes."""
    root = Path(wh.table("t").spec.location)
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _states(wh: Warehouse) -> list[tuple[str | None, str, str]]:
    rows = wh.metastore.show_compactions()
    return sorted((r["Partition"], r["Type"], r["State"]) for r in rows)


@contextmanager
def _driver_steps() -> Iterator[list[str]]:
    """The compaction steps reached in this (the driver's) process."""
    steps: list[str] = []
    with on_checkpoint(steps.append):
        yield steps


def _by_partition(outcomes: list[CompactionOutcome]) -> dict[str | None, CompactionOutcome]:
    return {o.partition: o for o in outcomes}


# --------------------------------------------------------------------------- differential


@pytest.mark.slow
def test_minor_then_major_on_spark_match_the_embedded_executor(
    tmp_path: Path, spark: SparkSession
) -> None:
    emb, spk = _open(tmp_path / "emb"), _open(tmp_path / "spk")
    router = compaction_router(spark, ALL_ON_SPARK)
    try:
        t_emb, t_spk = _build(emb), _build(spk)
        assert _files(emb).keys() == _files(spk).keys()
        for kind in ("minor", "major"):
            if kind == "major":
                _more(t_emb)
                _more(t_spk)
            before = _scan(spk)
            assert before == _scan(emb)
            compact_table(emb, "t", kind=kind, wait=False)
            compact_table(spk, "t", kind=kind, wait=False)
            embedded = run_worker(emb)
            with _driver_steps() as steps:
                on_spark = run_worker(spk, executor=router)
            assert [o.executor for o in embedded] == ["embedded"] * 3
            assert [o.executor for o in on_spark] == ["spark"] * 3
            assert [o.state.value for o in on_spark] == ["ready for cleaning"] * 3
            # no bucket file was written in this process: only the driver's steps ran here
            assert "worker.dirs_created" in steps and "worker.bucket_written" not in steps

            # the same directories and bytes, the same rows with the same ROW__IDs
            assert _files(spk) == _files(emb)
            assert _scan(spk) == _scan(emb) == before
            for e, s in zip(embedded, on_spark, strict=True):
                assert isinstance(s.result, SparkRewriteResult) and e.result is not None
                assert s.message == e.message and s.highest_write_id == e.highest_write_id
                assert [f.path.replace(str(tmp_path / "spk"), "") for f in s.result.files] == [
                    f.path.replace(str(tmp_path / "emb"), "") for f in e.result.files
                ]
                assert s.result.rows_written == e.result.rows_written
                assert s.result.deletes_written == e.result.deletes_written
                assert s.result.output_bytes == e.result.output_bytes > 0

            assert _states(spk) == _states(emb)
            run_cleaner(emb)
            run_cleaner(spk)
            assert _files(spk) == _files(emb)
            assert _scan(spk) == _scan(emb) == before
        states = _states(spk)
        assert [s for _, _, s in states] == ["succeeded"] * 6
        assert sorted({k.lower() for _, k, _ in states}) == ["major", "minor"]
        for part in sorted(Path(t_spk.spec.location).iterdir()):  # one base per partition
            (only,) = os.listdir(part)
            assert only.startswith("base_") and "_v" in only
    finally:
        emb.close()
        spk.close()


def test_bucket_files_are_written_by_spark_python_workers(
    tmp_path: Path, spark: SparkSession
) -> None:
    wh = _open(tmp_path / "wh")
    try:
        _build(wh)
        compact_table(wh, "t", partition="p=1", kind="major", wait=False)
        (outcome,) = run_worker(wh, executor=SparkCompactionExecutor(spark))
        result = outcome.result
        assert isinstance(result, SparkRewriteResult) and outcome.executor == "spark"
        assert len(result.tasks) == 2 and len(result.files) == 2  # one task per bucket file
        assert sorted(task.partition_id for task in result.tasks) == [0, 1]
        assert all(task.pid != os.getpid() and task.pid > 0 for task in result.tasks)
        assert all(Path(f.path).stat().st_size == f.size for f in result.files)
    finally:
        wh.close()


def test_hive3_compatible_names_on_spark_are_staged_and_renamed(
    tmp_path: Path, spark: SparkSession
) -> None:
    """acid.compactor.hive3.compatible with the Spark executor: the executors write the hidden
    staging directory, the worker renames it to base_N (no _v) before the commit."""
    wh = _open(tmp_path / "wh")
    try:
        t = _build(wh)
        wh.set_conf("acid.compactor.hive3.compatible", "true")
        before = sorted(map(str, wh.table("t").scan(with_row_id=True).to_arrow().to_pylist()))
        compact_table(wh, "t", partition="p=1", kind="major", wait=False)
        (outcome,) = run_worker(wh, executor=SparkCompactionExecutor(spark))
        assert outcome.executor == "spark" and outcome.state.value == "ready for cleaning"
        run_cleaner(wh)
        part = Path(t.spec.location) / "p=1"
        (only,) = os.listdir(part)
        assert only.startswith("base_") and "_v" not in only
        assert (part / only / "_metadata_acid").exists()
        assert (
            sorted(map(str, wh.table("t").scan(with_row_id=True).to_arrow().to_pylist())) == before
        )
    finally:
        wh.close()


# --------------------------------------------------------------------------- failures


def _bad_stripe(path: Path) -> None:
    """The tail stays readable; the compressed stripe data does not."""
    data = path.read_bytes()
    lo, hi = len(data) * 3 // 10, len(data) // 2
    path.write_bytes(data[:lo] + bytes(255 - b for b in data[lo:hi]) + data[hi:])


def test_a_corrupt_delta_fails_the_spark_compaction_like_the_embedded_one(
    tmp_path: Path, spark: SparkSession
) -> None:
    errors = {}
    for label, executor in (("emb", None), ("spk", compaction_router(spark, ALL_ON_SPARK))):
        wh = _open(tmp_path / label)
        try:
            t = wh.create_table(
                "t", COLUMNS, partition_columns=PARTS, bucket_columns=["id"], num_buckets=2
            )
            t.insert(_rows(0, 6000, parts=2))
            t.insert(_rows(6000, 12000, parts=2))
            t.delete("id < 50")
            before_rows, before_files = _scan(wh), _files(wh)
            victim = Path(t.spec.location) / "p=1" / "delta_0000002_0000002_0000" / "bucket_00001"
            original = victim.read_bytes()
            _bad_stripe(victim)
            with pytest.raises(CompactionError, match=r"CorruptAcidFileError: .*bucket_00001"):
                compact_table(wh, "t", partition="p=1", kind="major", executor=executor)
            (row,) = wh.metastore.show_compactions()
            assert row["State"] == "failed"
            assert str(victim) in row["Error message"]
            errors[label] = row["Error message"].replace(str(tmp_path / label), "<root>")
            assert run_cleaner(wh).removed == ()
            victim.write_bytes(original)
            # nothing deleted, the failed output removed: the table is what it was
            assert _files(wh) == before_files
            assert _scan(wh) == before_rows
        finally:
            wh.close()
    assert errors["spk"] == errors["emb"]
    assert errors["spk"].startswith("CorruptAcidFileError: <root>/t/p=1/delta_0000002_0000002_0000")


def test_rerunning_a_plan_overwrites_what_an_earlier_attempt_left(
    tmp_path: Path, spark: SparkSession
) -> None:
    wh = _open(tmp_path / "wh")
    try:
        t = _build(wh)
        t.delete("p = 2")  # nothing survives in p=2: its tasks write no file
        ms = wh.metastore
        spec = t.spec
        txns = ms.valid_txns()
        ids = ValidCompactorWriteIdList.from_reader(
            ms.valid_write_ids(None, spec.db, spec.name, valid_txns=txns)
        )
        executor = SparkCompactionExecutor(spark)
        for partition, files in (("p=1", 2), ("p=2", 0)):
            path = str(Path(spec.location) / partition)
            request = RewriteRequest("major", path, ids, txns, 999, data_schema(spec))
            plan = plan_rewrite(request)
            assert len(plan.tasks) == 2
            first = executor.execute(plan)
            assert len(first.files) == files
            written = {f.path: Path(f.path).read_bytes() for f in first.files}
            for task in plan.tasks:  # a half-written file of an attempt that died
                Path(task.output).write_bytes(b"half an ORC file")
            again = executor.execute(plan)
            assert again.files == first.files
            assert {f.path: Path(f.path).read_bytes() for f in again.files} == written
            out = Path(plan.output_dirs[0])
            assert sorted(p.name for p in out.iterdir()) == sorted(
                ["_orc_acid_version"] + [Path(f.path).name for f in first.files]
            )
            for f in first.files:  # and the embedded executor writes the same bytes
                os.remove(f.path)
            assert execute_plan(plan).files == first.files
            assert {f.path: Path(f.path).read_bytes() for f in first.files} == written
    finally:
        wh.close()


# --------------------------------------------------------------------------- routing


def _partition_bytes(t: Table, partition: str) -> int:
    return sum(p.stat().st_size for p in (Path(t.spec.location) / partition).rglob("bucket_*"))


def test_the_router_sends_only_partitions_above_the_threshold_to_spark(
    tmp_path: Path, spark: SparkSession
) -> None:
    wh = _open(tmp_path / "wh")
    try:
        t = wh.create_table("t", COLUMNS, partition_columns=PARTS)
        for k in range(3):  # p=0 big, p=1 small
            t.insert(
                [*_rows(k * 3000, (k + 1) * 3000, parts=1), {"id": k, "v": "s", "n": 0, "p": 1}]
            )
        small = _partition_bytes(t, "p=1")
        assert small < _partition_bytes(t, "p=0")
        before = _scan(wh)

        compact_table(wh, "t", kind="major", wait=False)
        router = compaction_router(spark, {"acid.compactor.large.partition.bytes": str(small)})
        outcomes = _by_partition(run_worker(wh, executor=router))
        assert outcomes["p=0"].executor == "spark"
        assert isinstance(outcomes["p=0"].result, SparkRewriteResult)
        assert outcomes["p=1"].executor == "embedded"
        assert not isinstance(outcomes["p=1"].result, SparkRewriteResult)
        assert _scan(wh) == before

        t.insert(_rows(20_000, 20_010, parts=2))
        compact_table(wh, "t", kind="major", wait=False)
        above_all = compaction_router(spark, threshold_bytes=1 << 40)
        assert {o.executor for o in run_worker(wh, executor=above_all)} == {"embedded"}
    finally:
        wh.close()


def test_alter_table_compact_uses_the_registered_spark_session_above_the_threshold(
    wh: Warehouse,
) -> None:
    t = wh.create_table("t", COLUMNS, partition_columns=PARTS)
    t.insert(_rows(0, 300))
    t.insert(_rows(300, 600))
    t.delete("id % 7 = 0")
    before = _scan(wh)
    runs: list[Callable[[], Any]] = [
        lambda: wh.sql("ALTER TABLE t PARTITION (p=0) COMPACT 'major' AND WAIT"),  # 1 GiB
        lambda: wh.sql(
            "SET acid.compactor.large.partition.bytes=0;"
            "ALTER TABLE t PARTITION (p=1) COMPACT 'major' AND WAIT"
        ),
    ]
    seen = []
    for run in runs:
        with _driver_steps() as steps:
            run()
        seen.append("worker.bucket_written" in steps)
    assert seen == [True, False]  # p=0 written here (embedded), p=1 by Spark tasks
    assert [r["State"] for r in wh.metastore.show_compactions()] == ["ready for cleaning"] * 2
    assert _scan(wh) == before


def test_acid_worker_with_a_spark_master_compacts_large_partitions_on_spark(
    tmp_path: Path, spark: SparkSession
) -> None:
    root = tmp_path / "wh"
    wh = _open(root)
    try:
        t = wh.create_table("t", COLUMNS, partition_columns=PARTS)
        t.insert(_rows(0, 300))
        t.insert(_rows(300, 600))
        before = _scan(wh)
        compact_table(wh, "t", partition="p=1", kind="major", wait=False)
    finally:
        wh.close()
    # in this process the builder hands back the running session; the command must not stop it
    args = ["worker", "-w", str(root), "--spark-master", "local[2]", "--large-partition-bytes", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "OK 1 compaction(s)" in result.stderr
    assert "default.t/p=1 major: ready for cleaning on spark" in result.stderr
    assert spark.range(3).count() == 3
    wh = _open(root)
    try:
        assert _scan(wh) == before
    finally:
        wh.close()


def test_a_failed_spark_job_reports_the_python_error_of_the_task(spark: SparkSession) -> None:
    """I/O errors are left to Spark's task retries; when the job fails anyway, the compaction
    error quotes the task's Python error, not the JVM's stack trace."""

    def _lose_the_disk(batches: Iterator[Any]) -> Iterator[Any]:  # shipped by value
        for _ in batches:
            raise OSError(
                "Input/output error reading /wh/t/delta_0000001_0000001_0000/bucket_00000"
            )
        yield from ()

    with pytest.raises(Exception) as failed:  # noqa: B017 - whatever PySpark raises
        spark.range(1).mapInArrow(_lose_the_disk, "id long").collect()
    assert retryable(OSError("Input/output error"))
    assert not retryable(FileNotFoundError("gone"))
    assert not retryable(CompactionError("bad data"))
    assert worker_error(failed.value).summary == (
        "OSError: Input/output error reading /wh/t/delta_0000001_0000001_0000/bucket_00000"
    )
