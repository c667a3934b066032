"""The delete-set probe and the stripe reads of merge-on-read (issue 15): a vectorized probe that
answers as a plain set does, stripes whose key range holds no delete event read without a probe,
the ``row`` struct filtered child by child as Arrow's own filter would, and stripes whose
statistics show one (originalTransaction, bucket) read decoding only rowId: the same rows and
ROW__IDs as a read of all three key columns, whether a stripe's keys are constant or mixed, with
deletes on the first and last row of a stripe, on every row of one, and on rows with NULLs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_platform.format import (
    DeleteSet,
    EventWriter,
    ValidWriteIdList,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.format.merge_on_read import ReadStats
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.row_filter import filter_rows

B0, B1 = encode_bucket(0), encode_bucket(1)
ALL = 9223372036854775807


@pytest.mark.parametrize("order", ["ascending", "shuffled", "with duplicates"])
def test_probe_answers_as_a_set(order: str) -> None:
    rng = np.random.default_rng(7)
    n = 5_000
    owid = np.repeat([1, 1, 2, 3], n // 4).astype(np.int64)
    bucket = np.repeat([B0, B1, B0, B0], n // 4).astype(np.int32)
    rowid = np.concatenate([np.arange(n // 4) * 3 for _ in range(4)]).astype(np.int64)
    deleted_at = rng.choice(n, 400, replace=False)
    # events outside every probe's range too: below, above, other runs
    gone = (
        np.concatenate([owid[deleted_at], [1, 9]]),
        np.concatenate([bucket[deleted_at], [B0, B0]]),
        np.concatenate([rowid[deleted_at], [-5, 10**9]]),
    )
    ds = DeleteSet.from_arrays(*gone)
    truth = set(zip(*(a.tolist() for a in gone), strict=True))
    if order == "shuffled":
        perm = rng.permutation(n)
        owid, bucket, rowid = owid[perm], bucket[perm], rowid[perm]
    elif order == "with duplicates":
        rowid = rowid.copy()
        rowid[1::7] = rowid[0:-1:7]
    got = ds.contains(owid, bucket, rowid)
    want = [k in truth for k in zip(owid.tolist(), bucket.tolist(), rowid.tolist(), strict=True)]
    assert got.tolist() == want
    assert 0 < int(got.sum()) < n


def _base_in_stripes(path: Path, n: int) -> None:
    """A base of ``n`` rows in many stripes (small stripes, as a writer with a small stripe
    size cuts them), each with its key in ``hive.acid.key.index``."""
    # random values: pyarrow cuts stripes by encoded size, and a counting column encodes to little
    values = np.random.default_rng(3).integers(0, 1 << 60, n)
    rows = pa.table({"k": values})
    f = path / base_dir_name(1) / bucket_file_name(0)
    write_acid_version_file(f.parent)
    with EventWriter(f, rows.schema, stripe_size=1024, batch_size=1024) as w:
        for start in range(0, n, 1024):
            w.write(insert_events(rows.slice(start, 1024), 1, B0, first_row_id=start))


def _delete(path: Path, write_id: int, row_ids: list[int]) -> None:
    d = path / delete_delta_dir_name(write_id, write_id)
    write_acid_version_file(d)
    schema = pa.schema([("k", pa.int64())])
    with EventWriter(d / bucket_file_name(0), schema) as w:
        w.write(delete_events([1] * len(row_ids), [B0] * len(row_ids), row_ids, write_id, schema))


@pytest.mark.parametrize("with_row_id", [False, True])
def test_stripes_whose_key_range_misses_every_delete_are_not_probed(
    tmp_path: Path, with_row_id: bool
) -> None:
    n = 200_000
    _base_in_stripes(tmp_path, n)
    stripes = _stripes(tmp_path)
    assert stripes >= 4
    last_rows = [n - 1, n - 3]  # both in the last stripe
    _delete(tmp_path, 2, last_rows)
    stats = ReadStats()
    out = read_acid(
        tmp_path, ValidWriteIdList.parse(f"db.t:2:{ALL}::"), with_row_id=with_row_id, stats=stats
    )
    values = np.random.default_rng(3).integers(0, 1 << 60, n)
    keep = np.ones(n, bool)
    keep[last_rows] = False
    assert out.column("k").to_numpy().tolist() == values[keep].tolist()
    assert stats.rows_deleted == 2
    assert stats.probes_skipped == stripes - 1
    if with_row_id:
        row_ids = out.column("row__id").combine_chunks().field("rowid").to_numpy()
        assert row_ids.tolist() == np.flatnonzero(keep).tolist()


def _stripes(table: Path) -> int:
    f = table / base_dir_name(1) / bucket_file_name(0)
    with OrcDataFile(pafs.LocalFileSystem(), str(f)) as orc:
        return orc.num_stripes


@pytest.mark.parametrize("nulls", [False, True])
def test_struct_filtered_child_by_child_equals_arrows_filter(nulls: bool) -> None:
    n = 1_000
    mask = None if not nulls else pa.array([i % 5 == 0 for i in range(n)])
    row = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array([str(i) if i % 3 else None for i in range(n)])],
        names=["a", "b"],
        mask=mask,
    )
    batch = pa.RecordBatch.from_arrays(
        [pa.array(np.arange(n, dtype=np.int64)), row], names=["rowId", "row"]
    ).slice(7, 900)
    keep = np.array([i % 4 != 1 for i in range(900)])
    got = filter_rows(batch, keep)
    assert got.equals(batch.filter(pa.array(keep)))
    assert got.num_rows == int(keep.sum())


# --------------------------------------------------------------------------- constant keys
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.float64())])
# (write id, statement id, rows): a compacted base holds several write ids and statements; these
# rows against 8,192-row stripes gives stripes of one key pair and stripes that mix two
SECTIONS = [(1, 0, 12_000), (1, 1, 5_000), (2, 0, 10_000), (3, 0, 9_000)]


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << 60, n)  # random: pyarrow cuts stripes by encoded size
    v = rng.random(n)
    return pa.table({"k": values, "v": pa.array(v, mask=rng.random(n) < 0.2)}, schema=SCHEMA)


def _base(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The base file, and the (owid, bucket, rowid) of its rows in file order."""
    f = path / base_dir_name(3) / bucket_file_name(0)
    write_acid_version_file(f.parent)
    parts, keys = [], []
    for seed, (write_id, stmt, n) in enumerate(SECTIONS):
        rows = _rows(n, seed)
        prop = encode_bucket(0, stmt)
        parts.append(insert_events(rows, write_id, prop))
        keys.append((np.full(n, write_id), np.full(n, prop), np.arange(n)))
    events = pa.concat_tables(parts)
    with EventWriter(f, SCHEMA, stripe_size=1024, batch_size=1024) as w:
        for start in range(0, events.num_rows, 1024):
            w.write(events.slice(start, 1024))
    owid, bucket, rowid = (np.concatenate([k[i] for k in keys]) for i in range(3))
    return owid, bucket, rowid


