"""What Hive's snapshot lists share: ids up to a high watermark minus sorted exceptions.

:class:`~acid_platform.format.txn_list.ValidTxnList` (transactions) and
:class:`~acid_platform.format.write_id_list.ValidWriteIdList` (one table's write ids) are both
"everything up to ``high_watermark`` except these open or aborted ids". This module holds that
shared machinery: :class:`RangeResponse`, normalising the id lists as Hive's constructors do,
the range rules, and the ``<hwm>:<minOpen>:<open>:<aborted>`` string encoding (plain lists, or
Hive 4's ``a-b`` runs).

>>> format_id_list(None, 11, 4, (4, 6, 10), (2, 8))
'11:4:4,6,10:2,8'
>>> range_valid(11, (2, 4, 6, 8, 10), 5, 7)
<RangeResponse.SOME: 'SOME'>
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from acid_platform.errors import InvalidSnapshotError
from acid_platform.format.names import LONG_MAX, LONG_MIN


class RangeResponse(enum.Enum):
    """How much of a range of ids qualifies: none, some or all of it."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


def normalise_ids(
    what: str,
    high_watermark: int,
    open_ids: Iterable[int],
    aborted_ids: Iterable[int],
    min_open: int | None,
    *,
    drop_above_watermark: bool = False,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int | None]:
    """``(open, aborted, exceptions, min_open)``: sorted, de-duplicated id tuples and
    ``min_open`` as Hive's constructors keep them.

    Hive keeps ``min_open`` only if exceptions were given, and decides that before the
    compactor's and cleaner's lists drop the exceptions above their high watermark
    (``drop_above_watermark``). ``what`` names the ids in errors (``"txn"``, ``"write id"``).
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
    kept = min_open_or_none(min_open) if open_set or aborted_set else None
    if drop_above_watermark:
        open_set = {i for i in open_set if i <= high_watermark}
        aborted_set = {i for i in aborted_set if i <= high_watermark}
    open_sorted, aborted_sorted = tuple(sorted(open_set)), tuple(sorted(aborted_set))
    return open_sorted, aborted_sorted, tuple(sorted(open_set | aborted_set)), kept


def min_open_or_none(min_open: int | None) -> int | None:
    """``None`` for "no open id" (Hive prints ``Long.MAX_VALUE`` for it)."""
    return None if min_open is None or min_open == LONG_MAX else min_open


def contains_id(sorted_ids: Sequence[int], value: int) -> bool:
    """Whether ``value`` is in the sorted ids (binary search)."""
    i = bisect_left(sorted_ids, value)
    return i < len(sorted_ids) and sorted_ids[i] == value


def range_valid(
    high_watermark: int, exceptions: Sequence[int], low: int, high: int
) -> RangeResponse:
    """How much of ``[low, high]`` is valid: Hive's ``ValidReaderWriteIdList`` /
    ``ValidReadTxnList`` ``is…RangeValid``, step for step (its shortcut included: exceptions
    all above ``high`` answer ``ALL``)."""
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


def range_aborted(
    high_watermark: int, aborted: Sequence[int], low: int, high: int
) -> RangeResponse:
    """How much of ``[low, high]`` is aborted."""
    if high_watermark < low:
        return RangeResponse.NONE
    count = _count_between(aborted, low, high)
    if count == 0:
        return RangeResponse.NONE
    if count == high - low + 1:
        return RangeResponse.ALL
    return RangeResponse.SOME


@contextmanager
def naming_snapshot(text: str) -> Iterator[None]:
    """Add the offending string to errors raised while building a parsed snapshot."""
    try:
        yield
    except InvalidSnapshotError as e:
        raise InvalidSnapshotError(f"snapshot {text!r}: {e}") from None


def parse_long(token: str, text: str) -> int:
    """One Java long of the snapshot string ``text``."""
    if _LONG_RE.fullmatch(token) is None:
        raise InvalidSnapshotError(f"snapshot {_clip(text)}: {_clip(token)} is not a number")
    if len(token.lstrip("+-0")) > _LONG_DIGITS:  # also keeps int() off huge digit strings
        raise InvalidSnapshotError(
            f"snapshot {_clip(text)}: {_clip(token)} does not fit a Java long"
        )
    value = int(token)
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidSnapshotError(f"snapshot {text!r}: {token} does not fit a Java long")
    return value


def require_text(text: object, kind: str) -> str:
    """The snapshot string to parse; :class:`InvalidSnapshotError` for anything else (None)."""
    if not isinstance(text, str):
        raise InvalidSnapshotError(f"{kind}: expected a string, not {type(text).__name__}")
    return text


def _clip(text: str, limit: int = 80) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def parse_id_list(token: str, text: str, *, ranges: bool) -> tuple[int, ...]:
    """A comma-separated id list of the snapshot string ``text`` (``a-b`` runs if ``ranges``)."""
    if token == "":
        return ()
    ids: list[int] = []
    for item in token.split(","):
        match = _RANGE_RE.fullmatch(item) if ranges else None
        if match is None:
            ids.append(parse_long(item, text))
            continue
        low, high = parse_long(match.group(1), text), parse_long(match.group(2), text)
        if low > high or len(ids) + (high - low + 1) > _MAX_EXPANDED_IDS:
            raise InvalidSnapshotError(f"snapshot {text!r}: bad id range {item!r}")
        ids.extend(range(low, high + 1))
    return tuple(ids)


def format_id_list(
    table_name: str | None,
    high_watermark: int,
    min_open: int | None,
    open_ids: Sequence[int],
    aborted_ids: Sequence[int],
    ranges: bool = False,
) -> str:
    """Hive's ``[<table>:]<hwm>:<minOpen>:<open>:<aborted>``; ``ranges`` writes runs of 5+
    consecutive ids as ``a-b`` (Hive 4's ``ValidReadTxnList``)."""
    head = [] if table_name is None else [table_name]
    min_open_text = str(LONG_MAX if min_open is None else min_open)
    join = _join_ranges if ranges else _join_plain
    return ":".join([*head, str(high_watermark), min_open_text, join(open_ids), join(aborted_ids)])


# --------------------------------------------------------------------------- helpers

# Hive 4 writes runs of at least this many consecutive txn ids as "a-b" (ValidReadTxnList).
_MIN_RANGE_LENGTH = 5
# A range like "1-9223372036854775807" would expand to more ids than fit in memory.
_MAX_EXPANDED_IDS = 10_000_000
_LONG_DIGITS = 19  # 9223372036854775807
_LONG_RE = re.compile(r"[+-]?[0-9]+")
_RANGE_RE = re.compile(r"([0-9]+)-([0-9]+)")


def _check_long(what: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSnapshotError(f"{what} {value!r} is not an integer")
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidSnapshotError(f"{what} {value} does not fit a Java long")


def _count_between(sorted_ids: Sequence[int], low: int, high: int) -> int:
    return max(0, bisect_right(sorted_ids, high) - bisect_left(sorted_ids, low))


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
