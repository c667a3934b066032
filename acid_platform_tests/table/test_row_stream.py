"""RowStream: releases run once, last registered first, whether the rows were read to the end,
left half read and closed, or never read."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from acid_platform.table.stream import RowStream

SCHEMA = pa.schema([("a", pa.int64())])


def _batches(log: list[str]) -> Iterator[pa.RecordBatch]:
    try:
        for i in range(3):
            yield pa.record_batch({"a": [i]}, schema=SCHEMA)
    finally:
        log.append("batches closed")


def test_read_to_the_end_releases_once_in_reverse_order() -> None:
    log: list[str] = []
    rows = RowStream(SCHEMA, _batches(log), lambda: log.append("first"))
    rows.on_close(lambda: log.append("second"))
    assert rows.read_all().column("a").to_pylist() == [0, 1, 2]
    rows.close()
    assert log == ["batches closed", "second", "first"]


def test_closing_a_half_read_stream_closes_its_source() -> None:
    log: list[str] = []
    with RowStream(SCHEMA, _batches(log), lambda: log.append("released")) as rows:
        assert next(iter(rows)).num_rows == 1
    assert log == ["batches closed", "released"]
    late: list[str] = []
    rows.on_close(lambda: late.append("ran at once"))
    assert late == ["ran at once"]


def test_a_failing_release_does_not_skip_the_others() -> None:
    log: list[str] = []

    def boom() -> None:
        raise OSError("lease service down")

    rows = RowStream(SCHEMA, iter([]), lambda: log.append("cursor closed"))
    rows.on_close(boom)
    with pytest.raises(OSError, match="lease service down"):
        rows.close()
    assert log == ["cursor closed"]
    assert rows.to_reader().read_all().num_rows == 0
