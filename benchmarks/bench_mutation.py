"""The Streaming Mutation API (issue 11) against SQL MERGE: the same change set of 1% of TPC-DS
store_sales applied both ways, on fresh copies of the same loaded table.

The table is bucketed (``CLUSTERED BY (ss_item_sk) INTO 8 BUCKETS``), as the Mutation API's
tables must be (seed 004). The change set (on the key ``(ss_item_sk, ss_ticket_number)``): 0.4% of the rows updated
(``ss_quantity + 1``, every column given), 0.2% deleted, and new rows as many as 0.4% of the table
(new tickets). It sits in an ACID table ``changes`` of the warehouse (loaded before timing):

* **SQL MERGE** — ``MERGE INTO store_sales t USING changes c ON <key> WHEN MATCHED AND
  c.mutation = 'U' THEN UPDATE SET … WHEN MATCHED AND c.mutation = 'D' THEN DELETE WHEN NOT
  MATCHED AND c.mutation = 'I' THEN INSERT VALUES (…)`` through ``wh.sql``;
* **Mutation API** — read ``changes``, ``MutatorClient`` transaction, ``prepare_changes`` (the
  table's key and ROW__ID at the transaction's snapshot, joined; inserts stamped; grouped and
  sorted), one ``MutatorCoordinator`` in process (``apply_changes``), ``commit``.

Both leave the same rows with the same ROW__IDs; the run checks it (every row and ROW__ID of
the two results, sorted, compared). Goal: the Mutation API within 1.2x of MERGE's wall time.
Medians of ``--runs`` rounds (the two paths take turns in each), wall and CPU. The machine is small and shared (2 cores, other jobs):
figures move between runs.

    python -m benchmarks.bench_mutation [--scale 1] [--runs 3] [--fraction 0.01]

Writes ``benchmarks/out/mutation.json`` and ``mutation.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import interleaved, median_timing
from benchmarks.data import store_sales

OUT = Path(__file__).resolve().parent / "out"
TABLE = "store_sales"
KEYS = ("ss_item_sk", "ss_ticket_number")
#: The Mutation API writes bucketed tables (seed 004: "the Hive table must be bucketed").
BUCKETS = 8
GOAL = 1.2
SHARES = {"U": 0.4, "D": 0.2, "I": 0.4}  # of the change set


def change_set(rows: pa.Table, fraction: float, seed: int = 11) -> pa.Table:
    """``fraction`` of the table's rows as changes (see module docs), with a ``mutation`` column."""
    n = rows.num_rows
    k = int(n * fraction)
    n_u, n_d = int(k * SHARES["U"]), int(k * SHARES["D"])
    n_i = k - n_u - n_d
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(n, n_u + n_d + n_i, replace=False))
    rng.shuffle(pick)
    updates = rows.take(np.sort(pick[:n_u]))
    q = updates.schema.get_field_index("ss_quantity")
    updates = updates.set_column(q, "ss_quantity", pc.add(pc.coalesce(updates.column(q), 0), 1))
    deletes = rows.take(np.sort(pick[n_u : n_u + n_d]))
    inserts = rows.take(np.sort(pick[n_u + n_d :]))
    first = int(pc.max(rows.column("ss_ticket_number")).as_py()) + 1
    t = inserts.schema.get_field_index("ss_ticket_number")
    inserts = inserts.set_column(
        t, "ss_ticket_number", pa.array(np.arange(first, first + n_i, dtype=np.int64))
    )
    parts = []
    for code, part in (("U", updates), ("D", deletes), ("I", inserts)):
        parts.append(part.add_column(0, "mutation", pa.array([code] * part.num_rows)))
    return pa.concat_tables(parts).combine_chunks()


def merge_sql(columns: list[str]) -> str:
    on = " AND ".join(f"t.{k} = c.{k}" for k in KEYS)
    sets = ", ".join(f"{c} = c.{c}" for c in columns if c not in KEYS)
    values = ", ".join(f"c.{c}" for c in columns)
    return (
        f"MERGE INTO {TABLE} t USING changes c ON {on} "
        f"WHEN MATCHED AND c.mutation = 'U' THEN UPDATE SET {sets} "
        "WHEN MATCHED AND c.mutation = 'D' THEN DELETE "
        f"WHEN NOT MATCHED AND c.mutation = 'I' THEN INSERT VALUES ({values})"
    )


class Copies:
    """The loaded warehouse, restored to its path before every run (the catalog holds it)."""

    def __init__(self, work: Path) -> None:
        self.path = work / "wh"
        self.stash = work / "stash"
        self._wh: Any = None

    def load(self, rows: pa.Table, changes: pa.Table) -> None:
        from acid_platform import Warehouse

        with Warehouse.open(self.path) as wh:
            wh.create_table(
                TABLE, rows.schema, bucket_columns=["ss_item_sk"], num_buckets=BUCKETS
            ).insert(rows)
            wh.create_table("changes", changes.schema).insert(changes)
        shutil.copytree(self.path, self.stash)

    def fresh(self) -> Any:
        from acid_platform import Warehouse

        self.close()
        shutil.rmtree(self.path)
        shutil.copytree(self.stash, self.path)
        self._wh = Warehouse.open(self.path)
        self._wh.table(TABLE)  # the catalog read once, as a session would have it
        return self._wh

    def close(self) -> None:
        if self._wh is not None:
            self._wh.close()
            self._wh = None


