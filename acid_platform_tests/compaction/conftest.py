"""Fixtures and helpers: a real warehouse (files + SQLite metastore) per test, and ways to look
at what is on disk and what a snapshot reads."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from acid_platform import Warehouse
from acid_platform.format import (
    DEFAULT_COMPRESSION,
    EventWriter,
    ValidTxnList,
    ValidWriteIdList,
    bucket_file_name,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.metastore import Metastore, OperationType
from acid_platform_tests.helpers import events, warehouse_fixture
from acid_platform_tests.store_path import StorePath

EMPLOYEE = [("id", "int"), ("name", "string"), ("salary", "int")]
KV = [("k", "int"), ("v", "string")]


#: Metastore backends the warehouse fixture runs on (``sqlite``, ``postgresql``).
BACKENDS = [b for b in os.environ.get("ACID_TEST_COMPACTION_BACKENDS", "sqlite").split(",") if b]

#: A warehouse in ``tmp_path`` (statements wait up to 10 s for locks), its metastore on SQLite,
#: or on a fresh PostgreSQL schema when ``ACID_TEST_COMPACTION_BACKENDS`` asks.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=BACKENDS)


def event_keys(path: str | os.PathLike[str]) -> list[tuple[int, int, int, int, int]]:
    """(operation, originalTransaction, bucket, rowId, currentTransaction) of each event."""
    return [
        (e["operation"], e["originalTransaction"], e["bucket"], e["rowId"], e["currentTransaction"])
        for e in events(path)
    ]


def table_rows(wh: Warehouse, name: str) -> list[tuple[Any, ...]]:
    """What a new snapshot reads: (writeid, bucketid, rowid, *columns) tuples, sorted."""
    data = wh.table(name).scan(with_row_id=True).to_arrow().to_pylist()
    return sorted(_row_tuple(r) for r in data)


def snapshot_rows(
    path: str | os.PathLike[str], write_ids: ValidWriteIdList, txns: ValidTxnList, schema: pa.Schema
) -> list[tuple[Any, ...]]:
    """What an older snapshot reads in one directory (format-level merge-on-read)."""
    data = read_acid(os.fspath(path), write_ids, txns, with_row_id=True, schema=schema).to_pylist()
    return sorted(_row_tuple(r) for r in data)


def _row_tuple(r: dict[str, Any]) -> tuple[Any, ...]:
    rid = r.pop("row__id")
    return (rid["writeid"], rid["bucketid"], rid["rowid"], *r.values())


def kv_schema() -> pa.Schema:
    return pa.schema([("k", pa.int32()), ("v", pa.string())])


def write_insert_delta(
    dir_path: str | os.PathLike[str],
    batches: Sequence[tuple[int, Sequence[tuple[int, str]]]],
    bucket_id: int = 0,
    compression: str = DEFAULT_COMPRESSION,
) -> StorePath:
    """Write ``bucket_N`` of an insert delta (a local path or a store URI): for each (write id,
    rows) one run of insert events (streaming-style when several write ids share the file). Rows
    are (k, v)."""
    path = StorePath(dir_path)
    write_acid_version_file(str(path))
    schema = kv_schema()
    with EventWriter(str(path / bucket_file_name(bucket_id)), schema, compression=compression) as w:
        for write_id, rows in batches:
            table = pa.table(
                {"k": pa.array([k for k, _ in rows], pa.int32()), "v": [v for _, v in rows]}
            )
            w.write(insert_events(table, write_id, encode_bucket(bucket_id)))
    return path


def streaming_batch(ms: Metastore, db: str, table: str, n: int) -> tuple[list[int], list[int]]:
    """Open ``n`` txns as one streaming batch with consecutive write ids (insert components)."""
    txns = ms.open_txns(n)
    write_ids = ms.allocate_write_ids(txns, db, table)
    for txn in txns:
        ms.add_write_components(txn, db, table, [None], OperationType.INSERT)
    return txns, write_ids
