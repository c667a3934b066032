"""``Snapshot``: what one read of one table sees — the global ``ValidTxnList`` (:mod:`.txn_list`)
and the table's ``ValidWriteIdList`` (:mod:`.write_id_list`), taken together at the start of a
statement.

>>> from acid_platform.format import ValidTxnList, ValidWriteIdList
>>> s = Snapshot(ValidTxnList.parse("5:9223372036854775807::"),
...              ValidWriteIdList.parse("db.t:3:9223372036854775807::"))
>>> s.write_ids.is_write_id_valid(3)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from acid_platform.format.file_record import TableRecord
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidWriteIdList


@dataclass(frozen=True)
class Snapshot:
    """The transactions and the table's write ids a read sees.

    ``valid_txns`` judges the ``_v<txn>`` suffix of compacted directories; ``None`` (a snapshot
    given only as a write id list, e.g. by a Spark option) treats every suffix as visible.
    ``files`` is the table's file record, loaded with the snapshot (one query per table).
    """

    valid_txns: ValidTxnList | None
    write_ids: ValidWriteIdList
    #: What committed writes recorded they wrote (:mod:`.file_record`): a read checks its
    #: listing against it. ``None``: not known (read as Hive does, unchecked).
    files: TableRecord | None = None


__all__ = ["Snapshot"]
