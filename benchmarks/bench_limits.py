"""Issue 15: each goal beside its physical limit, measured on the same rows in the same run.

* (a) merge-on-read: a read of a base + 10 deltas + 10 delete deltas (3% deleted) against the
  compacted read of the same surviving rows, for a wide table (store_sales, our writer) and a
  narrow one (2M rows x 5 columns, written by an outside ORC writer: pyorc, ORC C++'s own
  writer, with the footer metadata Hive writes);
* (b) the scan after 10 MERGEs against the raw-ORC limit of the same rows (plain ORC files of
  the same codec and stripe size, one per read thread, read in parallel), per codec;
* (c) UPDATE / DELETE / MERGE on store_sales against their own physical limit: what must be
  decoded, at the parallel raw-ORC speed, plus what must be written, at the writer's speed
  (see :func:`dml_limits`), with delta-rs and pyiceberg beside;
* (d) delete-set bytes per event (from the reads of (a));
* (e) multi-process metastore throughput, open+commit with 8 clients, on PostgreSQL and SQLite,
  with the database round trips one open and one commit take.

Medians of ``--runs`` runs. ``--quick`` checks the whole path in about a minute (a tenth of
store_sales, one run). Writes ``benchmarks/out/limits.json`` and the Markdown section
``benchmarks/out/limits.md`` (the "Limits" section of the report).

    python -m benchmarks.bench_limits [--quick] [--runs 3] [--codecs ZLIB,SNAPPY,ZSTD]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
from acid_platform.format.parallel import read_threads, run_parallel
from acid_platform.format.writer import COMPRESSION, DEFAULT_STRIPE_SIZE
from benchmarks import bench_dml as dml
from benchmarks.common import interleaved, median_ratio, median_time, median_timing, timed
from benchmarks.data import store_sales

OUT = Path(__file__).resolve().parent / "out"
B0 = encode_bucket(0)
ALL = 9223372036854775807
DELTAS = 10
DELETED = 0.03
NARROW_ROWS = 2_000_000
NARROW_COLUMNS = ("ss_item_sk", "ss_ticket_number", "ss_quantity", "ss_store_sk", "ss_net_paid")
GOALS = {"read": 1.3, "scan": 1.2, "dml": 1.15, "bytes_per_event": 8.0}
METASTORE_GOALS = {"postgresql": 1000, "sqlite": 300}


# --------------------------------------------------------------------------- raw ORC


class RawOrc:
    """The rows as plain (flat, non-ACID) ORC files with one codec and our stripe size, one file
    per read thread: the fastest any ORC table of these rows can be decoded here."""

    def __init__(self, work: Path, rows: pa.Table, codec: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"raw-{codec.lower()}-", dir=work))
        n = read_threads()
        step = -(-rows.num_rows // n)
        self.paths = []
        for i in range(n):
            path = self.dir / f"part-{i}.orc"
            po.write_table(
                rows.slice(i * step, step),
                path,
                compression=COMPRESSION[codec],
                stripe_size=DEFAULT_STRIPE_SIZE,
            )
            self.paths.append(path)

    def decode(self, runs: int, columns: Sequence[str] | None = None) -> float:
        """Median wall time of decoding ``columns`` (default all) of every file in parallel."""
        cols = list(columns) if columns is not None else None
        tasks = [lambda p=p: po.ORCFile(p).read(columns=cols) for p in self.paths]
        return timed(lambda _: run_parallel(tasks), runs, lambda: None).wall_s

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def own_files_decode(root: Path, runs: int, columns: Sequence[str] | None = None) -> float:
    """Median wall time of pyarrow decoding the table's own ORC files under ``root`` in
    parallel, largest first, with no merge-on-read: every data file's ``row`` (or only
    ``columns`` of it), every delete delta whole. What the ACID layout costs pyarrow before
    any of our work (the ``row`` struct, the deleted rows, the key columns of delete deltas);
    ours ÷ this is our own overhead."""
    files = sorted(root.rglob("bucket_*"), key=lambda p: -p.stat().st_size)
    cols = [f"row.{c}" for c in columns] if columns is not None else ["row"]
    tasks = [
        lambda p=p: po.ORCFile(p).read(
            columns=None if p.parent.name.startswith("delete_delta_") else cols
        )
        for p in files
    ]
    return timed(lambda _: run_parallel(tasks), runs, lambda: None).wall_s


def write_time(table: pa.Table, codec: str, work: Path, runs: int) -> float:
    """Median wall time of pyarrow's ORC writer writing ``table`` (the writer's speed)."""
    path = work / "write-limit.orc"
    t = median_time(
        lambda: po.write_table(
            table, path, compression=COMPRESSION[codec], stripe_size=DEFAULT_STRIPE_SIZE
        ),
        runs,
    )
    path.unlink(missing_ok=True)
    return t


# --------------------------------------------------------------------------- (a) deltas


FileWriter = Callable[[Path, pa.Table, str], None]


def ours_writer(path: Path, events: pa.Table, codec: str) -> None:
    """Our event writer (pyarrow + the footer metadata Hive writes)."""
    write_acid_version_file(path.parent)
    schema = pa.schema(list(events.schema.field("row").type))
    with EventWriter(path, schema, compression=codec) as w:
        w.write(events)


def pyorc_writer(path: Path, events: pa.Table, codec: str) -> None:
    """An outside writer: pyorc (ORC C++'s writer, row by row), with the footer metadata Hive's
    writer puts there (``hive.acid.version``, ``hive.acid.key.index``, ``hive.acid.stats``)."""
    import pyorc

    write_acid_version_file(path.parent)
    row_type = events.schema.field("row").type
    cols = ",".join(f"{f.name}:{_orc_type(f.type)}" for f in row_type)
    schema = pyorc.TypeDescription.from_string(
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        f"currentTransaction:bigint,row:struct<{cols}>>"
    )
    d = events.to_pydict()
    rows = d["row"]
    records = zip(
        d["operation"],
        d["originalTransaction"],
        d["bucket"],
        d["rowId"],
        d["currentTransaction"],
        (None if r is None else tuple(r.values()) for r in rows),
        strict=True,
    )
    n = events.num_rows
    last = (d["originalTransaction"][-1], d["bucket"][-1], d["rowId"][-1])
    ops = d["operation"]
    kind = getattr(pyorc.CompressionKind, codec.upper())
    inserts, deletes = ops.count(0), ops.count(2)
    with (
        open(path, "wb") as out,
        pyorc.Writer(out, schema, compression=kind, stripe_size=DEFAULT_STRIPE_SIZE) as w,
    ):
        w.writerows(records)
        w.set_user_metadata(
            **{
                "hive.acid.version": b"2",
                "hive.acid.key.index": f"{last[0]},{last[1]},{last[2]};".encode(),
                "hive.acid.stats": f"{inserts},{n - inserts - deletes},{deletes}".encode(),
            }
        )
    if po.ORCFile(path).nstripes != 1:  # the key index above names one stripe's last key
        raise RuntimeError(f"{path}: expected one stripe")


def _orc_type(dtype: pa.DataType) -> str:
    if pa.types.is_int64(dtype):
        return "bigint"
    if pa.types.is_int32(dtype):
        return "int"
    if pa.types.is_float64(dtype):
        return "double"
    raise TypeError(dtype)


def deltas_tables(
    work: Path, rows: pa.Table, codec: str, writer: FileWriter
) -> tuple[Path, Path, ValidWriteIdList, int]:
    """A table directory with a base (70% of ``rows``), 10 insert deltas (the rest) and 10 delete
    deltas (3% of all rows, random), and its compacted equivalent (one base of the survivors)."""
    n = rows.num_rows
    merged = work / "merged"
    base_rows = int(n * 0.7)
    per = (n - base_rows) // DELTAS
    starts = [base_rows + i * per for i in range(DELTAS)]
    writer(
        merged / base_dir_name(1) / bucket_file_name(0),
        insert_events(rows.slice(0, base_rows), 1, B0),
        codec,
    )
    for i, s in enumerate(starts):
        w = i + 2
        length = per if i < DELTAS - 1 else n - s
        writer(
            merged / delta_dir_name(w, w, 0) / bucket_file_name(0),
            insert_events(rows.slice(s, length), w, B0),
            codec,
        )
    rng = np.random.default_rng(15)
    victims = np.sort(rng.choice(n, size=int(n * DELETED), replace=False))
    owid = np.where(victims < base_rows, 1, 2 + np.minimum((victims - base_rows) // per, 9))
    rowid = np.where(
        victims < base_rows, victims, victims - np.array(starts)[np.clip(owid - 2, 0, 9)]
    )
    for k, chunk in enumerate(np.array_split(np.arange(len(victims)), DELTAS)):
        w = 2 + DELTAS + k
        events = delete_events(owid[chunk], np.full(len(chunk), B0), rowid[chunk], w, rows.schema)
        writer(merged / delete_delta_dir_name(w, w, 0) / bucket_file_name(0), events, codec)
    top = 1 + 2 * DELTAS
    keep = np.ones(n, bool)
    keep[victims] = False
    compacted = work / "compacted"
    writer(
        compacted / base_dir_name(top) / bucket_file_name(0),
        insert_events(rows.filter(pa.array(keep)), top, B0),
        codec,
    )
    return merged, compacted, ValidWriteIdList.parse(f"db.t:{top}:{ALL}::"), int(len(victims))


def measure_deltas(
    work: Path, name: str, rows: pa.Table, codec: str, writer: FileWriter, runs: int
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    merged, compacted, wids, deleted = deltas_tables(work, rows, codec, writer)
    schema = rows.schema
    stats = ReadStats()
    got = read_acid(merged, wids, schema=schema, stats=stats)
    if got.num_rows != rows.num_rows - deleted:
        raise AssertionError(
            f"{name}: read {got.num_rows} rows, expected {rows.num_rows - deleted}"
        )
    t_merged = timed(lambda _: read_acid(merged, wids, schema=schema), runs, lambda: None)
    t_comp = timed(lambda _: read_acid(compacted, wids, schema=schema), runs, lambda: None)
    t_py = median_time(lambda: po.read_table(next(compacted.rglob("bucket_00000"))), runs)
    out = {
        "table": name,
        "rows": rows.num_rows,
        "columns": rows.num_columns,
        "codec": codec,
        "deleted": deleted,
        "merged": t_merged.as_dict(),
        "compacted": t_comp.as_dict(),
        "pyarrow_read_table_compacted_s": t_py,
        "ratio": t_merged.wall_s / t_comp.wall_s,
        "ratio_cpu": t_merged.cpu_s / t_comp.cpu_s,
        "delete_events": stats.delete_events,
        "delete_set_bytes": stats.delete_set_bytes,
        "bytes_per_event": stats.delete_set_bytes / max(stats.delete_events, 1),
    }
    print(f"(a) {name}: {json.dumps(out)}", flush=True)
    return out


def narrow_rows(rows: pa.Table, n: int) -> pa.Table:
    """``n`` rows x 5 columns of store_sales (bigint, int and double: pyorc's plain types)."""
    part = rows.slice(0, n).select(list(NARROW_COLUMNS))
    return part.set_column(4, "ss_net_paid", pc.cast(part.column(4), pa.float64()))


# --------------------------------------------------------------------------- (b) + (c) DML


def dml_limits(
    rows: pa.Table, raw: RawOrc, codec: str, source: pa.Table, work: Path, runs: int
) -> dict[str, dict[str, float]]:
    """Each statement's physical limit: the bytes that must be decoded, at the parallel raw-ORC
    speed, plus the rows that must be written, at the writer's speed.

    * UPDATE (split update): the predicate column of every row; the matches touch nearly every
      row group, so every column of the table (one full parallel decode); writes the changed
      rows as insert events and one delete event each.
    * DELETE: the predicate column (the ROW__ID columns are runs of consecutive numbers, a few
      bytes per stripe); writes one delete event per match.
    * MERGE (WHEN MATCHED UPDATE SET * / WHEN NOT MATCHED INSERT *): the join key columns (every
      new value comes from the source); writes the whole source as insert events and a delete
      event per matched row.
    """
    keys = list(dml.KEYS)
    n_upd = _count(rows, lambda r: pc.equal(pc.remainder(r.column("ss_item_sk"), 1000), 0))
    n_del = _count(rows, lambda r: pc.equal(pc.remainder(r.column("ss_item_sk"), 100), 1))
    n_match = source.num_rows // 2

    def deletes(k: int) -> pa.Table:
        return delete_events(np.ones(k, np.int64), np.full(k, B0), np.arange(k), 2, rows.schema)

    full = raw.decode(runs)
    item = raw.decode(runs, ["ss_item_sk"])
    join = raw.decode(runs, keys)
    changed = rows.slice(0, n_upd)
    w_upd = write_time(insert_events(changed, 2, B0), codec, work, runs)
    w_upd_del = write_time(deletes(n_upd), codec, work, runs)
    w_del = write_time(deletes(n_del), codec, work, runs)
    w_merge = write_time(insert_events(source, 2, B0), codec, work, runs)
    w_merge_del = write_time(deletes(n_match), codec, work, runs)
    return {
        "update": {
            "decode_s": max(full, item),
            "write_s": w_upd + w_upd_del,
            "rows_written": n_upd,
        },
        "delete": {"decode_s": item, "write_s": w_del, "rows_written": n_del},
        "merge": {
            "decode_s": join,
            "write_s": w_merge + w_merge_del,
            "rows_written": source.num_rows + n_match,
        },
    }


def _count(rows: pa.Table, pred: Callable[[pa.Table], Any]) -> int:
    return int(pc.sum(pc.cast(pc.fill_null(pred(rows), False), pa.int64())).as_py() or 0)


def measure_dml(
    work: Path, codec: str, wl: dml.Workload, acid: dml.Acid, runs: int
) -> dict[str, Any]:
    """UPDATE / DELETE / MERGE on fresh copies, their limits and the own files' decodes, all
    timed in turn, round by round (``runs`` rounds, at least 5): each ratio is the median of the
    rounds' ratios, so the machine's speed drifting between phases cancels out."""
    source = wl.merge_sources[0]
    ops: dict[str, Callable[[Any], Any]] = {
        "update": acid.update,
        "delete": acid.delete,
        "merge": lambda tab: acid.merge(tab, source),
    }
    own_columns: dict[str, list[str] | None] = {
        "update": None,
        "delete": ["ss_item_sk"],
        "merge": list(dml.KEYS),
    }
    rounds: list[dict[str, Any]] = []
    raw = RawOrc(work, wl.rows, codec)
    try:
        for _ in range(max(runs, 5)):
            r: dict[str, Any] = {op: timed(fn, 1, acid.fresh).as_dict() for op, fn in ops.items()}
            r["limits"] = dml_limits(wl.rows, raw, codec, source, work, 1)
            acid.fresh()
            r["own"] = {op: own_files_decode(acid.path, 1, c) for op, c in own_columns.items()}
            rounds.append(r)
    finally:
        raw.close()

    def med(get: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(get(r) for r in rounds)

    out: dict[str, Any] = {"limits": {}, "own_files_decode_s": {}, "ratios": {}, "own_ratios": {}}
    for op in ops:
        out[op] = {k: med(lambda r, k=k, op=op: r[op][k]) for k in ("wall_s", "cpu_s")}
        out["limits"][op] = {
            k: med(lambda r, k=k, op=op: r["limits"][op][k])
            for k in ("decode_s", "write_s", "rows_written")
        }
        out["own_files_decode_s"][op] = med(lambda r, op=op: r["own"][op])
        out["ratios"][op] = med(
            lambda r, op=op: (
                r[op]["wall_s"] / (r["limits"][op]["decode_s"] + r["limits"][op]["write_s"])
            )
        )
        out["own_ratios"][op] = med(
            lambda r, op=op: r[op]["wall_s"] / (r["own"][op] + r["limits"][op]["write_s"])
        )
    return out


def measure_codec(
    work: Path,
    codec: str,
    wl: dml.Workload,
    runs: int,
    merges: int,
    with_dml: bool,
) -> dict[str, Any]:
    """Load store_sales with one codec; DML on fresh copies (if ``with_dml``); 10 MERGEs, then
    the scan against the raw-ORC limit of the same rows."""
    acid = dml.Acid(work, codec, wl.rows.schema)
    out: dict[str, Any] = {"codec": codec}
    try:
        t = acid.empty()
        acid.load(t, wl.rows)
        acid.stash()
        if with_dml:
            out.update(measure_dml(work, codec, wl, acid, runs))
        t = acid.fresh()
        out["scan_loaded"] = timed(acid.scan, runs, lambda: t).as_dict()
        for src in wl.merge_sources[:merges]:
            acid.merge(t, src)
        after = acid.scan(t)
        raw = RawOrc(work, after, codec)
        try:
            # the scan, the limit and the own files in turn, round by round: the ratios are
            # medians of each round's ratio (the machine's speed drifts between phases)
            walls = interleaved(
                {
                    "scan": lambda: acid.scan(t),
                    "raw": lambda: raw.decode(1),
                    "own": lambda: own_files_decode(acid.path, 1),
                },
                max(runs, 5),
            )
        finally:
            raw.close()
        out["scan_after_merges"] = median_timing(walls["scan"]).as_dict()
        out["own_files_after_merges_s"] = median_timing(walls["own"]).wall_s
        out["raw_after_merges_s"] = median_timing(walls["raw"]).wall_s
        out["rows_after_merges"] = after.num_rows
        out["scan_ratio"] = median_ratio(walls["scan"], walls["raw"])
        out["own_ratio"] = median_ratio(walls["own"], walls["raw"])
        out["scan_own_ratio"] = median_ratio(walls["scan"], walls["own"])
    finally:
        acid.close()
    print(f"(b/c) {codec}: {json.dumps(out)}", flush=True)
    return out


def measure_peers(work: Path, wl: dml.Workload, runs: int) -> dict[str, Any]:
    """delta-rs and pyiceberg: the same DML on fresh copies, and a scan of the same rows."""
    out: dict[str, Any] = {}
    source = wl.merge_sources[0]
    peers: list[Any] = [dml.Delta(work)]
    with contextlib.suppress(ImportError):
        peers.append(dml.Iceberg(work, wl.rows))
    for peer in peers:
        r: dict[str, Any] = {}
        t = peer.empty()
        peer.load(t, wl.rows)
        peer.stash()
        for op, fn in (
            ("update", peer.update),
            ("delete", peer.delete),
            ("merge", lambda tab, p=peer: p.merge(tab, source)),
        ):
            r[op] = timed(fn, runs, peer.fresh).as_dict()
        t = peer.fresh()
        r["scan_loaded"] = timed(peer.scan, runs, lambda tab=t: tab).as_dict()
        out[peer.name] = r
        peer.close()
        print(f"(c) {peer.name}: {json.dumps(r)}", flush=True)
    return out


# --------------------------------------------------------------------------- (e) metastore


def measure_metastore(clients: int, seconds: float, runs: int, backends: list[str]) -> list[Any]:
    """open+commit with ``clients`` processes (benchmarks.bench_metastore), and the round trips
    (statements and commits sent to the database) of one open and one commit."""
    from benchmarks import bench_metastore as bm

    rows: list[Any] = []
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["acid_platform.metastore"])
    with (
        tempfile.TemporaryDirectory() as tmp,
        ctx.Manager() as manager,
        ctx.Pool(clients) as pool,
    ):
        for backend in backends:
            try:
                got = bm.run_backend(
                    backend,
                    clients,
                    seconds,
                    runs,
                    pool,
                    manager,
                    Path(tmp),
                    workloads=("open+commit",),
                )
            except Exception as exc:  # noqa: BLE001 - a backend that is not there is reported
                rows.append({"backend": backend, "error": str(exc)[:200]})
                continue
            for r in got:
                r["round_trips"] = round_trips(backend, Path(tmp))
            rows += got
    return rows


def round_trips(backend: str, tmp: Path) -> dict[str, int]:
    """Statements and commits one ``open_txn`` and one ``commit_txn`` send (a warm client)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from acid_platform.metastore import Metastore
    from benchmarks import bench_metastore as bm

    url, cleanup = bm.namespace(backend, tmp)
    counts = {"n": 0}

    def count(*_: Any) -> None:
        counts["n"] += 1

    try:
        bm.prepare(url, 1)
        with Metastore(url) as ms:
            ms.commit_txn(ms.open_txn())  # warm: connections, caches, the time source
            event.listen(Engine, "before_cursor_execute", count)
            event.listen(Engine, "commit", count)
            try:
                counts["n"] = 0
                txn = ms.open_txn()
                opened = counts["n"]
                counts["n"] = 0
                ms.commit_txn(txn)
                committed = counts["n"]
            finally:
                event.remove(Engine, "before_cursor_execute", count)
                event.remove(Engine, "commit", count)
    finally:
        cleanup()
    return {"open": opened, "commit": committed}


# --------------------------------------------------------------------------- run + report


def run(args: argparse.Namespace) -> dict[str, Any]:
    scale = 0.1 if args.quick else args.scale
    runs = 1 if args.quick else args.runs
    merges = 3 if args.quick else args.merges
    codecs = [c.strip().upper() for c in args.codecs.split(",") if c.strip()]
    started = time.time()
    results: dict[str, Any] = {
        "quick": args.quick,
        "scale": scale,
        "runs": runs,
        "merges": merges,
        "cpus": os.cpu_count(),
        "read_threads": read_threads(),
        "load_average_start": os.getloadavg(),
    }
    work = Path(tempfile.mkdtemp(prefix="acid-bench-limits-"))
    try:
        wl = dml.workload(scale, merges)
        rows = wl.rows
        narrow = narrow_rows(store_sales(1.0), NARROW_ROWS // (10 if args.quick else 1))
        codec = codecs[0]
        results["deltas"] = [
            measure_deltas(work / "wide", "store_sales (wide)", rows, codec, ours_writer, runs),
            measure_deltas(work / "narrow", "narrow, pyorc", narrow, codec, pyorc_writer, runs),
        ]
        shutil.rmtree(work / "wide", ignore_errors=True)
        shutil.rmtree(work / "narrow", ignore_errors=True)
        results["codecs"] = [
            measure_codec(work, c, wl, runs, merges, with_dml=(i == 0))
            for i, c in enumerate(codecs)
        ]
        results["peers"] = measure_peers(work, wl, runs)
        results["fractions"] = {
            "update": dml.fraction(rows, dml.UPDATE_WHERE),
            "delete": dml.fraction(rows, dml.DELETE_WHERE),
            "merge_source": wl.merge_sources[0].num_rows / wl.n,
        }
        results["rows"] = wl.n
        if not args.no_metastore:
            results["metastore"] = measure_metastore(
                args.clients,
                1.0 if args.quick else args.seconds,
                1 if args.quick else runs,
                ["postgresql", "sqlite"],
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_average_end"] = os.getloadavg()
    results["elapsed_s"] = time.time() - started
    return results


def markdown(r: dict[str, Any]) -> str:
    mode = "quick mode (a tenth of store_sales, 1 run)" if r["quick"] else f"median of {r['runs']}"
    lines = [
        f"## Limits (issue 15) — each goal beside its physical limit, same rows, same run; {mode}",
        "",
        f"{r['cpus']} CPUs, {r['read_threads']} read threads; load average "
        f"{r['load_average_start'][0]:.1f} at start, {r['load_average_end'][0]:.1f} at end; "
        f"{r['elapsed_s']:.0f} s in all. Wall seconds, process CPU seconds in brackets.",
        "",
        "### (a) merge-on-read: 10 deltas + 10 delete deltas (3% deleted) vs the compacted read",
        "",
        "| table | rows × cols | codec | 10 deltas, 3% deleted | compacted | ratio (goal ≤ "
        f"{GOALS['read']}x) | CPU ratio | pyarrow.orc.read_table of the compacted file "
        "| delete set |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in r["deltas"]:
        lines.append(
            f"| {d['table']} | {d['rows']:,} × {d['columns']} | {d['codec']} "
            f"| {d['merged']['wall_s']:.3f} s ({d['merged']['cpu_s']:.2f}) "
            f"| {d['compacted']['wall_s']:.3f} s ({d['compacted']['cpu_s']:.2f}) "
            f"| **{d['ratio']:.2f}x** | {d['ratio_cpu']:.2f}x "
            f"| {d['pyarrow_read_table_compacted_s']:.3f} s "
            f"| {d['bytes_per_event']:.1f} B/event ({d['delete_events']:,} events) |"
        )
    peers = r["peers"]
    lines += [
        "",
        f"### (b) scan after {r['merges']} MERGEs vs the raw-ORC limit of the same rows",
        "",
        "Raw-ORC limit: the rows the scan returns, as plain ORC files of the same codec and "
        "stripe size, one per read thread, decoded by pyarrow in parallel. Own files, raw: "
        "pyarrow decoding the table's own files in parallel with no merge-on-read (the `row` "
        "struct, the deleted rows and the delete deltas included): the gap between it and the "
        "limit is the layout's cost to pyarrow, the gap above it is ours. The three are timed "
        "in turn, round by round; each ratio is the median of the rounds' ratios.",
        "",
        "| codec | scan of the loaded table | scan after merges | raw-ORC limit, same rows "
        f"| ratio (goal ≤ {GOALS['scan']}x) | own files, raw | scan ÷ own files |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in r["codecs"]:
        own = c.get("own_files_after_merges_s")
        own_cells = (
            f"{own:.2f} s ({c['own_ratio']:.2f}x limit) | {c['scan_own_ratio']:.2f}x"
            if own
            else "— | —"
        )
        lines.append(
            f"| {c['codec']} | {c['scan_loaded']['wall_s']:.2f} s "
            f"| {c['scan_after_merges']['wall_s']:.2f} s ({c['scan_after_merges']['cpu_s']:.2f}) "
            f"| {c['raw_after_merges_s']:.2f} s | **{c['scan_ratio']:.2f}x** | {own_cells} |"
        )
    peer_scans = ", ".join(f"{k} {v['scan_loaded']['wall_s']:.2f} s" for k, v in peers.items())
    lines += ["", f"Peers' full scan of the loaded table: {peer_scans}.", ""]
    first = r["codecs"][0]
    f = r["fractions"]
    lines += [
        f"### (c) UPDATE / DELETE / MERGE ({first['codec']}) vs their physical limit",
        "",
        "Physical limit = what must be decoded, at the parallel raw-ORC speed of the same rows "
        "(plain ORC, same codec and stripe size), + what must be written, at pyarrow's ORC "
        f"writer speed. UPDATE `{dml.UPDATE_WHERE}` ({f['update']:.2%}): the matches touch "
        "nearly every row group, so one full decode, + the changed rows as insert events and a "
        f"delete event each. DELETE `{dml.DELETE_WHERE}` ({f['delete']:.2%}): the predicate "
        "column, + a delete event per match. MERGE of a "
        f"{f['merge_source']:.1%} source (half updates, UPDATE SET *; half inserts): the join "
        "keys, + the source as insert events and a delete event per matched row. Own files: "
        "the same columns decoded by pyarrow from the table's own files (the `row` struct) "
        "instead of plain ORC, + the same writes. Ours, the limits and the own files are "
        "timed in turn, round by round; each ratio is the median of the rounds' ratios.",
        "",
        "| statement | ours | limit: decode + write | ours ÷ limit (goal ≤ "
        f"{GOALS['dml']}x) | own files: decode + write | ours ÷ own files | "
        + " | ".join(f"{k} (÷ ours)" for k in peers)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(peers),
    ]
    for op in ("update", "delete", "merge"):
        lim = first["limits"][op]
        total = lim["decode_s"] + lim["write_s"]
        ours = first[op]["wall_s"]
        cells = " | ".join(
            f"{v[op]['wall_s']:.2f} s ({v[op]['wall_s'] / ours:.1f}x)" for v in peers.values()
        )
        own = first["own_files_decode_s"][op]
        lines.append(
            f"| {op.upper()} | {ours:.2f} s ({first[op]['cpu_s']:.2f}) "
            f"| {total:.2f} s = {lim['decode_s']:.2f} + {lim['write_s']:.2f} "
            f"| **{first['ratios'][op]:.2f}x** "
            f"| {own + lim['write_s']:.2f} s = {own:.2f} + {lim['write_s']:.2f} "
            f"| {first['own_ratios'][op]:.2f}x | {cells} |"
        )
    ev = [d["bytes_per_event"] for d in r["deltas"]]
    lines += [
        "",
        f"### (d) delete-set memory: {max(ev):.1f} B/event at most (goal ≤ "
        f"{GOALS['bytes_per_event']:g} B), from the reads of (a)",
        "",
    ]
    if "metastore" in r:
        lines += [
            "### (e) metastore: open+commit, 8 client processes",
            "",
            "| backend | txn/s | p50 ms | p99 ms | goal | round trips: open / commit |",
            "|---|---:|---:|---:|---|---|",
        ]
        for m in r["metastore"]:
            if "error" in m:
                lines.append(f"| {m['backend']} | — | | | | not measured: {m['error']} |")
                continue
            goal = METASTORE_GOALS.get(m["backend"])
            met = "met" if goal is not None and m["ops_per_s"] >= goal else "MISSED"
            rt = m["round_trips"]
            lines.append(
                f"| {m['backend']} | {m['ops_per_s']} | {m['p50_ms']} | {m['p99_ms']} "
                f"| ≥ {goal}/s {met} | {rt['open']} / {rt['commit']} |"
            )
        lines += [
            "",
            "Round trips: statements and COMMITs sent to the database by one warm `open_txn` "
            "and one `commit_txn` (SQLAlchemy cursor executions + commits).",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the data, one run")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--merges", type=int, default=10)
    ap.add_argument("--codecs", default="ZLIB,SNAPPY,ZSTD", help="the first also runs (a), (c)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-metastore", action="store_true")
    args = ap.parse_args(argv)
    r = run(args)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "limits.json").write_text(json.dumps(r, indent=2, default=str))
    (OUT / "limits.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
