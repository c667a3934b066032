"""A streamed scan's memory is bounded by one split (one stripe and its bucket's delete set), not
by the table: reading a table several times larger than a memory cap stays under the cap.

Peak RSS is measured in a fresh process (its ``VmHWM``) so nothing the test process holds counts;
the table is written by another process first. The reading process asks its allocators to hand
freed memory back at once (two glibc arenas, ``MALLOC_ARENA_MAX=2``; no mimalloc purge delay,
``MIMALLOC_PURGE_DELAY=0``): otherwise how much freed memory stays resident depends on which
thread happened to decode which stripe (28-68 MiB measured) — noise about the allocators, not
about what the read holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The most a streamed read may add to the reading process's resident memory after its first
#: batch (stripes of this table decode to ~7 MiB; the whole table to ~650 MiB).
CAP_BYTES = 150 << 20

_COMMON = """
import json, sys
import numpy as np
import pyarrow as pa
from acid_platform.format import (
    EventWriter, Snapshot, ValidWriteIdList, bucket_file_name, delete_delta_dir_name,
    delete_events, delta_dir_name, encode_bucket, insert_events, write_acid_version_file,
)
from acid_platform.format.fs import resolve
from acid_platform.metastore import TableSpec

ROOT, PARTITIONS, ROWS, CHUNK, WIDTH = sys.argv[2], 4, 800_000, 25_000, 200
SPEC = TableSpec("default", "big", (("id", "bigint"), ("payload", "string")),
                 (("p", "int"),), location=ROOT, properties={"transactional": "true"})
ROW_SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])
SNAPSHOT = Snapshot(None, ValidWriteIdList.parse("default.big:2:9223372036854775807::"))
B0 = encode_bucket(0)
"""

_WRITE = """
rng = np.random.default_rng(7)
hexdigits = np.frombuffer(b"0123456789abcdef", np.uint8)
for p in range(PARTITIONS):
    part = f"{ROOT}/p={p}"
    delta = f"{part}/{delta_dir_name(1, 1, 0)}"
    write_acid_version_file(delta)
    with EventWriter(f"{delta}/{bucket_file_name(0)}", ROW_SCHEMA, stripe_size=4 << 20) as w:
        for first in range(0, ROWS, CHUNK):
            data = hexdigits[rng.integers(0, 16, CHUNK * WIDTH)]  # unique, incompressible-ish
            offsets = np.arange(0, (CHUNK + 1) * WIDTH, WIDTH, dtype=np.int32)
            payload = pa.StringArray.from_buffers(CHUNK, pa.py_buffer(offsets), pa.py_buffer(data))
            ids = pa.array(np.arange(first, first + CHUNK) + p * ROWS, pa.int64())
            rows = pa.table([ids, payload], schema=ROW_SCHEMA)
            w.write(insert_events(rows, 1, B0, first_row_id=first))
    dead = np.arange(0, ROWS, 10)
    delete = f"{part}/{delete_delta_dir_name(2, 2, 0)}"
    write_acid_version_file(delete)
    with EventWriter(f"{delete}/{bucket_file_name(0)}", ROW_SCHEMA) as w:
        w.write(delete_events(np.ones_like(dead), np.full_like(dead, B0), dead, 2, ROW_SCHEMA))
"""

_READ = """
import resource
from acid_platform.table.scan import plan_scan

def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

scan = plan_scan(SPEC, resolve(ROOT), SNAPSHOT, with_row_id=True)
tasks = scan.split_tasks()
if sys.argv[1] == "sql":  # the same rows through a streamed SELECT on the embedded engine
    import sqlglot
    from acid_platform.engines.embedded import EmbeddedEngine
    from acid_platform.sql.select import Relation, stream_query

    def relation(name):
        return Relation("default.big", ("id", "payload", "p"), lambda columns, _f, row_id, _wide:
                        plan_scan(SPEC, resolve(ROOT), SNAPSHOT, columns=columns,
                                  with_row_id=row_id))

    query = sqlglot.parse_one("SELECT row__id, id, payload, p FROM big", read="hive")
    rows = stream_query(EmbeddedEngine(), query, relation)
else:
    rows = scan.to_batches()
with rows as reader:
    # the first batch warms up what any read needs once (kernels, thread pools, the ORC library)
    batches = iter(reader)
    first = next(batches)
    rows, nbytes = first.num_rows, first.nbytes
    before = rss()
    for batch in batches:
        rows += batch.num_rows
        nbytes += batch.nbytes
with open("/proc/self/status") as f:  # this process's high-water mark (ru_maxrss would also
    # count the parent's memory at fork: Linux folds it in at execve)
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"before": before, "peak": peak, "rows": rows, "bytes": nbytes,
                  "splits": len(tasks)}))
"""


def _run(mode: str, code: str, table: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLOC_ARENA_MAX="2", MIMALLOC_PURGE_DELAY="0")
    done = subprocess.run(
        [sys.executable, "-c", _COMMON + code, mode, str(table)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_streamed_scan_of_a_table_larger_than_the_cap_stays_under_it(tmp_path: Path) -> None:
    """``TableScan.to_batches``, and a SELECT streamed through the embedded engine
    (``stream_query``, what the CLI prints from)."""
    table = tmp_path / "big"
    _run("write", _WRITE, table)
    for how in ("scan", "sql"):
        out = json.loads(_run(how, _READ, table).strip().splitlines()[-1])
        assert out["splits"] == 4
        assert out["rows"] == 4 * 800_000 - 4 * 80_000  # every 10th row deleted
        assert out["bytes"] > 3 * CAP_BYTES  # the table, in memory, is several times the cap
        grew = out["peak"] - out["before"]
        assert grew < CAP_BYTES, (
            f"{how}: the streamed read grew resident memory by {grew >> 20} MiB"
        )
