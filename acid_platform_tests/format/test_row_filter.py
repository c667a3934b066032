"""filter_rows drops the same rows as Arrow's filter, for every column shape a read meets."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

from acid_platform.format.row_filter import filter_rows

N = 1_000


def _column(kind: str, rng: np.random.Generator, null_rate: float) -> pa.Array:
    valid = rng.random(N) >= null_rate
    ints = rng.integers(-(10**6), 10**6, N)
    values: list[object]
    if kind == "int64":
        values = ints.tolist()
    elif kind == "int8":
        values = (ints % 100).tolist()
    elif kind == "double":
        values = (ints / 7).tolist()
    elif kind == "bool":
        values = (ints % 3 == 0).tolist()
    elif kind == "decimal":
        values = [decimal.Decimal(int(v)).scaleb(-2) for v in ints]
    elif kind == "date":
        values = [dt.date(2000, 1, 1) + dt.timedelta(days=int(v) % 9000) for v in ints]
    elif kind == "timestamp":
        values = [dt.datetime(2000, 1, 1) + dt.timedelta(seconds=int(v)) for v in ints]
    elif kind == "string":
        values = [f"s{v}" * (int(v) % 4) for v in ints]
    elif kind == "list":
        values = [[int(v), int(v) + 1] for v in ints]
    else:
        raise AssertionError(kind)
    types = {"decimal": pa.decimal128(9, 2), "int8": pa.int8(), "timestamp": pa.timestamp("us")}
    return pa.array(
        [v if ok else None for v, ok in zip(values, valid, strict=True)], type=types.get(kind)
    )


KINDS = ["int64", "int8", "double", "bool", "decimal", "date", "timestamp", "string", "list"]


def _keep(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    keep = rng.random(n) >= 0.1
    if shape == "first_last":
        keep[:] = True
        keep[[0, n - 1]] = False
    elif shape == "none":
        keep[:] = False
    elif shape == "all":
        keep[:] = True
    elif shape == "most":
        keep = rng.random(n) < 0.1
    return keep


@pytest.mark.parametrize("shape", ["random", "first_last", "none", "all", "most"])
@pytest.mark.parametrize("null_rate", [0.0, 0.05, 1.0])
def test_filter_rows_equals_arrows_filter(shape: str, null_rate: float) -> None:
    rng = np.random.default_rng(len(shape) * 10 + int(null_rate * 100))
    # 2 of each kind: more than 8 nullable columns (two validity groups)
    cols = [_column(k, rng, null_rate) for k in KINDS for _ in range(2)]
    row = pa.StructArray.from_arrays(cols[:4], names=["a", "b", "c", "d"])
    batch = pa.RecordBatch.from_arrays(
        [*cols, row], names=[f"c{i}" for i in range(len(cols))] + ["row"]
    )
    for sliced in (batch, batch.slice(3, N - 20), batch.slice(13, 1)):
        keep = _keep(rng, sliced.num_rows, shape)
        got = filter_rows(sliced, keep)
        got.validate(full=True)
        assert got.equals(sliced.filter(pa.array(keep)))
        assert got.to_pylist() == [r for r, k in zip(sliced.to_pylist(), keep, strict=True) if k]


def test_struct_with_nulls_and_sliced_children() -> None:
    rng = np.random.default_rng(3)
    child = _column("int64", rng, 0.2).slice(5, N - 5)
    row = pa.StructArray.from_arrays(
        [child, _column("string", rng, 0.2).slice(0, N - 5)],
        names=["x", "y"],
        mask=pa.array(rng.random(N - 5) < 0.1),
    )
    batch = pa.RecordBatch.from_arrays([row], names=["row"])
    keep = _keep(rng, batch.num_rows, "random")
    got = filter_rows(batch, keep)
    got.validate(full=True)
    assert got.equals(batch.filter(pa.array(keep)))


def test_dictionary_column() -> None:
    arr = pa.array(["a", None, "b", "a"] * 10).dictionary_encode()
    batch = pa.RecordBatch.from_arrays([arr], names=["d"])
    keep = np.array([True, False, True, True] * 10)
    assert filter_rows(batch, keep).equals(batch.filter(pa.array(keep)))
