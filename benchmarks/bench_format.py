"""Storage-core speed (issue 2) on TPC-DS store_sales, against pyarrow (the raw-ORC limit) and
delta-rs in the same run. Medians of several runs. Writes ``benchmarks/out/format.json`` and a
Markdown section for the report.

    python -m benchmarks.bench_format [--scale 1] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po

from acid_platform.format import (
    EventWriter,
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
from acid_platform.format.merge_on_read import ReadStats
from acid_platform.format.writer import COMPRESSION, DEFAULT_COMPRESSION
from benchmarks.common import median_time
from benchmarks.data import store_sales

OUT = Path(__file__).resolve().parent / "out"
B0 = encode_bucket(0)
ALL = 9223372036854775807
CODEC = DEFAULT_COMPRESSION  # Hive's default orc.compress


def write_events(
    path: Path, rows: pa.Table, write_id: int, codec: str = CODEC, first_row_id: int = 0
) -> None:
    write_acid_version_file(path.parent)
    with EventWriter(path, rows.schema, compression=codec) as w:
        for batch in rows.to_batches(max_chunksize=1 << 20):
            w.write(insert_events(batch, write_id, B0, first_row_id=first_row_id))
            first_row_id += batch.num_rows


def run(scale: float, runs: int) -> dict[str, Any]:
    rows = store_sales(scale).combine_chunks()
    n = rows.num_rows
    work = Path(tempfile.mkdtemp(prefix="acid-bench-"))
    results: dict[str, Any] = {"rows": n, "columns": rows.num_columns, "runs": runs, "codec": CODEC}
    try:
        # ---------------------------------------------------------------- writing insert events
        for codec in (CODEC, "SNAPPY"):
            target = work / "w" / "bucket_00000"
            target.unlink(missing_ok=True)
            ours = median_time(
                lambda c=codec, p=target: write_events(p, rows, 1, c),
                runs,
                reset=target.unlink,  # the writer never replaces a file
            )
            plain = median_time(
                lambda c=codec: po.write_table(
                    rows, work / "plain.orc", compression=COMPRESSION[c], stripe_size=64 << 20
                ),
                runs,
            )
            events = insert_events(rows, 1, B0)
            raw_events = median_time(
                lambda c=codec, ev=events: po.write_table(
                    ev, work / "events.orc", compression=COMPRESSION[c], stripe_size=64 << 20
                ),
                runs,
            )
            results[f"write_{codec.lower()}"] = {
                "acid_event_writer_s": ours,
                "pyarrow_plain_rows_s": plain,
                "pyarrow_event_table_s": raw_events,
                "ratio_vs_plain_rows": ours / plain,
                "ratio_vs_event_table": ours / raw_events,
            }

        # ---------------------------------------------------------------- reading a compacted base
        table = work / "base_table"
        base_file = table / base_dir_name(1) / bucket_file_name(0)
        write_events(base_file, rows, 1)
        po.write_table(rows, work / "plain.orc", compression="zlib", stripe_size=64 << 20)
        wids = ValidWriteIdList.parse(f"db.t:1:{ALL}::")
        acid = median_time(lambda: read_acid(table, wids, schema=rows.schema), runs)
        raw_same = median_time(lambda: po.read_table(base_file), runs)
        raw_same_row = median_time(lambda: po.ORCFile(base_file).read(columns=["row"]), runs)
        raw_plain = median_time(lambda: po.read_table(work / "plain.orc"), runs)
        one_col = median_time(
            lambda: read_acid(table, wids, columns=["ss_net_paid"], schema=rows.schema), runs
        )
        raw_one_col = median_time(
            lambda: po.ORCFile(base_file).read(columns=["row.ss_net_paid"]), runs
        )
        results["read_base"] = {
            "read_acid_s": acid,
            "pyarrow_same_file_all_columns_s": raw_same,
            "pyarrow_same_file_row_struct_s": raw_same_row,
            "pyarrow_plain_orc_s": raw_plain,
            "ratio_vs_same_file": acid / raw_same,
            "ratio_vs_plain_orc": acid / raw_plain,
            "read_acid_one_column_s": one_col,
            "pyarrow_one_column_s": raw_one_col,
        }

        # ---------------------------------------------------------------- 10 deltas + 3% deletes
        merged = work / "merged_table"
        base_rows = int(n * 0.7)
        write_events(merged / base_dir_name(1) / bucket_file_name(0), rows.slice(0, base_rows), 1)
        per_delta = (n - base_rows) // 10
        starts = [base_rows + i * per_delta for i in range(10)]
        for i, s in enumerate(starts):
            length = per_delta if i < 9 else n - s
            w = i + 2
            write_events(
                merged / delta_dir_name(w, w, 0) / bucket_file_name(0), rows.slice(s, length), w
            )
        rng = np.random.default_rng(42)
        victims = np.sort(rng.choice(n, size=int(n * 0.03), replace=False))
        owid = np.where(
            victims < base_rows, 1, 2 + np.minimum((victims - base_rows) // per_delta, 9)
        )
        rowid = np.where(
            victims < base_rows, victims, victims - np.array(starts)[np.clip(owid - 2, 0, 9)]
        )
        for k, chunk in enumerate(np.array_split(np.arange(len(victims)), 10)):
            w = 12 + k
            d = merged / delete_delta_dir_name(w, w, 0)
            write_acid_version_file(d)
            with EventWriter(d / bucket_file_name(0), rows.schema) as ew:
                ew.write(
                    delete_events(
                        owid[chunk], np.full(len(chunk), B0), rowid[chunk], w, rows.schema
                    )
                )
        wids_m = ValidWriteIdList.parse(f"db.t:21:{ALL}::")
        stats = ReadStats()
        merged_table = read_acid(merged, wids_m, schema=rows.schema, stats=stats)
        assert merged_table.num_rows == n - len(victims)
        # the compacted equivalent: one base holding the surviving rows
        compacted = work / "compacted_table"
        keep = np.ones(n, bool)
        keep[victims] = False
        write_events(
            compacted / base_dir_name(21) / bucket_file_name(0), rows.filter(pa.array(keep)), 21
        )
        wids_c = ValidWriteIdList.parse(f"db.t:21:{ALL}::")
        t_merged = median_time(lambda: read_acid(merged, wids_m, schema=rows.schema), runs)
        t_compacted = median_time(lambda: read_acid(compacted, wids_c, schema=rows.schema), runs)
        results["read_deltas"] = {
            "deltas": 10,
            "delete_deltas": 10,
            "deleted_rows": len(victims),
            "read_acid_merged_s": t_merged,
            "read_acid_compacted_s": t_compacted,
            "ratio": t_merged / t_compacted,
            "delete_set_bytes": stats.delete_set_bytes,
            "delete_set_bytes_per_event": stats.delete_set_bytes / max(stats.delete_events, 1),
        }

        # ---------------------------------------------------------------- peer: delta-rs
        try:
            import deltalake

            dpath = str(work / "delta")
            deltalake.write_deltalake(dpath, rows)
            dt = deltalake.DeltaTable(dpath)
            results["peer_deltalake"] = {
                "version": deltalake.__version__,
                "full_scan_s": median_time(lambda: dt.to_pyarrow_table(), runs),
                "one_column_s": median_time(
                    lambda: dt.to_pyarrow_table(columns=["ss_net_paid"]), runs
                ),
            }
        except ImportError:
            results["peer_deltalake"] = {
                "skipped": "deltalake not installed (pip install '.[bench]')"
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def markdown(r: dict[str, Any]) -> str:
    wz, ws = r[f"write_{CODEC.lower()}"], r["write_snappy"]
    rb, rd = r["read_base"], r["read_deltas"]
    peer = r.get("peer_deltalake", {})
    lines = [
        f"## Storage core (issue 2) — store_sales, {r['rows']:,} rows × {r['columns']} columns, median of {r['runs']}",
        "",
        "| measure | acid_platform | reference | ratio | goal |",
        "|---|---|---|---|---|",
        f"| write insert events, {CODEC} | {wz['acid_event_writer_s']:.2f} s | pyarrow, same event table {wz['pyarrow_event_table_s']:.2f} s (plain rows {wz['pyarrow_plain_rows_s']:.2f} s) | {wz['ratio_vs_event_table']:.2f}x ({wz['ratio_vs_plain_rows']:.2f}x) | ≤ 1.3x |",
        f"| write insert events, SNAPPY | {ws['acid_event_writer_s']:.2f} s | pyarrow, same event table {ws['pyarrow_event_table_s']:.2f} s (plain rows {ws['pyarrow_plain_rows_s']:.2f} s) | {ws['ratio_vs_event_table']:.2f}x ({ws['ratio_vs_plain_rows']:.2f}x) | ≤ 1.3x |",
        f"| read compacted base, all columns | {rb['read_acid_s']:.2f} s | pyarrow same file {rb['pyarrow_same_file_all_columns_s']:.2f} s; plain ORC {rb['pyarrow_plain_orc_s']:.2f} s | {rb['ratio_vs_same_file']:.2f}x ({rb['ratio_vs_plain_orc']:.2f}x vs plain) | ≤ 1.15x |",
        f"| read compacted base, one column | {rb['read_acid_one_column_s']:.3f} s | pyarrow same file {rb['pyarrow_one_column_s']:.3f} s | {rb['read_acid_one_column_s'] / rb['pyarrow_one_column_s']:.2f}x | |",
        f"| read 10 deltas + 10 delete deltas (3% deleted) | {rd['read_acid_merged_s']:.2f} s | compacted equivalent {rd['read_acid_compacted_s']:.2f} s | {rd['ratio']:.2f}x | ≤ 1.5x |",
        f"| delete set memory | {rd['delete_set_bytes_per_event']:.1f} B/event ({rd['deleted_rows']:,} events) | | | ≤ 24 B |",
    ]
    if "full_scan_s" in peer:
        lines.append(
            f"| peer: delta-rs {peer['version']} scan of the same rows | | full {peer['full_scan_s']:.2f} s, one column {peer['one_column_s']:.3f} s | | |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    r = run(args.scale, args.runs)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "format.json").write_text(json.dumps(r, indent=2))
    (OUT / "format.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
