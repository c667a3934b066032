"""The object-store read path for large files: a windowed reader serves ORC's many small reads
from a few large ones, and returns exactly the bytes (and rows) a direct read returns."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acid_platform.format.fs import WindowedReader


def test_random_reads_return_the_files_bytes(tmp_path: Path) -> None:
    data = np.random.default_rng(3).bytes(1_000_003)
    (tmp_path / "f").write_bytes(data)
    fs = pafs.LocalFileSystem()
    reader = WindowedReader(fs.open_input_file(str(tmp_path / "f")), window=4096, keep=3)
    rng = random.Random(5)
    for _ in range(2000):
        start = rng.randrange(len(data))
        n = rng.choice([0, 1, 17, 4095, 4096, 4097, 10_000, 50_000])
        reader.seek(start)
        assert reader.read(n) == data[start : start + n]
        assert reader.tell() == min(len(data), start + n)
    reader.seek(-10, 2)
    assert reader.read() == data[-10:]


def test_an_orc_file_reads_the_same_rows_through_few_large_reads(tmp_path: Path) -> None:
    n = 400_000
    rng = np.random.default_rng(1)
    table = pa.table({"k": np.arange(n), "a": rng.random(n), "b": rng.random(n)})
    path = str(tmp_path / "t.orc")
    po.write_table(table, path, stripe_size=1 << 20)
    fs = pafs.LocalFileSystem()
    windowed = WindowedReader(fs.open_input_file(path), window=1 << 20, keep=8)
    got = po.ORCFile(pa.PythonFile(windowed, mode="r")).read()
    assert got.equals(po.ORCFile(path).read())
    size = fs.get_file_info(path).size
    assert windowed.fetches <= 2 * (size // (1 << 20) + 1)  # each window fetched about once