def by_merge(wh: Any, sql: str) -> None:
    wh.sql(sql)


def by_mutation(wh: Any) -> None:
    from acid_platform.streaming.mutate import MutatorClient, apply_changes, prepare_changes

    changes = wh.table("changes").scan().to_arrow()
    with MutatorClient(wh, [TABLE]) as client:
        txn = client.new_transaction().begin()
        prepared = prepare_changes(txn, TABLE, changes, key=list(KEYS))
        report = apply_changes(txn.table(TABLE), prepared)
        txn.commit([report])


def state(wh: Any) -> pa.Table:
    """Every row with its ROW__ID, sorted by ROW__ID (the table's exact state)."""
    rows = wh.table(TABLE).scan(with_row_id=True).to_arrow()
    rid = rows.column("row__id")
    keyed = rows.append_column("__w", pc.struct_field(rid, "writeid"))
    keyed = keyed.append_column("__b", pc.struct_field(rid, "bucketid"))
    keyed = keyed.append_column("__r", pc.struct_field(rid, "rowid"))
    return keyed.sort_by([("__w", "ascending"), ("__b", "ascending"), ("__r", "ascending")])


def run(scale: float, runs: int, fraction: float) -> dict[str, Any]:
    rows = store_sales(scale).combine_chunks()
    changes = change_set(rows, fraction)
    sql = merge_sql(rows.column_names)
    work = Path(tempfile.mkdtemp(prefix="acid-bench-mutation-"))
    copies = Copies(work)
    try:
        copies.load(rows, changes)
        result: dict[str, Any] = {
            "rows": rows.num_rows,
            "columns": rows.num_columns,
            "changes": {
                c: int(pc.sum(pc.equal(changes.column("mutation"), c)).as_py()) for c in "UDI"
            },
            "runs": runs,
            "cpus": os.cpu_count(),
            "load_average_start": os.getloadavg(),
        }
        rounds = interleaved(
            {"merge": lambda wh: by_merge(wh, sql), "mutation": by_mutation}, runs, copies.fresh
        )
        merge, mutation = median_timing(rounds["merge"]), median_timing(rounds["mutation"])
        by_merge(copies.fresh(), sql)
        merged = state(copies._wh)
        by_mutation(copies.fresh())
        mutated = state(copies._wh)
        result["same_rows_and_row_ids"] = bool(merged.equals(mutated))
        result["rows_after"] = mutated.num_rows
        result["merge"] = merge.as_dict()
        result["mutation"] = mutation.as_dict()
        result["ratio_wall"] = mutation.wall_s / merge.wall_s
        result["ratio_cpu"] = mutation.cpu_s / merge.cpu_s
        result["goal"] = GOAL
        result["load_average_end"] = os.getloadavg()
        return result
    finally:
        copies.close()
        shutil.rmtree(work, ignore_errors=True)


def markdown(r: dict[str, Any]) -> str:
    c = r["changes"]
    met = "met" if r["ratio_wall"] <= r["goal"] else "NOT met"
    return "\n".join(
        [
            "## Mutation API against SQL MERGE",
            "",
            f"TPC-DS store_sales ({r['rows']:,} rows, {r['columns']} columns); one change set of "
            f"{c['U']:,} updates, {c['D']:,} deletes and {c['I']:,} inserts "
            f"({sum(c.values()) / r['rows']:.1%} of the rows) applied to a fresh copy of the "
            "loaded table by SQL MERGE and by the Mutation API (client, prepare_changes, one "
            "in-process coordinator, commit). Medians of "
            f"{r['runs']} runs; {r['cpus']} CPUs shared with other jobs, load average "
            f"{r['load_average_start'][0]:.1f} at start, {r['load_average_end'][0]:.1f} at end "
            "(noisy: figures move between runs). Same rows and ROW__IDs after both: "
            f"{'yes' if r['same_rows_and_row_ids'] else 'NO'}.",
            "",
            "| path | wall | CPU |",
            "|---|---|---|",
            f"| SQL MERGE | {r['merge']['wall_s']:.2f} s | {r['merge']['cpu_s']:.2f} s |",
            f"| Mutation API | {r['mutation']['wall_s']:.2f} s | {r['mutation']['cpu_s']:.2f} s |",
            f"| Mutation ÷ MERGE | {r['ratio_wall']:.2f}x | {r['ratio_cpu']:.2f}x |",
            "",
            f"Goal: Mutation API within {r['goal']}x of MERGE (wall): {met}.",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--scale", type=float, default=1.0, help="TPC-DS scale factor (SF1: 2.88M rows)"
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.01, help="changes, as a share of the rows")
    args = ap.parse_args()
    r = run(args.scale, args.runs, args.fraction)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "mutation.json").write_text(json.dumps(r, indent=2))
    (OUT / "mutation.md").write_text(markdown(r))
    print(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
