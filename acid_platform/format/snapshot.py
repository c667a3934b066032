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

from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidWriteIdList


@dataclass(frozen=True)
class Snapshot:
    """The transactions and the table's write ids a read sees.

    ``valid_txns`` judges the ``_v<txn>`` suffix of compacted directories; ``None`` (a snapshot
    given only as a write id list, e.g. by a Spark option) treats every suffix as visible.
    """

    valid_txns: ValidTxnList | None
    write_ids: ValidWriteIdList


__all__ = ["Snapshot"]
