"""Compaction speed (issue 5) on TPC-DS store_sales, against pyarrow in the same run.

* major compaction of the table spread over 10 write ids (8 insert deltas, an update of 1% of
  the rows, a delete of 1%) against pyarrow reading the same input files and writing the same
  output rows (goal: within 1.3x);
* the same major compaction on the Spark executor (``SparkCompactionExecutor``, a local session;
  the bucket file is written by a Spark task's Python worker), timed warm (the first call, which
  starts Python workers, is reported apart); ``--no-spark`` skips it;
* minor compaction of the same 10 small deltas over a base of 10% and of 100% of the table
  (goal: the cost follows the deltas, not the table);
* a full scan after major compaction against pyarrow reading plain ORC with the same rows
  (goal: within 1.15x).

Medians of several runs; writes ``benchmarks/out/compaction.json`` and a Markdown section.

    python -m benchmarks.bench_compaction [--scale 1] [--runs 3] [--codec ZLIB] [--spark-cores 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po

from acid_platform.compaction import (
    RewriteRequest,
    RewriteResult,
    plan_rewrite,
    rewrite_partition,
)
from acid_platform.format import (
    EventWriter,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.format.writer import COMPRESSION, DEFAULT_COMPRESSION, DEFAULT_STRIPE_SIZE
from benchmarks.common import interleaved, local_spark, median_time, median_walls, raw_orc_limit
from benchmarks.data import store_sales

OUT = Path(__file__).resolve().parent / "out"
B0 = encode_bucket(0)
INSERT_DELTAS = 8
BUCKETS = 4


def paired_times(
    ours: Callable[[], Any], reference: Callable[[], Any], runs: int
) -> tuple[float, float]:
    """Median wall times of ``ours`` and ``reference`` over ``runs`` rounds (reference, ours,
    reference, ours …), so that both see the same machine load."""
    ref, mine = median_walls(interleaved({"reference": reference, "ours": ours}, runs))
    return mine, ref


def spark_session(cores: int) -> Any:
    """A local SparkSession for the Spark executor (started once, outside the timings)."""
    return local_spark("bench_compaction", cores)


def write_events(
    path: Path, rows: pa.Table, write_id: int, codec: str, bucket_property: int = B0
) -> None:
    write_acid_version_file(path.parent)
    with EventWriter(path, rows.schema, compression=codec) as w:
        first = 0
        for batch in rows.to_batches(max_chunksize=1 << 20):
            w.write(insert_events(batch, write_id, bucket_property, first_row_id=first))
            first += batch.num_rows


def write_deletes(
    path: Path, schema: pa.Schema, owid: Any, rowid: Any, write_id: int, codec: str
) -> None:
    write_acid_version_file(path.parent)
    with EventWriter(path, schema, compression=codec) as w:
        w.write(delete_events(owid, np.full(len(owid), B0), rowid, write_id, schema))


def add_changes(
    table: Path,
    rows: pa.Table,
    owids: np.ndarray,
    rowids: np.ndarray,
    first_write_id: int,
    fraction: float,
    codec: str,
    seed: int,
) -> int:
    """An update of ``fraction`` of the rows (delete_delta + delta) and a delete of as many."""
    rng = np.random.default_rng(seed)
    n = rows.num_rows
    picked = rng.choice(n, size=2 * int(n * fraction), replace=False)
    upd, dele = np.sort(picked[: len(picked) // 2]), np.sort(picked[len(picked) // 2 :])
    w = first_write_id
    write_deletes(
        table / delete_delta_dir_name(w, w, 0) / bucket_file_name(0),
        rows.schema,
        owids[upd],
        rowids[upd],
        w,
        codec,
    )
    new = rows.take(pa.array(upd))
    new = new.set_column(
        new.schema.get_field_index("ss_quantity"),
        "ss_quantity",
        pc.add(new.column("ss_quantity"), 1),
    )
    write_events(table / delta_dir_name(w, w, 0) / bucket_file_name(0), new, w, codec)
    w += 1
    write_deletes(
        table / delete_delta_dir_name(w, w, 0) / bucket_file_name(0),
        rows.schema,
        owids[dele],
        rowids[dele],
        w,
        codec,
    )
    return w


def write_bucketed_deltas(table: Path, rows: pa.Table, buckets: int, codec: str) -> int:
    """INSERT_DELTAS insert deltas of ``rows``, each row in bucket ``row % buckets`` (one file
    per bucket per delta); returns the high watermark."""
    per = -(-rows.num_rows // INSERT_DELTAS)
    for i in range(INSERT_DELTAS):
        part = rows.slice(i * per, per)
        for k in range(buckets):
            write_events(
                table / delta_dir_name(i + 1, i + 1, 0) / bucket_file_name(k),
                part.take(pa.array(np.arange(k, part.num_rows, buckets))),
                i + 1,
                codec,
                encode_bucket(k),
            )
    return INSERT_DELTAS


def compactor_ids(high_watermark: int) -> ValidCompactorWriteIdList:
    return ValidCompactorWriteIdList("bench.store_sales", high_watermark)


def run(
    scale: float, runs: int, codec: str, limit: int | None = None, spark_cores: int = 0
) -> dict[str, Any]:
    rows = store_sales(scale).combine_chunks()
    if limit is not None:
        rows = rows.slice(0, limit)
    n = rows.num_rows
    schema = rows.schema
    work = Path(tempfile.mkdtemp(prefix="acid-bench-compaction-"))
    fs = pafs.LocalFileSystem()
    results: dict[str, Any] = {"rows": n, "columns": rows.num_columns, "runs": runs, "codec": codec}
    txn = iter(range(1000, 10_000))

    def request(kind: str, path: Path, hwm: int, t: int) -> RewriteRequest:
        return RewriteRequest(
            kind,
            str(path),
            compactor_ids(hwm),
            ValidTxnList(t),
            t,
            schema,
            codec,
            DEFAULT_STRIPE_SIZE,
            fs,
        )

    try:
        # ------------------------------------------------------------ major: 10 write ids
        major = work / "major"
        per = -(-n // INSERT_DELTAS)
        owids, rowids = np.empty(n, np.int64), np.empty(n, np.int64)
        for i in range(INSERT_DELTAS):
            lo, hi = i * per, min(n, (i + 1) * per)
            write_events(
                major / delta_dir_name(i + 1, i + 1, 0) / bucket_file_name(0),
                rows.slice(lo, hi - lo),
                i + 1,
                codec,
            )
            owids[lo:hi], rowids[lo:hi] = i + 1, np.arange(hi - lo)
        hwm = add_changes(major, rows, owids, rowids, INSERT_DELTAS + 1, 0.01, codec, 7)
        inputs = sorted(major.glob("*/bucket_*"))
        input_bytes = sum(p.stat().st_size for p in inputs)
        outputs: list[RewriteResult] = []

        def compact_major() -> None:
            result = rewrite_partition(request("major", major, hwm, next(txn)))
            assert result is not None
            outputs.append(result)

        def drop_last_output() -> None:
            for d in outputs[-1].output_dirs:
                shutil.rmtree(d)

        compact_major()  # untimed: its output rows are what the reference writes
        base_dir = Path(outputs[-1].output_dirs[0])
        base_file = base_dir / bucket_file_name(0)
        out_events = po.read_table(base_file)
        scratch = work / "pyarrow_out.orc"

        def pyarrow_read_write() -> None:
            for p in inputs:
                po.ORCFile(str(p)).read()
            po.write_table(
                out_events, scratch, compression=COMPRESSION[codec], stripe_size=DEFAULT_STRIPE_SIZE
            )

        def compact_again() -> None:
            drop_last_output()
            compact_major()

        spark = spark_session(spark_cores) if spark_cores else None
        if spark is None:
            ours, ref = paired_times(compact_again, pyarrow_read_write, runs)  # last base stays
        else:
            from acid_platform.engines.spark import SparkCompactionExecutor

            on_spark = SparkCompactionExecutor(spark)

            def compact_on_spark() -> None:
                drop_last_output()
                result = on_spark.execute(plan_rewrite(request("major", major, hwm, next(txn))))
                outputs.append(result)

            first_call = median_time(compact_on_spark, 1)  # starts Spark's Python workers
            spark_out = po.read_table(Path(outputs[-1].output_dirs[0]) / bucket_file_name(0))
            assert spark_out.equals(out_events), "the Spark executor wrote other events"
            ref, ours, t_spark = median_walls(
                interleaved(
                    {"ref": pyarrow_read_write, "ours": compact_again, "spark": compact_on_spark},
                    runs,
                )
            )
            compact_again()  # the last base is the embedded one, as without Spark
            results["major_on_spark"] = {
                "master": spark.sparkContext.master,
                "tasks": len(outputs[-1].files),
                "compaction_s": t_spark,
                "first_call_s": first_call,
                "embedded_s": ours,
                "pyarrow_read_inputs_write_output_s": ref,
                "ratio_to_embedded": t_spark / ours,
                "ratio_to_pyarrow": t_spark / ref,
            }
            # ---------------------------------------------------- a partition of 4 bucket files
            bucketed = work / "major_4_buckets"
            bhwm = write_bucketed_deltas(bucketed, rows, BUCKETS, codec)
            made: list[RewriteResult] = []

            def drop_made() -> None:
                if made:
                    for d in made.pop().output_dirs:
                        shutil.rmtree(d)

            def embedded_buckets() -> None:
                drop_made()
                result = rewrite_partition(request("major", bucketed, bhwm, next(txn)))
                assert result is not None
                made.append(result)

            def embedded_one_thread() -> None:
                saved = os.environ.get("ACID_READ_THREADS")
                os.environ["ACID_READ_THREADS"] = "1"
                try:
                    embedded_buckets()
                finally:
                    if saved is None:
                        del os.environ["ACID_READ_THREADS"]
                    else:
                        os.environ["ACID_READ_THREADS"] = saved

            def spark_buckets() -> None:
                drop_made()
                made.append(
                    on_spark.execute(plan_rewrite(request("major", bucketed, bhwm, next(txn))))
                )

            t_one, t_all, t_sp = median_walls(
                interleaved(
                    {"one": embedded_one_thread, "all": embedded_buckets, "spark": spark_buckets},
                    runs,
                )
            )
            results["major_4_buckets"] = {
                "buckets": BUCKETS,
                "tasks": len(made[-1].files),
                "embedded_one_thread_s": t_one,
                "embedded_s": t_all,
                "spark_s": t_sp,
                "master": spark.sparkContext.master,
            }
            spark.stop()
        base_file = Path(outputs[-1].output_dirs[0]) / bucket_file_name(0)
        results["major"] = {
            "write_ids": hwm,
            "directories": len(list(major.glob("delta*"))) + len(list(major.glob("delete_delta*"))),
            "input_bytes": input_bytes,
            "output_rows": out_events.num_rows,
            "output_bytes": outputs[-1].output_bytes,
            "compaction_s": ours,
            "pyarrow_read_inputs_write_output_s": ref,
            "ratio": ours / ref,
        }

        # ------------------------------------------------------------ scan after major
        plain = work / "plain.orc"
        plain_rows = pa.Table.from_struct_array(out_events.column("row").combine_chunks())
        po.write_table(
            plain_rows, plain, compression=COMPRESSION[codec], stripe_size=DEFAULT_STRIPE_SIZE
        )
        t_final = outputs[-1].output_dirs[0].rsplit("_v", 1)[1]
        wids = ValidWriteIdList("bench.store_sales", hwm)
        txns = ValidTxnList(int(t_final))
        scanned = read_acid(major, wids, txns, schema=schema)
        assert scanned.num_rows == out_events.num_rows
        t_scan, t_plain = paired_times(
            lambda: read_acid(major, wids, txns, schema=schema), lambda: po.read_table(plain), runs
        )
        limit = raw_orc_limit(plain_rows, codec, runs)["wall_s"]
        results["scan_after_major"] = {
            "read_acid_s": t_scan,
            "pyarrow_plain_orc_s": t_plain,
            "ratio": t_scan / t_plain,
            "raw_orc_limit_s": limit,
            "ratio_to_limit": t_scan / limit,
        }

        # ------------------------------------------------------------ minor: small vs large table
        minor: dict[str, Any] = {}
        for label, base_rows in (("base_10pct", n // 10), ("base_100pct", out_events.num_rows)):
            table = work / f"minor_{label}"
            bdir = table / base_dir_name(hwm)
            bdir.mkdir(parents=True)
            if base_rows == out_events.num_rows:
                shutil.copy(base_file, bdir / bucket_file_name(0))  # the compacted base itself
            else:
                write_events(bdir / bucket_file_name(0), rows.slice(0, base_rows), hwm, codec)
            write_acid_version_file(bdir)
            w = hwm
            delta_rows = rows.slice(n - 100_000, 100_000)
            for i in range(INSERT_DELTAS):
                w += 1
                write_events(
                    table / delta_dir_name(w, w, 0) / bucket_file_name(0),
                    delta_rows.slice(i * 10_000, 10_000),
                    w,
                    codec,
                )
            base_keys_owid = np.full(base_rows, hwm, np.int64)
            base_keys_rowid = np.arange(base_rows, dtype=np.int64)
            sample = rows.slice(0, base_rows)
            last = add_changes(
                table, sample, base_keys_owid, base_keys_rowid, w + 1, 1_000 / base_rows, codec, 11
            )
            dirs = len(list(table.glob("delta_*"))) + len(list(table.glob("delete_delta_*")))
            made: list[RewriteResult] = []

            def compact_minor(
                table: Path = table, last: int = last, made: list[RewriteResult] = made
            ) -> None:
                result = rewrite_partition(request("minor", table, last, next(txn)))
                assert result is not None
                made.append(result)

            def drop(made: list[RewriteResult] = made) -> None:
                for d in made[-1].output_dirs:
                    shutil.rmtree(d)

            t_minor = median_time(compact_minor, runs, drop)
            minor[label] = {
                "base_rows": base_rows,
                "delta_dirs": dirs,
                "write_ids": last - hwm,
                "delta_rows": INSERT_DELTAS * 10_000,
                "compaction_s": t_minor,
                "input_bytes": made[-1].input_bytes,
            }
        minor["ratio_large_to_small"] = (
            minor["base_100pct"]["compaction_s"] / minor["base_10pct"]["compaction_s"]
        )
        results["minor"] = minor
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def markdown(r: dict[str, Any]) -> str:
    mj, sc, mn = r["major"], r["scan_after_major"], r["minor"]
    small, large = mn["base_10pct"], mn["base_100pct"]
    sp = r.get("major_on_spark")
    spark_rows = []
    mb = r.get("major_4_buckets")
    if mb is not None:
        spark_rows.append(
            f"| major compaction of the same rows in {mb['buckets']} bucket files ({INSERT_DELTAS} insert deltas): embedded, all read threads | {mb['embedded_s']:.2f} s | embedded on one thread {mb['embedded_one_thread_s']:.2f} s; Spark executor ({mb['master']}, {mb['tasks']} tasks) {mb['spark_s']:.2f} s | {mb['embedded_s'] / mb['embedded_one_thread_s']:.2f}x one thread; Spark {mb['spark_s'] / mb['embedded_s']:.2f}x embedded | |"
        )
    if sp is not None:
        spark_rows.append(
            f"| the same major compaction on the Spark executor ({sp['master']}, {sp['tasks']} bucket file = {sp['tasks']} task; first call {sp['first_call_s']:.1f} s) | {sp['compaction_s']:.2f} s | embedded {sp['embedded_s']:.2f} s; pyarrow {sp['pyarrow_read_inputs_write_output_s']:.2f} s | {sp['ratio_to_embedded']:.2f}x embedded, {sp['ratio_to_pyarrow']:.2f}x pyarrow | ≈ 1x embedded (one task: only Spark's overhead) |"
        )
    return (
        "\n".join(
            [
                f"## Compaction (issue 5) — store_sales, {r['rows']:,} rows × {r['columns']} columns, {r['codec']}, median of {r['runs']}",
                "",
                "| measure | acid_platform | reference | ratio | goal |",
                "|---|---|---|---|---|",
                f"| major compaction, {mj['write_ids']} write ids in {mj['directories']} deltas ({mj['input_bytes'] / 1e6:.0f} MB) -> base of {mj['output_rows']:,} rows | {mj['compaction_s']:.2f} s | pyarrow reads the same inputs and writes the same output rows {mj['pyarrow_read_inputs_write_output_s']:.2f} s | {mj['ratio']:.2f}x | ≤ 1.3x |",
                *spark_rows,
                f"| minor compaction of {small['delta_dirs']} deltas, {small['write_ids']} write ids ({small['delta_rows']:,} rows inserted, 1,000 updated, 1,000 deleted) over a base of {small['base_rows']:,} rows | {small['compaction_s']:.3f} s | | | |",
                f"| the same deltas over a base of {large['base_rows']:,} rows | {large['compaction_s']:.3f} s | 10x smaller base {small['compaction_s']:.3f} s | {mn['ratio_large_to_small']:.2f}x | ≈ 1x (cost follows the deltas) |",
                f"| full scan after major compaction | {sc['read_acid_s']:.2f} s | pyarrow.orc.read_table of plain ORC with the same rows {sc['pyarrow_plain_orc_s']:.2f} s | {sc['ratio']:.2f}x | ≤ 1.15x |",
                f"| the same scan against the raw-ORC limit (the rows as plain ORC, one file per read thread, read in parallel) | {sc['read_acid_s']:.2f} s | {sc['raw_orc_limit_s']:.2f} s | {sc['ratio_to_limit']:.2f}x | |",
            ]
        )
        + "\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codec", default=DEFAULT_COMPRESSION, choices=sorted(COMPRESSION))
    ap.add_argument(
        "--limit", type=int, default=None, help="use only the first N rows (smoke runs)"
    )
    ap.add_argument(
        "--spark-cores", type=int, default=2, help="cores of the local Spark session (executor row)"
    )
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark executor row")
    args = ap.parse_args()
    r = run(
        args.scale,
        args.runs,
        args.codec.upper(),
        args.limit,
        0 if args.no_spark else args.spark_cores,
    )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "compaction.json").write_text(json.dumps(r, indent=2))
    (OUT / "compaction.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
