"""Snapshots: Hive's ``ValidTxnList`` and ``ValidWriteIdList`` and their string forms.

A snapshot says which transactions (globally) and which write ids (per table) a reader sees:
everything up to a high watermark except a sorted list of exceptions, each open or aborted.
The strings are exactly Hive's, so they can be handed to Hive and Trino and read back from them:

* ``ValidTxnList``: ``<hwm>:<minOpenTxn>:<open>:<aborted>`` e.g. ``11:4:4,6,10:2,8``
* ``ValidWriteIdList``: ``<db.table>:<hwm>:<minOpenWriteId>:<open>:<aborted>``
* ``ValidTxnWriteIdList`` (``hive.txn.tables.valid.writeids``): ``<txnId>$<list>$<list>…``

``minOpen…`` is ``9223372036854775807`` (Java's ``Long.MAX_VALUE``) when there is none; here it
is ``None``. As in Hive's constructors, it is kept only when there are exceptions.

>>> w = ValidWriteIdList.parse("default.t:11:4:4,6,10:2,8")
>>> w.is_write_id_valid(3), w.is_write_id_valid(4), w.is_write_id_aborted(8)
(True, False, True)
>>> str(w)
'default.t:11:4:4,6,10:2,8'
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

from acid_platform.errors import InvalidSnapshotError

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

VALID_TXNS_KEY = "hive.txn.valid.txns"
VALID_WRITEIDS_KEY = "hive.txn.valid.writeids"
VALID_TABLES_WRITEIDS_KEY = "hive.txn.tables.valid.writeids"
COMPACTOR_VALID_TABLES_WRITEIDS_KEY = "hive.compactor.txn.tables.valid.writeids"

# Hive 4 writes runs of at least this many consecutive txn ids as "a-b" (ValidReadTxnList).
_MIN_RANGE_LENGTH = 5
# A range like "1-9223372036854775807" would expand to more ids than fit in memory.
_MAX_EXPANDED_IDS = 10_000_000


class RangeResponse(enum.Enum):
    """How much of a range of ids qualifies: none, some or all of it."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


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
        open_ids, aborted, exceptions, min_open = _normalise(
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
        if text == "":
            return cls(LONG_MAX)
        fields = text.split(":")
        if not 2 <= len(fields) <= 4:
            raise InvalidSnapshotError(
                f"ValidTxnList {text!r}: expected 2 to 4 ':'-separated fields"
            )
        hwm = _parse_long(fields[0], text)
        min_open = _parse_long(fields[1], text)
        open_ids = _parse_id_list(fields[2], text, ranges=True) if len(fields) > 2 else ()
        aborted = _parse_id_list(fields[3], text, ranges=True) if len(fields) > 3 else ()
        with _naming(text):
            return cls(hwm, open_ids, aborted, _min_open_or_none(min_open))

    def __str__(self) -> str:
        return self.to_string()

    def to_string(self, *, ranges: bool = False) -> str:
        """Hive's string. ``ranges=True`` writes runs of 5+ ids as ``a-b`` like Hive 4 does.

        The default (plain lists) is what Hive 3 writes and what every Hive version and Trino
        can read.
        """
        return _to_string(
            None, self.high_watermark, self.min_open_txn, self.open_txns, self.aborted_txns, ranges
        )

    @property
    def exceptions(self) -> tuple[int, ...]:
        """All open and aborted txns, sorted."""
        return self._exceptions

    def is_txn_valid(self, txn_id: int) -> bool:
        """Committed as far as this snapshot knows."""
        return txn_id <= self.high_watermark and not _contains(self._exceptions, txn_id)

    def is_txn_aborted(self, txn_id: int) -> bool:
        """Listed as aborted."""
        return _contains(self.aborted_txns, txn_id)

    def is_txn_range_valid(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_txn_id, max_txn_id]`` is valid (Hive's rule)."""
        return _range_valid(self.high_watermark, self._exceptions, min_txn_id, max_txn_id)

    def is_txn_range_aborted(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_txn_id, max_txn_id]`` is aborted."""
        return _range_aborted(self.high_watermark, self.aborted_txns, min_txn_id, max_txn_id)


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
        open_ids, aborted, exceptions, min_open = _normalise(
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
    ) -> ValidWriteIdList:
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
    def parse(cls, text: str) -> ValidWriteIdList:
        """Read Hive's string ``<db.table>:<hwm>:<minOpenWriteId>:<open>:<aborted>``.

        A table name ``null`` (any case) reads as ``None``. The empty string means "everything
        valid", as in Hive.
        """
        if text == "":
            return cls(None, LONG_MAX)
        table_name, hwm, min_open, open_ids, aborted = _parse_write_id_fields(text)
        with _naming(text):
            return cls(table_name, hwm, open_ids, aborted, min_open)

    def __str__(self) -> str:
        return self.to_string()

    def to_string(self) -> str:
        """Hive's string for this list."""
        return _to_string(
            "null" if self.table_name is None else self.table_name,
            self.high_watermark,
            self.min_open_write_id,
            self.open_write_ids,
            self.aborted_write_ids,
            ranges=False,
        )

    @property
    def exceptions(self) -> tuple[int, ...]:
        """All open and aborted write ids, sorted (Hive ``getInvalidWriteIds``)."""
        return self._exceptions

    def is_write_id_valid(self, write_id: int) -> bool:
        """Committed for this reader: ``<= high_watermark`` and not an exception."""
        return write_id <= self.high_watermark and not _contains(self._exceptions, write_id)

    def is_valid_base(self, write_id: int) -> bool:
        """Whether a compacted ``base_<write_id>`` may be used: below every open write id."""
        min_open = LONG_MAX if self.min_open_write_id is None else self.min_open_write_id
        return write_id < min_open and write_id <= self.high_watermark

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Listed as aborted."""
        return _contains(self.aborted_write_ids, write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_write_id, max_write_id]`` is valid (Hive's rule).

        Hive's shortcut is kept: if every exception is above ``max_write_id`` the answer is
        ``ALL`` (it assumes exceptions never lie above the high watermark, which holds for lists
        the metastore hands out).
        """
        return _range_valid(self.high_watermark, self._exceptions, min_write_id, max_write_id)

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """Whether none, some or all of ``[min_write_id, max_write_id]`` is aborted."""
        return _range_aborted(
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

    @classmethod
    def parse(cls, text: str) -> ValidCompactorWriteIdList:
        """Read Hive's string; exceptions above the high watermark are dropped."""
        if text == "":
            return cls(None, LONG_MAX)
        table_name, hwm, min_open, open_ids, aborted = _parse_write_id_fields(text)
        with _naming(text):
            return cls(table_name, hwm, open_ids, aborted, min_open)

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Every exception counts as aborted for the compactor."""
        return _contains(self._exceptions, write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """``ALL`` if the range ends at or below the high watermark, else ``NONE``."""
        return RangeResponse.ALL if self.high_watermark >= max_write_id else RangeResponse.NONE


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
    txn_id = _parse_long(head, text)
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


# --------------------------------------------------------------------------- helpers

_LONG_RE = re.compile(r"[+-]?[0-9]+")
_RANGE_RE = re.compile(r"([0-9]+)-([0-9]+)")


def _normalise(
    what: str,
    high_watermark: int,
    open_ids: Iterable[int],
    aborted_ids: Iterable[int],
    min_open: int | None,
    *,
    drop_above_watermark: bool = False,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int | None]:
    """Sorted, de-duplicated id tuples and ``min_open`` as Hive's constructors keep them.

    Hive keeps ``min_open`` only if exceptions were given, and decides that before the
    compactor list drops the exceptions above its high watermark.
    """
    _check_long(what, high_watermark)
    open_set, aborted_set = set(open_ids), set(aborted_ids)
    for value in (*open_set, *aborted_set):
        _check_long(what, value)
    both = open_set & aborted_set
    if both:
        raise InvalidSnapshotError(f"{what}s {sorted(both)} are listed both open and aborted")
    if min_open is not None:
        _check_long(what, min_open)
    kept = _min_open_or_none(min_open) if open_set or aborted_set else None
    if drop_above_watermark:
        open_set = {i for i in open_set if i <= high_watermark}
        aborted_set = {i for i in aborted_set if i <= high_watermark}
    open_sorted, aborted_sorted = tuple(sorted(open_set)), tuple(sorted(aborted_set))
    return open_sorted, aborted_sorted, tuple(sorted(open_set | aborted_set)), kept


@contextmanager
def _naming(text: str) -> Iterator[None]:
    """Add the offending string to errors raised while building a parsed snapshot."""
    try:
        yield
    except InvalidSnapshotError as e:
        raise InvalidSnapshotError(f"snapshot {text!r}: {e}") from None


def _min_open_or_none(min_open: int | None) -> int | None:
    return None if min_open is None or min_open == LONG_MAX else min_open


def _check_long(what: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSnapshotError(f"{what} {value!r} is not an integer")
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidSnapshotError(f"{what} {value} does not fit a Java long")


def _contains(sorted_ids: Sequence[int], value: int) -> bool:
    i = bisect_left(sorted_ids, value)
    return i < len(sorted_ids) and sorted_ids[i] == value


def _count_between(sorted_ids: Sequence[int], low: int, high: int) -> int:
    return max(0, bisect_right(sorted_ids, high) - bisect_left(sorted_ids, low))


def _range_valid(
    high_watermark: int, exceptions: tuple[int, ...], low: int, high: int
) -> RangeResponse:
    # ValidReaderWriteIdList/ValidReadTxnList.isXRangeValid, step for step.
    if low > high_watermark:
        return RangeResponse.NONE
    if exceptions and exceptions[0] > high:
        return RangeResponse.ALL
    count = max(0, high - high_watermark) + _count_between(exceptions, low, high)
    if count == 0:
        return RangeResponse.ALL
    if count == high - low + 1:
        return RangeResponse.NONE
    return RangeResponse.SOME


def _range_aborted(
    high_watermark: int, aborted: Sequence[int], low: int, high: int
) -> RangeResponse:
    if high_watermark < low:
        return RangeResponse.NONE
    count = _count_between(aborted, low, high)
    if count == 0:
        return RangeResponse.NONE
    if count == high - low + 1:
        return RangeResponse.ALL
    return RangeResponse.SOME


def _parse_write_id_fields(
    text: str,
) -> tuple[str | None, int, int | None, tuple[int, ...], tuple[int, ...]]:
    fields = text.split(":")
    if not 3 <= len(fields) <= 5:
        raise InvalidSnapshotError(
            f"ValidWriteIdList {text!r}: expected 3 to 5 ':'-separated fields"
        )
    table_name: str | None = None if fields[0].lower() == "null" else fields[0]
    hwm = _parse_long(fields[1], text)
    min_open = _min_open_or_none(_parse_long(fields[2], text))
    open_ids = _parse_id_list(fields[3], text, ranges=False) if len(fields) > 3 else ()
    aborted = _parse_id_list(fields[4], text, ranges=False) if len(fields) > 4 else ()
    return table_name, hwm, min_open, open_ids, aborted


def _parse_long(token: str, text: str) -> int:
    if _LONG_RE.fullmatch(token) is None:
        raise InvalidSnapshotError(f"snapshot {text!r}: {token!r} is not a number")
    value = int(token)
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidSnapshotError(f"snapshot {text!r}: {token} does not fit a Java long")
    return value


def _parse_id_list(token: str, text: str, *, ranges: bool) -> tuple[int, ...]:
    if token == "":
        return ()
    ids: list[int] = []
    for item in token.split(","):
        match = _RANGE_RE.fullmatch(item) if ranges else None
        if match is None:
            ids.append(_parse_long(item, text))
            continue
        low, high = _parse_long(match.group(1), text), _parse_long(match.group(2), text)
        if low > high or len(ids) + (high - low + 1) > _MAX_EXPANDED_IDS:
            raise InvalidSnapshotError(f"snapshot {text!r}: bad id range {item!r}")
        ids.extend(range(low, high + 1))
    return tuple(ids)


def _to_string(
    table_name: str | None,
    high_watermark: int,
    min_open: int | None,
    open_ids: Sequence[int],
    aborted_ids: Sequence[int],
    ranges: bool,
) -> str:
    head = [] if table_name is None else [table_name]
    min_open_text = str(LONG_MAX if min_open is None else min_open)
    join = _join_ranges if ranges else _join_plain
    return ":".join([*head, str(high_watermark), min_open_text, join(open_ids), join(aborted_ids)])


def _join_plain(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def _join_ranges(ids: Sequence[int]) -> str:
    out: list[str] = []
    start = 0
    while start < len(ids):
        end = start
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        if end - start + 1 >= _MIN_RANGE_LENGTH:
            out.append(f"{ids[start]}-{ids[end]}")
        else:
            out.extend(str(i) for i in ids[start : end + 1])
        start = end + 1
    return ",".join(out)
