"""The global transaction snapshot: Hive's ``ValidTxnList`` and its string form.

``<hwm>:<minOpenTxn>:<open>:<aborted>``, e.g. ``11:4:4,6,10:2,8``: every txn up to the high
watermark is committed except the open and aborted ones listed. ``minOpenTxn`` is
``9223372036854775807`` (Java's ``Long.MAX_VALUE``) when none is open; here it is ``None``. The
strings are exactly Hive's (``hive.txn.valid.txns``), so Hive and Trino read them back.

>>> v = ValidTxnList.parse("11:4:4,6,10:2,8")
>>> v.is_txn_valid(3), v.is_txn_valid(4), v.is_txn_aborted(8)
(True, False, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from acid_platform.errors import InvalidSnapshotError
from acid_platform.format.id_list import (
    RangeResponse,
    contains_id,
    format_id_list,
    min_open_or_none,
    naming_snapshot,
    normalise_ids,
    parse_id_list,
    parse_long,
    range_aborted,
    range_valid,
    require_text,
)
from acid_platform.format.names import LONG_MAX

VALID_TXNS_KEY = "hive.txn.valid.txns"


@dataclass(frozen=True)
class ValidTxnList:
    """The global transaction snapshot (Hive ``ValidReadTxnList``).

    Valid: ``txn <= high_watermark`` and not open or aborted. ``min_open_txn`` is ``None`` when
    no txn is open (Hive prints ``Long.MAX_VALUE``).

    >>> v = ValidTxnList.parse("1915:9223372036854775807::1899,1907")
    >>> v.is_txn_valid(1900), v.is_txn_aborted(1907), v.is_txn_valid(1916)
    (True, True, False)
    """

    high_watermark: int
    open_txns: Sequence[int] = ()
    aborted_txns: Sequence[int] = ()
    min_open_txn: int | None = None
    _exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        open_ids, aborted, exceptions, min_open = normalise_ids(
            "txn", self.high_watermark, self.open_txns, self.aborted_txns, self.min_open_txn
        )
        object.__setattr__(self, "open_txns", open_ids)
        object.__setattr__(self, "aborted_txns", aborted)
        object.__setattr__(self, "min_open_txn", min_open)
        object.__setattr__(self, "_exceptions", exceptions)

    @classmethod
    def parse(cls, text: str) -> ValidTxnList:
        """Read Hive's string (Hive 3 lists or Hive 4 ``a-b`` ranges).

        The empty string means "everything valid" (high watermark ``Long.MAX_VALUE``), as in Hive.
        """
        if require_text(text, "ValidTxnList") == "":
            return cls(LONG_MAX)
        fields = text.split(":")
        if not 2 <= len(fields) <= 4:
            raise InvalidSnapshotError(
                f"ValidTxnList {text!r}: expected 2 to 4 ':'-separated fields"
            )
        hwm = parse_long(fields[0], text)
        min_open = parse_long(fields[1], text)
        open_ids = parse_id_list(fields[2], text, ranges=True) if len(fields) > 2 else ()
        aborted = parse_id_list(fields[3], text, ranges=True) if len(fields) > 3 else ()
        with naming_snapshot(text):
            return cls(hwm, open_ids, aborted, min_open_or_none(min_open))

    def __str__(self) -> str:
        return self.to_string()

    def to_string(self, *, ranges: bool = False) -> str:
        """Hive's string. ``ranges=True`` writes runs of 5+ ids as ``a-b`` like Hive 4 does.

        The default (plain lists) is what Hive 3 writes and what every Hive version and Trino
        can read.
        """
        return format_id_list(
            None, self.high_watermark, self.min_open_txn, self.open_txns, self.aborted_txns, ranges
        )

    @property
    def exceptions(self) -> tuple[int, ...]:
        """All open and aborted txns, sorted."""
        return self._exceptions

    def is_txn_valid(self, txn_id: int) -> bool:
        """Committed as far as this snapshot knows."""
        return txn_id <= self.high_watermark and not contains_id(self._exceptions, txn_id)

    def is_txn_aborted(self, txn_id: int) -> bool:
        """Listed as aborted."""
        return contains_id(self.aborted_txns, txn_id)

    def is_txn_range_valid(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_txn_id, max_txn_id]`` is valid (Hive's rule)."""
        return range_valid(self.high_watermark, self._exceptions, min_txn_id, max_txn_id)

    def is_txn_range_aborted(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_txn_id, max_txn_id]`` is aborted."""
        return range_aborted(self.high_watermark, self.aborted_txns, min_txn_id, max_txn_id)
