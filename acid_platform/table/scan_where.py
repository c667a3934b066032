"""What a scan reads of a table: :class:`ScanFilter`, the planner's (:mod:`.scan`) view of a
filter — built from a Hive predicate by :mod:`.scan_filter`, or from Spark's pushed filters.

Kept apart from :mod:`.scan_filter` (which parses predicates with sqlglot) so that a process
that only reads splits (a Spark Python worker) imports no SQL parser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

#: DNF conjunction handed to :func:`~acid_platform.format.read_split` (``[(col, op, value)]``).
Filters = list[tuple[str, str, Any]]


@dataclass(frozen=True)
class ScanFilter:
    """How a scan narrows what it reads.

    ``partitions`` gets the typed partition values of the listed partitions (one row each, in
    listing order) and returns the indices of those to read. ``pushed`` is a conjunction the
    reader applies exactly (stripe statistics, then rows). ``rows`` gets rows read (holding at
    least ``row_columns``) and returns the indices of those to keep.
    """

    partitions: Callable[[pa.Table], Sequence[int]] | None = None
    pushed: Filters | None = None
    rows: Callable[[pa.Table], np.ndarray] | None = None
    row_columns: tuple[str, ...] = ()
