"""``RowStream``: rows read as they are consumed, and what must be released once they are.

A streamed query holds things while its rows flow: the reader leases of its scans' snapshots, the
engine's cursor, a read-only transaction. A :class:`RowStream` carries the batches and those
releases together, and runs the releases exactly once — when the batches are exhausted, on
:meth:`RowStream.close`, or on leaving a ``with`` block — last registered first.

>>> import pyarrow as pa
>>> done = []
>>> s = RowStream(pa.schema([("a", pa.int64())]), iter([pa.record_batch({"a": [1, 2]})]))
>>> s.on_close(lambda: done.append("released"))
>>> s.read_all().num_rows, done
(2, ['released'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa


class RowStream:
    """Batches of ``schema`` from ``batches``, with releases run once when done (module docs)."""

    def __init__(
        self,
        schema: pa.Schema,
        batches: Iterable[pa.RecordBatch],
        release: Callable[[], None] | None = None,
    ) -> None:
        self.schema = schema
        self._batches = iter(batches)
        self._releases: list[Callable[[], None]] = [release] if release is not None else []
        self._closed = False

    def on_close(self, release: Callable[[], None]) -> None:
        """Run ``release`` when the stream is done (before the releases registered earlier)."""
        if self._closed:
            release()
            return
        self._releases.append(release)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches
        finally:
            self.close()

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader`` (released when it is exhausted)."""
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))

    def read_all(self) -> pa.Table:
        """Every remaining row in one table; releases the stream."""
        with self:
            return pa.Table.from_batches(list(self), schema=self.schema)

    def close(self) -> None:
        """Stop reading and run the releases (idempotent); the first failure is raised after
        every release ran."""
        if self._closed:
            return
        self._closed = True
        close = getattr(self._batches, "close", None)
        releases = ([close] if callable(close) else []) + self._releases[::-1]
        self._releases = []
        failure: BaseException | None = None
        for release in releases:
            try:
                release()
            except BaseException as exc:  # noqa: BLE001 - re-raised after the others ran
                failure = failure or exc
        if failure is not None:
            raise failure

    def __enter__(self) -> RowStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RowStream"]
