"""A streaming writer run as its own OS process by the kill tests.

    python -m acid_platform_tests.streaming.procs <warehouse> <metastore url> <seed> <journal>

Streams random transactions into ``t`` (batches of 2-10, 1-60 rows, some aborted, a small
memory limit so stripes reach the files before commits) until killed. The journal says what it
did, one line per step, flushed before the next step starts: ``begin <k> <ids>`` before rows of
transaction ``k`` are written, ``committing <k>`` before the commit, ``committed <k>`` after it
returned, ``aborted <k>`` after an abort.
"""

from __future__ import annotations

import random
import sys

from acid_platform import Warehouse
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter


def stream(root: str, url: str, seed: int, journal: str) -> None:
    rng = random.Random(seed)
    with Warehouse.open(root, url, txn_timeout_s=5) as wh, open(journal, "a") as out:
        conn = (
            StreamingConnection.builder(wh)
            .with_table("t")
            .with_transaction_batch_size(rng.randint(2, 10))
            .with_record_writer(StrictDelimitedInputWriter(","))
            .with_memory_limit(rng.choice([1, 4096, 1 << 20]))
            .connect()
        )
        k = 0
        while True:
            conn.begin_transaction()
            ids = [seed * 1_000_000 + k * 100 + i for i in range(rng.randint(1, 60))]
            print("begin", k, ",".join(map(str, ids)), file=out, flush=True)
            for start in range(0, len(ids), 7):
                conn.write([f"{i},v{i}".encode() for i in ids[start : start + 7]])
            if rng.random() < 0.25:
                conn.abort_transaction()
                print("aborted", k, file=out, flush=True)
            else:
                print("committing", k, file=out, flush=True)
                conn.commit_transaction()
                print("committed", k, file=out, flush=True)
            k += 1


if __name__ == "__main__":
    stream(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