def _expected_rows() -> pa.Table:
    return pa.concat_tables([_rows(n, seed) for seed, (_, _, n) in enumerate(SECTIONS)])


def _stripe_starts(path: Path) -> list[int]:
    f = path / base_dir_name(3) / bucket_file_name(0)
    with OrcDataFile(pafs.LocalFileSystem(), str(f)) as orc:
        sizes = orc.stripe_rows()
        consts = [orc.constant_keys(i) for i in range(orc.num_stripes)]
    # both kinds of stripe are there
    assert any(c is not None for c in consts) and any(c is None for c in consts), consts
    return [int(s) for s in np.cumsum([0, *sizes])]


@pytest.mark.parametrize("cap", [None, 0])  # 0: the delete events merged in key order
@pytest.mark.parametrize("with_row_id", [False, True])
def test_constant_and_mixed_stripes_read_the_same_rows(
    tmp_path: Path, with_row_id: bool, cap: int | None
) -> None:
    owid, bucket, rowid = _base(tmp_path)
    n = len(rowid)
    starts = _stripe_starts(tmp_path)
    victims = set()
    for s, e in zip(starts[:-1], starts[1:], strict=True):
        victims |= {s, e - 1}  # first and last row of every stripe
    victims |= set(range(starts[2], starts[3]))  # every row of one stripe
    rng = np.random.default_rng(5)
    victims |= set(rng.choice(n, 300, replace=False).tolist())
    gone = np.array(sorted(victims))
    d = tmp_path / delete_delta_dir_name(4, 4)
    write_acid_version_file(d)
    with EventWriter(d / bucket_file_name(0), SCHEMA) as w:
        w.write(delete_events(owid[gone], bucket[gone], rowid[gone], 4, SCHEMA))
    stats = ReadStats()
    out = read_acid(
        tmp_path,
        ValidWriteIdList.parse(f"db.t:4:{ALL}::"),
        with_row_id=with_row_id,
        stats=stats,
        delete_events_cap=cap,
    )
    keep = np.ones(n, bool)
    keep[gone] = False
    want = _expected_rows().filter(pa.array(keep))
    assert out.select(["k", "v"]).equals(want)
    assert stats.rows_deleted == len(gone)
    assert stats.delete_sort_merges == (1 if cap == 0 else 0)
    if with_row_id:
        ids = out.column("row__id").combine_chunks()
        assert ids.field("writeid").to_numpy().tolist() == owid[keep].tolist()
        assert ids.field("bucketid").to_numpy().tolist() == bucket[keep].tolist()
        assert ids.field("rowid").to_numpy().tolist() == rowid[keep].tolist()


