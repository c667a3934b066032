"""Reading a table with many delete events (issue 14 item 10): the delete set held in memory
against the sort-merge over delete events read in key order (above ``hive.transactional.events.mem``).

One bucket: ``--rows`` rows in one insert delta, every other row deleted by ``--deletes`` delete
events spread over two delete deltas. Each read runs in its own process, so its peak RSS is its
own; the figures are medians over ``--runs``. Writes ``benchmarks/out/deletes.json`` and a
Markdown section for the report.

    python -m benchmarks.bench_deletes [--rows 20000000] [--deletes 10000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from acid_platform.format import (
    EventWriter,
    ValidWriteIdList,
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

OUT = Path(__file__).resolve().parent / "out"
B0 = encode_bucket(0)
SCHEMA = pa.schema([("k", pa.int64())])
CHUNK = 1_000_000
ALL = 9223372036854775807


def build(root: Path, rows: int, deletes: int, stripe_mb: int = 64) -> None:
    """delta_1 with ``rows`` rows (random ``k``: stripes of Hive's default 64 MB hold millions
    of rows, not the whole file); delete_delta_2 and _3 deleting ``deletes`` of them."""
    d = root / delta_dir_name(1, 1, 0)
    write_acid_version_file(d)
    rng = np.random.default_rng(14)
    with EventWriter(d / bucket_file_name(0), SCHEMA, stripe_size=stripe_mb << 20) as w:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            values = rng.integers(0, 1 << 62, n, dtype=np.int64)
            w.write(insert_events(pa.table({"k": values}), 1, B0, first_row_id=start))
    step = rows // deletes
    victims = np.arange(0, deletes, dtype=np.int64) * step
    for write_id, part in ((2, victims[0::2]), (3, victims[1::2])):
        d = root / delete_delta_dir_name(write_id, write_id, 0)
        write_acid_version_file(d)
        with EventWriter(d / bucket_file_name(0), SCHEMA) as w:
            for start in range(0, len(part), CHUNK):
                ids = part[start : start + CHUNK]
                n = len(ids)
                w.write(delete_events(np.ones(n), np.full(n, B0), ids, write_id, SCHEMA))


def read_once(root: str, cap: int) -> dict[str, float]:
    """One read (in this process): wall seconds, peak RSS, what the reader held for deletes."""
    stats = ReadStats()
    t0 = time.perf_counter()
    table = read_acid(
        root,
        ValidWriteIdList.parse(f"db.t:3:{ALL}::"),
        columns=["k"],
        stats=stats,
        delete_events_cap=cap,
    )
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "stripes": stats.stripes_read,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "delete_bytes_mb": stats.delete_set_bytes / 2**20,
        "rows": table.num_rows,
        "sort_merges": stats.delete_sort_merges,
    }


def measure(root: Path, cap: int, runs: int) -> dict[str, float]:
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_deletes", "--read", str(root), str(cap)],
            check=True,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--deletes", type=int, default=10_000_000)
    parser.add_argument("--cap", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stripe-mb", type=int, default=64, help="the data file's stripe size")
    parser.add_argument("--read", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        print(json.dumps(read_once(args.read[0], int(args.read[1]))))
        return
    root = Path(tempfile.mkdtemp(prefix="bench_deletes_"))
    try:
        build(root, args.rows, args.deletes, args.stripe_mb)
        held = measure(root, -1, args.runs)
        merged = measure(root, args.cap, args.runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert held["rows"] == merged["rows"] == args.rows - args.deletes
    result = {
        "rows": args.rows,
        "deletes": args.deletes,
        "cap": args.cap,
        "held": held,
        "merged": merged,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"deletes_{args.stripe_mb}mb.json").write_text(json.dumps(result, indent=2))
    text = f"""## Delete events above the cap (issue 14 item 10), {time.strftime("%Y-%m-%d")}

One bucket: {args.rows:,} rows in one insert delta ({held["stripes"]:.0f} stripes of
{args.stripe_mb} MB), {args.deletes:,}
delete events in two delete deltas (every other row deleted); `read_acid` of column `k`, each
read in its own process (median of {args.runs}). "Held" is what the reader kept for the delete
events at its peak (`ReadStats.delete_set_bytes`); peak RSS includes the data stripe being read
and the {args.rows - args.deletes:,}-row result.

| path | wall s | peak RSS MB | delete events held, MB |
|---|---|---|---|
| in memory (no cap) | {held["wall_s"]:.2f} | {held["peak_rss_mb"]:.0f} | {held["delete_bytes_mb"]:.1f} |
| sort-merge (cap {args.cap:,}) | {merged["wall_s"]:.2f} | {merged["peak_rss_mb"]:.0f} | {merged["delete_bytes_mb"]:.1f} |

Sort-merge / in memory: {merged["wall_s"] / held["wall_s"]:.2f}x wall.
"""
    (OUT / f"deletes_{args.stripe_mb}mb.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
