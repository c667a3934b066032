"""One table's write id snapshot: Hive's ``ValidWriteIdList`` and the compactor's and cleaner's
variants, with their string form ``<db.table>:<hwm>:<minOpenWriteId>:<open>:<aborted>``.

* :class:`ValidWriteIdList` — a reader's list (Hive ``ValidReaderWriteIdList``);
* :class:`ValidCompactorWriteIdList` — what a compactor may rewrite (never past an open id);
* :class:`CleanerWriteIdList` — what a cleaner may judge (never past the compaction's id).

The strings are exactly Hive's (``hive.txn.valid.writeids``), so they can be handed to Hive and
Trino and read back. ``minOpenWriteId`` is ``9223372036854775807`` when none is open; here it is
``None``. As in Hive's constructors, it is kept only when there are exceptions.

>>> w = ValidWriteIdList.parse("default.t:11:4:4,6,10:2,8")
>>> w.is_write_id_valid(3), w.is_write_id_valid(4), w.is_write_id_aborted(8)
(True, False, True)
>>> str(w)
'default.t:11:4:4,6,10:2,8'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Self

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

VALID_WRITEIDS_KEY = "hive.txn.valid.writeids"


@dataclass(frozen=True)
class ValidWriteIdList:
    """One table's write id snapshot (Hive ``ValidReaderWriteIdList``).

    ``table_name`` is ``db.table`` (``None`` prints as ``null``). ``min_open_write_id`` is
    ``None`` when no write id is open; :meth:`of` derives it from the open ids the way the
    metastore does.

    >>> ValidWriteIdList.of("t1", 5, open_write_ids=[2, 4]).to_string()
    't1:5:2:2,4:'
    """

    table_name: str | None
    high_watermark: int
    open_write_ids: Sequence[int] = ()
    aborted_write_ids: Sequence[int] = ()
    min_open_write_id: int | None = None
    _exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _DROP_ABOVE_WATERMARK: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.table_name is not None and (":" in self.table_name or "$" in self.table_name):
            raise InvalidSnapshotError(
                f"table name {self.table_name!r} cannot appear in a ValidWriteIdList string"
            )
        open_ids, aborted, exceptions, min_open = normalise_ids(
            "write id",
            self.high_watermark,
            self.open_write_ids,
            self.aborted_write_ids,
            self.min_open_write_id,
            drop_above_watermark=self._DROP_ABOVE_WATERMARK,
        )
        object.__setattr__(self, "open_write_ids", open_ids)
        object.__setattr__(self, "aborted_write_ids", aborted)
        object.__setattr__(self, "min_open_write_id", min_open)
        object.__setattr__(self, "_exceptions", exceptions)

    @classmethod
    def of(
        cls,
        table_name: str | None,
        high_watermark: int,
        open_write_ids: Iterable[int] = (),
        aborted_write_ids: Iterable[int] = (),
    ) -> Self:
        """Build a list with ``min_open_write_id`` = the smallest open id, as the metastore does."""
        open_ids = tuple(open_write_ids)
        return cls(
            table_name,
            high_watermark,
            open_ids,
            tuple(aborted_write_ids),
            min(open_ids) if open_ids else None,
        )

    @classmethod
    def parse(cls, text: str) -> Self:
        """Read Hive's string ``<db.table>:<hwm>:<minOpenWriteId>:<open>:<aborted>``.

        A table name ``null`` (any case) reads as ``None``. The empty string means "everything
        valid", as in Hive. The compactor's and cleaner's lists drop exceptions above the high
        watermark.
        """
        if require_text(text, "ValidWriteIdList") == "":
            return cls(None, LONG_MAX)
        fields = text.split(":")
        if not 3 <= len(fields) <= 5:
            raise InvalidSnapshotError(
                f"ValidWriteIdList {text!r}: expected 3 to 5 ':'-separated fields"
            )
        table_name: str | None = None if fields[0].lower() == "null" else fields[0]
        hwm = parse_long(fields[1], text)
        min_open = min_open_or_none(parse_long(fields[2], text))
        open_ids = parse_id_list(fields[3], text, ranges=False) if len(fields) > 3 else ()
        aborted = parse_id_list(fields[4], text, ranges=False) if len(fields) > 4 else ()
        with naming_snapshot(text):
            return cls(table_name, hwm, open_ids, aborted, min_open)

    def __str__(self) -> str:
        return self.to_string()

    def to_string(self) -> str:
        """Hive's string for this list."""
        return format_id_list(
            "null" if self.table_name is None else self.table_name,
            self.high_watermark,
            self.min_open_write_id,
            self.open_write_ids,
            self.aborted_write_ids,
        )

    @property
    def exceptions(self) -> tuple[int, ...]:
        """All open and aborted write ids, sorted (Hive ``getInvalidWriteIds``)."""
        return self._exceptions

    def is_write_id_valid(self, write_id: int) -> bool:
        """Committed for this reader: ``<= high_watermark`` and not an exception."""
        return write_id <= self.high_watermark and not contains_id(self._exceptions, write_id)

    def is_valid_base(self, write_id: int) -> bool:
        """Whether a compacted ``base_<write_id>`` may be used: below every open write id."""
        min_open = LONG_MAX if self.min_open_write_id is None else self.min_open_write_id
        return write_id < min_open and write_id <= self.high_watermark

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Listed as aborted."""
        return contains_id(self.aborted_write_ids, write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_write_id, max_write_id]`` is valid (Hive's rule).

        Hive's shortcut is kept: if every exception is above ``max_write_id`` the answer is
        ``ALL`` (it assumes exceptions never lie above the high watermark, which holds for lists
        the metastore hands out).
        """
        return range_valid(self.high_watermark, self._exceptions, min_write_id, max_write_id)

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_write_id, max_write_id]`` is aborted."""
        return range_aborted(
            self.high_watermark, self.aborted_write_ids, min_write_id, max_write_id
        )


@dataclass(frozen=True)
class ValidCompactorWriteIdList(ValidWriteIdList):
    """The compactor's write id list (Hive ``ValidCompactorWriteIdList``).

    The high watermark is the highest write id below the lowest open one; every exception is an
    aborted write id (exceptions above the high watermark are dropped on construction). A range
    is ``ALL`` valid when it lies entirely at or below the high watermark, else ``NONE``: a
    compactor must never produce a delta that covers an unresolved write id.

    >>> str(ValidCompactorWriteIdList("t1", 8, aborted_write_ids=(7, 9, 10)))
    't1:8:9223372036854775807::7'
    """

    _DROP_ABOVE_WATERMARK: ClassVar[bool] = True

    @classmethod
    def from_reader(cls, reader: ValidWriteIdList) -> ValidCompactorWriteIdList:
        """Hive's ``TxnUtils.createValidCompactWriteIdList``.

        With open write ids, the high watermark drops to (lowest open id - 1) and only the
        aborted ids below it remain; without, the reader's high watermark stays.
        """
        min_open = reader.min_open_write_id
        if min_open is None and reader.open_write_ids:
            min_open = reader.open_write_ids[0]
        hwm = reader.high_watermark if min_open is None else min_open - 1
        aborted = tuple(w for w in reader.aborted_write_ids if w <= hwm)
        return cls(reader.table_name, hwm, (), aborted, min_open)

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Every exception counts as aborted for the compactor."""
        return contains_id(self._exceptions, write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """``ALL`` if the range ends at or below the high watermark, else ``NONE``."""
        return RangeResponse.ALL if self.high_watermark >= max_write_id else RangeResponse.NONE


@dataclass(frozen=True)
class CleanerWriteIdList(ValidWriteIdList):
    """Hive's ``ValidCleanerWriteIdList``: a reader list that never reaches past its watermark.

    A range ending above the high watermark is not valid (``NONE``) and ids above it are not
    aborted, so the cleaner never deletes or shadows anything above what the compaction covered.

    >>> w = CleanerWriteIdList.from_reader(ValidWriteIdList.of("db.t", 9, [8], [3, 9]), cap=7)
    >>> str(w), w.is_write_id_range_valid(5, 8)
    ('db.t:7:8::3', <RangeResponse.NONE: 'NONE'>)
    """

    _DROP_ABOVE_WATERMARK: ClassVar[bool] = True

    @classmethod
    def from_reader(cls, reader: ValidWriteIdList, cap: int | None = None) -> CleanerWriteIdList:
        """The cleaner's list from a reader list, capped at ``cap`` (``None``: not capped)."""
        hwm = reader.high_watermark if cap is None else min(reader.high_watermark, cap)
        return cls(
            reader.table_name,
            hwm,
            tuple(w for w in reader.open_write_ids if w <= hwm),
            tuple(w for w in reader.aborted_write_ids if w <= hwm),
            reader.min_open_write_id,
        )

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """``NONE`` for a range ending above the high watermark, else the reader's answer."""
        if max_write_id > self.high_watermark:
            return RangeResponse.NONE
        return super().is_write_id_range_valid(min_write_id, max_write_id)

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Aborted at or below the high watermark."""
        return write_id <= self.high_watermark and super().is_write_id_aborted(write_id)
