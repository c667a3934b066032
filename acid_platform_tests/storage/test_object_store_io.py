"""What only an object store can get wrong: streaming ingest with no append, what a statement
asks of the store, and a writer killed in the middle of a multipart upload."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table
from acid_platform.streaming import ArrowRecordWriter, StreamingConnection
from acid_platform_tests.helpers import open_warehouse
from acid_platform_tests.s3_server import S3Server

from .conftest import acid_dirs_of

KV = [("k", "int"), ("v", "string")]


def rows(wh: Warehouse, name: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in wh.table(name).scan().to_arrow().to_pylist())


def test_streaming_batch_readers_see_exactly_the_committed_transactions(wh: Warehouse) -> None:
    t = wh.create_table("t", KV)
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(6)
        .with_record_writer(ArrowRecordWriter())
        .connect()
    )
    committed: list[tuple[int, str]] = []
    for i in range(6):
        conn.begin_transaction()
        conn.write(pa.table({"k": [i, i + 100], "v": [f"t{i}", f"t{i}"]}))
        assert rows(wh, "t") == sorted(committed)  # the open transaction is not visible
        if i in (2, 4):
            conn.abort_transaction()
        else:
            conn.commit_transaction()
            committed += [(i, f"t{i}"), (i + 100, f"t{i}")]
        assert rows(wh, "t") == sorted(committed), i
    conn.close()
    assert rows(wh, "t") == sorted(committed)
    dirs = acid_dirs_of(wh, t.spec.location)
    if wh.root.startswith("s3://"):  # no append: one delta per transaction of the batch
        assert len([d for d in dirs if d.startswith("delta_")]) == 6
    else:  # one delta for the whole batch
        assert [d for d in dirs if d.startswith("delta_")] == ["delta_0000001_0000006"]
    compact_table(wh, "t", kind="minor")
    assert rows(wh, "t") == sorted(committed)


def _partitioned_table(wh: Warehouse, inserts: int) -> None:
    t = wh.create_table("t", KV, partition_columns=[("p", "string")])
    for i in range(inserts):
        t.insert([{"k": i * 10 + j, "v": "x", "p": "abc"[j % 3]} for j in range(10)])


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT count(*) FROM t",
        "UPDATE t SET v = 'y' WHERE k < 5",
        "DELETE FROM t WHERE k = 7",
        "MERGE INTO t USING (SELECT 1 AS k, 'm' AS v) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v",
    ],
)
def test_one_listing_per_partition_per_statement(
    s3: S3Server, tmp_path: Path, statement: str
) -> None:
    counts = []
    for inserts in (2, 8):  # four times the files: the same listings
        with open_warehouse(tmp_path / str(inserts), s3=s3) as wh:
            _partitioned_table(wh, inserts)
            with s3.counting() as c:
                wh.sql(statement)
            counts.append(c)
    few, many = counts
    # the table (that it exists, its partitions) and each of its 3 partitions
    assert few["LIST"] == many["LIST"] <= 5
    # files are read whole, each with one GET and one HEAD for its size; each file written is
    # one PUT after one HEAD (created only if absent)
    assert many["GET"] <= 3 * 8 + 8
    assert many["HEAD"] <= many["GET"] + many["PUT"] + 2


def test_insert_is_two_puts_two_heads_and_no_listing(s3: S3Server, tmp_path: Path) -> None:
    with open_warehouse(tmp_path, s3=s3) as wh:
        _partitioned_table(wh, 1)
        with s3.counting() as c:
            wh.sql("INSERT INTO t VALUES (1000, 'z', 'a')")
    # the bucket file and _orc_acid_version, each created only if absent (one HEAD each)
    assert dict(c) == {"PUT": 2, "HEAD": 2}


WRITER = textwrap.dedent(
    """
    import base64, sys
    import numpy as np, pyarrow as pa
    from acid_platform import Warehouse
    from acid_platform.format.storage import StorageOptions
    root, url, options = sys.argv[1], sys.argv[2], StorageOptions.from_json(sys.argv[3])
    rng = np.random.default_rng(1)
    n = 2_000_000  # 48 MB of base64 text, ~36 MB compressed: multipart uploads of many parts
    raw = pa.py_buffer(base64.b64encode(rng.bytes(n * 18)))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(24), n, [None, raw])
    text = fixed.cast(pa.binary()).cast(pa.string())
    big = pa.table({"k": pa.array(np.arange(n, dtype=np.int32)), "v": text})
    with Warehouse.open(root, url, storage=options) as wh:
        print("writing", flush=True)
        wh.table("t").insert(big)
        print("committed", flush=True)
    """
)


@pytest.mark.slow
def test_kill_9_mid_multipart_upload_leaves_nothing_visible(s3: S3Server, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    with open_warehouse(tmp_path, s3=s3) as wh:
        wh.create_table("t", KV).insert([{"k": -1, "v": "before"}])
        root, options = wh.root, s3.options()
    start = s3.log_offset()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, root, url, options.to_json()],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(
            "partNumber=" in r.query and "bucket_" in r.path for r in s3.requests_since(start)
        ):  # a part of the bucket file has been uploaded: the upload is in flight
            assert writer.poll() is None, "the writer ended before its upload began"
            assert time.monotonic() < deadline, "no multipart upload seen"
            time.sleep(0.02)  # polling the server's log for an event, not waiting for a result
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    uploads = [r for r in s3.requests_since(start) if "uploadId=" in r.query and r.method == "POST"]
    assert uploads == []  # the upload was never completed
    with Warehouse.open(root, url, storage=options) as wh:
        t = wh.table("t")
        assert rows(wh, "t") == [(-1, "before")]  # nothing of the killed insert
        t.insert([{"k": 1, "v": "after"}])
        assert rows(wh, "t") == [(-1, "before"), (1, "after")]
