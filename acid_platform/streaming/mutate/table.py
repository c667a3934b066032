"""The table handle a mutation transaction gives its coordinators (Hive's ``AcidTable`` and
``AcidTableSerializer``).

An :class:`AcidTable` is a plain frozen value: the table's catalog entry, the transaction and the
table's write id in it, the snapshot the transaction reads with, and how to reach the metastore.
It pickles (Spark closures, ``multiprocessing``) and :meth:`AcidTable.encode` turns it into one
line of JSON (an environment variable, a job argument)::

    text = txn.tables["db.sales"].encode()     # on the client
    table = AcidTable.decode(text)             # on a worker
    with MutatorCoordinator(table) as coordinator: ...

Each table's changes are written under three statement ids of the transaction — inserts, then
updates, then deletes (:class:`Mutation`) — the ids a MERGE with WHEN NOT MATCHED INSERT, WHEN
MATCHED UPDATE and WHEN MATCHED DELETE gives its branches, so both leave the same files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from acid_platform.format import Snapshot, ValidTxnList, ValidWriteIdList
from acid_platform.metastore.model import OperationType, TableSpec


class Mutation(Enum):
    """What a record does to the table, with the statement id (offset) it is written under."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"

    @property
    def statement(self) -> int:
        """The statement id of this kind of change in a mutation transaction (0, 1, 2)."""
        return _STATEMENTS[self]

    @property
    def operation_type(self) -> OperationType:
        """The write component the metastore records for it."""
        return OperationType(self.value)

    @classmethod
    def of(cls, value: object) -> Mutation:
        """A mutation from its name or Hive-style letter (``"update"``, ``"U"``, ``Mutation``)."""
        if isinstance(value, Mutation):
            return value
        text = str(value).strip().lower()
        found = _BY_TEXT.get(text)
        if found is None:
            raise ValueError(
                f"unknown mutation {value!r}: use insert / update / delete (I / U / D)"
            )
        return found


_STATEMENTS = {Mutation.INSERT: 0, Mutation.UPDATE: 1, Mutation.DELETE: 2}
_BY_TEXT = {m.value: m for m in Mutation} | {m.value[0]: m for m in Mutation}
#: Statement ids a mutation transaction reserves on each table it writes.
STATEMENT_COUNT = len(_STATEMENTS)


@dataclass(frozen=True)
class AcidTable:
    """One table of a mutation transaction, as a coordinator needs it (see module docs)."""

    spec: TableSpec
    txn_id: int
    #: The table's write id in the transaction; ``None`` for a source (read-only) table.
    write_id: int | None
    #: The transaction's snapshot: ``ValidTxnList`` and the table's ``ValidWriteIdList`` text.
    valid_txns: str
    valid_write_ids: str
    metastore_url: str
    txn_timeout_s: float = 300.0
    #: Coordinators create missing partitions (and record what they write) in the metastore
    #: themselves; otherwise the client does it at commit from their reports.
    create_partitions: bool = False

    @property
    def name(self) -> str:
        """``db.table``."""
        return self.spec.full_name

    @property
    def is_sink(self) -> bool:
        """Whether the transaction writes this table."""
        return self.write_id is not None

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot to read the table with (the transaction's; its own writes included)."""
        return Snapshot(
            ValidTxnList.parse(self.valid_txns), ValidWriteIdList.parse(self.valid_write_ids)
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # A TableSpec's properties are a read-only mapping plain pickle refuses: go by JSON.
        return (AcidTable.decode, (self.encode(),))

    def encode(self) -> str:
        """The handle as one line of JSON (:meth:`decode` reads it back)."""
        spec = self.spec
        raw: dict[str, Any] = {
            "spec": {
                "db": spec.db,
                "name": spec.name,
                "columns": [list(c) for c in spec.columns],
                "partition_columns": [list(c) for c in spec.partition_columns],
                "bucket_columns": list(spec.bucket_columns),
                "num_buckets": spec.num_buckets,
                "bucketing_version": spec.bucketing_version,
                "location": spec.location,
                "properties": dict(spec.properties),
            },
            "txn_id": self.txn_id,
            "write_id": self.write_id,
            "valid_txns": self.valid_txns,
            "valid_write_ids": self.valid_write_ids,
            "metastore_url": self.metastore_url,
            "txn_timeout_s": self.txn_timeout_s,
            "create_partitions": self.create_partitions,
        }
        return json.dumps(raw, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> AcidTable:
        """The handle :meth:`encode` wrote."""
        raw = json.loads(text)
        s = raw["spec"]
        spec = TableSpec(
            s["db"],
            s["name"],
            tuple((c, t) for c, t in s["columns"]),
            partition_columns=tuple((c, t) for c, t in s["partition_columns"]),
            bucket_columns=tuple(s["bucket_columns"]),
            num_buckets=int(s["num_buckets"]),
            bucketing_version=int(s["bucketing_version"]),
            location=s["location"],
            properties=dict(s["properties"]),
        )
        return cls(
            spec,
            int(raw["txn_id"]),
            None if raw["write_id"] is None else int(raw["write_id"]),
            raw["valid_txns"],
            raw["valid_write_ids"],
            raw["metastore_url"],
            float(raw["txn_timeout_s"]),
            bool(raw["create_partitions"]),
        )


__all__ = ["STATEMENT_COUNT", "AcidTable", "Mutation"]
