"""Coordinators in processes of their own (importable by spawned children): one applies a
prepared batch and reports; another stops mid-write and waits to be killed."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa

from acid_platform import Warehouse
from acid_platform.streaming.mutate import (
    MUTATION,
    AcidTable,
    BucketIdResolver,
    MutatorClient,
    MutatorCoordinator,
)


def to_ipc(table: pa.Table) -> bytes:
    """A table as Arrow IPC stream bytes (what a worker receives)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def apply_batch(handle_text: str, batch: bytes) -> tuple[int, str]:
    """Apply a prepared batch to the table ``handle_text`` (an encoded ``AcidTable``) names;
    returns this process's pid and the coordinator's report as JSON."""
    table = AcidTable.decode(handle_text)
    prepared = pa.ipc.open_stream(batch).read_all()
    with MutatorCoordinator(table) as coordinator:
        coordinator.mutate(prepared)
    assert coordinator.report is not None
    return os.getpid(), coordinator.report.to_json()


def write_then_hang(root: str, txn_timeout_s: float, marker: str, rows: int) -> None:
    """A whole mutation job in one process: begin on ``acct``, a delete (one group, buffered),
    then ``rows`` inserts into another group (more than a buffer: its file is open, half
    written), say so in ``marker`` (txn id, write id, pid), then wait — to be killed."""
    wh = Warehouse.open(root, txn_timeout_s=txn_timeout_s)
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    handle = txn.table("acct")
    resolver = BucketIdResolver(handle.spec)
    first = [
        r
        for r in wh.table("acct").scan(with_row_id=True).to_arrow().to_pylist()
        if r["region"] == "eu"
    ]
    coordinator = MutatorCoordinator(handle)
    coordinator.delete(["eu"], {"row__id": first[0]["row__id"]})
    news = [{"id": 10_000 + i, "name": "n", "bal": None, "region": "us"} for i in range(rows * 8)]
    stamped = resolver.attach_bucket_ids(pa.Table.from_pylist(news))
    bucket = stamped.column("row__id").combine_chunks().field("bucketid")
    same = stamped.filter(pa.compute.equal(bucket, bucket[0]))
    batch = same.slice(0, rows).append_column(
        MUTATION, pa.array(["insert"] * min(rows, same.num_rows))
    )
    coordinator.mutate(batch)  # the second group's file is open, half written
    Path(marker).write_text(
        json.dumps({"txn_id": handle.txn_id, "write_id": handle.write_id, "pid": os.getpid()})
    )
    threading.Event().wait()