def test_row_ids_kept_across_constant_and_mixed_stripes(tmp_path: Path) -> None:
    owid, bucket, rowid = _base(tmp_path)
    pick = np.random.default_rng(9).choice(len(rowid), 200, replace=False)
    wanted = DeleteSet.from_arrays(owid[pick], bucket[pick], rowid[pick])
    out = read_acid(
        tmp_path, ValidWriteIdList.parse(f"db.t:4:{ALL}::"), with_row_id=True, row_ids=wanted
    )
    ids = out.column("row__id").combine_chunks()
    got = set(
        zip(
            ids.field("writeid").to_pylist(),
            ids.field("bucketid").to_pylist(),
            ids.field("rowid").to_pylist(),
            strict=True,
        )
    )
    picked = (owid[pick].tolist(), bucket[pick].tolist(), rowid[pick].tolist())
    assert got == set(zip(*picked, strict=True))
    keep = np.zeros(len(rowid), bool)
    keep[pick] = True
    assert out.select(["k", "v"]).equals(_expected_rows().filter(pa.array(keep)))


_KEYS = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 2, 7, 2**40, 2**62]),
        st.sampled_from([B0, B1, encode_bucket(5, 3), -1]),
        st.one_of(st.integers(0, 50), st.integers(-(2**62), 2**62)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(_KEYS, max_size=4), probes=_KEYS)
def test_delete_set_from_chunks_is_the_set_of_its_keys(
    chunks: list[list[tuple[int, int, int]]], probes: list[tuple[int, int, int]]
) -> None:
    """Keys packed into one sortable integer when their ranges fit in 63 bits, sorted three
    ways otherwise: either way the set holds each key once, in key order, and nothing else."""
    ds = DeleteSet.from_chunks(
        (
            np.array([k[0] for k in c], np.int64),
            np.array([k[1] for k in c], np.int32),
            np.array([k[2] for k in c], np.int64),
        )
        for c in chunks
    )
    truth = {k for c in chunks for k in c}
    assert len(ds) == len(truth)
    asked = sorted(truth) + probes
    got = ds.contains(
        np.array([k[0] for k in asked], np.int64),
        np.array([k[1] for k in asked], np.int32),
        np.array([k[2] for k in asked], np.int64),
    )
    assert got.tolist() == [k in truth for k in asked]
    keys = sorted(truth)
    for lo, hi in zip(keys, keys[1:], strict=False):  # nothing between two neighbours
        assert ds.intersects(lo, hi)
        assert not ds.intersects(lo, (hi[0], hi[1], hi[2] - 1))
