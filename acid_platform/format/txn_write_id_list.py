"""The write id lists of every table a transaction reads: Hive's ``ValidTxnWriteIdList``.

Its string (``hive.txn.tables.valid.writeids``) is ``<txnId>$<list>$<list>…``, each ``<list>``
a table's :class:`~acid_platform.format.write_id_list.ValidWriteIdList` string.

>>> str(ValidTxnWriteIdList.of(12, ValidWriteIdList("db.a", 3)))
'12$db.a:3:9223372036854775807::'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acid_platform.errors import InvalidSnapshotError
from acid_platform.format.id_list import parse_long
from acid_platform.format.write_id_list import ValidWriteIdList

VALID_TABLES_WRITEIDS_KEY = "hive.txn.tables.valid.writeids"
COMPACTOR_VALID_TABLES_WRITEIDS_KEY = "hive.compactor.txn.tables.valid.writeids"


@dataclass(frozen=True)
class ValidTxnWriteIdList:
    """The write id lists of every table a transaction reads (``hive.txn.tables.valid.writeids``).

    >>> v = ValidTxnWriteIdList.parse("12$db.a:3:9223372036854775807::$db.b:5:4:4:")
    >>> v.txn_id, v.get("db.b").min_open_write_id
    (12, 4)
    """

    txn_id: int
    tables: dict[str, ValidWriteIdList] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tables: dict[str, ValidWriteIdList] = {}
        for name, write_ids in self.tables.items():
            if write_ids.table_name != name:
                raise InvalidSnapshotError(
                    f"ValidTxnWriteIdList of txn {self.txn_id}: key {name!r} holds the list "
                    f"of table {write_ids.table_name!r}"
                )
            tables[name] = write_ids
        object.__setattr__(self, "tables", tables)

    @classmethod
    def of(cls, txn_id: int, *write_id_lists: ValidWriteIdList) -> ValidTxnWriteIdList:
        """Build from lists that all carry a table name."""
        tables: dict[str, ValidWriteIdList] = {}
        for write_ids in write_id_lists:
            if write_ids.table_name is None:
                raise InvalidSnapshotError(
                    f"ValidTxnWriteIdList of txn {txn_id}: a list has no table name: {write_ids}"
                )
            tables[write_ids.table_name] = write_ids
        return cls(txn_id, tables)

    @classmethod
    def parse(cls, text: str) -> ValidTxnWriteIdList:
        """Read ``<txnId>$<table list>$<table list>…``."""
        return parse_txn_write_id_lists(text)

    def __str__(self) -> str:
        return format_txn_write_id_lists(self)

    def get(self, table_name: str) -> ValidWriteIdList | None:
        """The list of ``db.table``, or ``None`` if the transaction does not read it."""
        return self.tables.get(table_name)


def parse_txn_write_id_lists(text: str) -> ValidTxnWriteIdList:
    """Parse the ``hive.txn.tables.valid.writeids`` value ``<txnId>$<list1>$<list2>…``."""
    if text == "":
        raise InvalidSnapshotError("ValidTxnWriteIdList '': no transaction id")
    head, *parts = text.split("$")
    txn_id = parse_long(head, text)
    lists = []
    for part in parts:
        write_ids = ValidWriteIdList.parse(part) if part else None
        if write_ids is None or write_ids.table_name is None:
            raise InvalidSnapshotError(
                f"ValidTxnWriteIdList {text!r}: {part!r} is not a table's ValidWriteIdList"
            )
        lists.append(write_ids)
    return ValidTxnWriteIdList.of(txn_id, *lists)


def format_txn_write_id_lists(value: ValidTxnWriteIdList) -> str:
    """Hive's string for a :class:`ValidTxnWriteIdList`; tables in insertion order."""
    return "$".join([str(value.txn_id), *(str(w) for w in value.tables.values())])
