"""Decoding threads: how many, and how a stripe's columns are shared among them.

ORC decoding (decompression, run-length and decimal decoding, conversion to Arrow) is single
threaded per read call and runs without the GIL, so a large stripe is read faster as several
column groups decoded at once, each on its own file handle. Column groups beat stripe-level
parallelism here: a file written by one writer has few, uneven stripes (a 2.9M-row file holds a
2.2M-row and a 0.7M-row stripe), while every stripe has many columns.

``ACID_READ_THREADS`` sets the number of decoding threads (default: the CPU count; ``1`` turns
the feature off). Small stripes are read in one call: below :data:`PARALLEL_MIN_ROWS` rows the
thread hand-off costs more than it saves.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

T = TypeVar("T")

#: Stripes with fewer rows than this are decoded in one call.
PARALLEL_MIN_ROWS = 16_384

_pool: ThreadPoolExecutor | None = None
_local = threading.local()
_pool_lock = threading.Lock()


def read_threads() -> int:
    """The number of threads a stripe read may use (``ACID_READ_THREADS``, default CPU count)."""
    text = os.environ.get("ACID_READ_THREADS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    return max(os.cpu_count() or 1, 1)


def run_parallel(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``tasks`` at once and return their results in order.

    The calling thread and the shared pool's threads take tasks from one queue, so uneven tasks
    balance out, and a caller that is itself a pool thread runs everything inline (waiting for
    pool slots it holds could deadlock). Every task is finished or abandoned before the first
    error is raised.
    """
    if len(tasks) <= 1 or getattr(_local, "in_pool", False):
        return [task() for task in tasks]
    results: list[T | None] = [None] * len(tasks)
    errors: list[BaseException] = []
    queue = iter(enumerate(tasks))
    lock = threading.Lock()

    def work() -> None:
        while not errors:
            with lock:
                item = next(queue, None)
            if item is None:
                return
            i, task = item
            try:
                results[i] = task()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, on the caller
                errors.append(exc)
                return

    helpers = [_executor().submit(work) for _ in range(min(read_threads() - 1, len(tasks) - 1))]
    try:
        work()
    finally:
        for fut in helpers:
            # A helper still queued behind other work (the pool may be busy with a whole other
            # read) has nothing left to take: drop it rather than wait for it. One that started
            # is awaited: never leave a task running on a handle the caller will close.
            if not fut.cancel():
                fut.result()
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]


def column_groups(columns: Sequence[tuple[str, pa.DataType]], groups: int) -> list[list[str]]:
    """Split columns into at most ``groups`` groups of about equal decoding cost.

    Greedy: heaviest column first, into the lightest group. Each group keeps the given order.
    """
    groups = max(1, min(groups, len(columns)))
    loads = [0.0] * groups
    members: list[list[int]] = [[] for _ in range(groups)]
    order = sorted(range(len(columns)), key=lambda i: -_cost(columns[i][1]))
    for i in order:
        g = loads.index(min(loads))
        loads[g] += _cost(columns[i][1])
        members[g].append(i)
    return [[columns[i][0] for i in sorted(m)] for m in members if m]


def _cost(dtype: pa.DataType) -> float:
    """Relative decoding cost of a column (measured on TPC-DS store_sales: an ORC decimal
    decodes ~3x slower than a bigint)."""
    if pa.types.is_decimal(dtype):
        return 3.0
    if pa.types.is_string(dtype) or pa.types.is_binary(dtype) or pa.types.is_large_string(dtype):
        return 2.5
    if pa.types.is_timestamp(dtype):
        return 2.0
    if pa.types.is_nested(dtype):
        return 1.0 + sum(_cost(f.type) for f in _children(dtype))
    return 1.0


def _children(dtype: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(dtype):
        return list(dtype)
    if pa.types.is_map(dtype):
        return [pa.field("k", dtype.key_type), pa.field("v", dtype.item_type)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [pa.field("v", dtype.value_type)]
    return []


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=max(read_threads() - 1, 1),
                thread_name_prefix="acid-orc",
                initializer=_mark_pool_thread,
            )
        return _pool


def _mark_pool_thread() -> None:
    _local.in_pool = True


def _forget_pool() -> None:
    # A forked child inherits the executor object (and maybe a held lock) but not the threads.
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)
