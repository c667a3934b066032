"""Which bucket a row belongs to: Hive's bucketing hash, versions 1 and 2.

A bucketed table sends each row to bucket ``(hash & 0x7FFFFFFF) % num_buckets``, where ``hash``
folds the bucketing columns as ``h = 31 * h + field_hash`` (from 0, NULL hashes to 0) in 32-bit
Java arithmetic. The field hash depends on the table's ``bucketing_version``:

* version 1 (``ObjectInspectorUtils.getBucketHashCodeOld``): Java ``hashCode``-style rules;
* version 2 (``ObjectInspectorUtils.getBucketHashCode``, Hive 3 default): Murmur3 32-bit with
  seed 104729 over the value's big-endian bytes (UTF-8 for text), Hive's variant of the tail.

``bucket_for`` answers for one row, ``bucket_ids`` for Arrow columns (vectorised, same answers).
The per-type rules live in :mod:`.hive_hash` (one value) and :mod:`.bucket_columns` (numpy).

>>> bucket_hash([1], ["int"])
1321152925
>>> bucket_for(["Trino rocks"], ["string"], 4, version=1)
2
>>> import pyarrow as pa
>>> bucket_ids([pa.array([0, 1, None])], ["int"], 2).tolist()
[1, 1, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from acid_platform.format.bucket_columns import column_hashes
from acid_platform.format.hive_hash import (
    MASK32,
    MURMUR3_SEED,
    check_bucketing_version,
    check_num_buckets,
    field_hash,
    murmur3_from,
    parse_hive_type,
    to_signed32,
)


def bucket_hash(values: Sequence[object], hive_types: Sequence[str], version: int = 2) -> int:
    """The bucketing hash of one row, as a signed 32-bit Java int.

    ``values`` are Python values of the bucketing columns in order (``None`` is NULL).

    >>> bucket_hash([0], ["int"]), bucket_hash([0], ["int"], version=1)
    (1362653161, 0)
    >>> bucket_hash(["a", 1], ["string", "bigint"])
    -1586117854
    """
    check_bucketing_version(version)
    if len(values) != len(hive_types):
        raise ValueError(f"{len(values)} values for {len(hive_types)} bucketing columns")
    h = 0
    for value, text in zip(values, hive_types, strict=True):
        h = (31 * h + field_hash(value, parse_hive_type(text), version)) & MASK32
    return to_signed32(h)


def bucket_for(
    values: Sequence[object], hive_types: Sequence[str], num_buckets: int, version: int = 2
) -> int:
    """The bucket (0 .. ``num_buckets`` - 1) Hive puts this row in.

    >>> bucket_for([0], ["int"], 2), bucket_for([1], ["int"], 2)
    (1, 1)
    """
    check_num_buckets(num_buckets)
    return (bucket_hash(values, hive_types, version) & 0x7FFFFFFF) % num_buckets


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    hive_types: Sequence[str],
    num_buckets: int,
    version: int = 2,
) -> npt.NDArray[np.int32]:
    """Vectorised :func:`bucket_for` over Arrow columns: the bucket of every row (``int32``).

    Fixed-width types and decimals up to 18 digits hash fully in numpy; text takes one numpy
    step per 4 bytes of its longest values (a few very long ones finish in Python); wider
    decimals go one value at a time.

    >>> import pyarrow as pa
    >>> bucket_ids([pa.array(["a", "abc"]), pa.array([1, 2], pa.int32())], ["string", "int"], 8)
    array([3, 3], dtype=int32)
    """
    check_bucketing_version(version)
    check_num_buckets(num_buckets)
    if not columns or len(columns) != len(hive_types):
        raise ValueError(f"{len(columns)} columns for {len(hive_types)} bucketing columns")
    lengths = {len(c) for c in columns}
    if len(lengths) != 1:
        raise ValueError(f"bucketing columns have different lengths: {sorted(lengths)}")
    h = np.zeros(lengths.pop(), dtype=np.uint32)
    for column, text in zip(columns, hive_types, strict=True):
        h = h * np.uint32(31) + column_hashes(column, parse_hive_type(text), version)
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int32)


def murmur3_32(data: bytes, seed: int = MURMUR3_SEED) -> int:
    """Hive's ``Murmur3.hash32`` of ``data``, as a signed 32-bit int.

    Hive combines the 1-3 tail bytes sign-extended, so it differs from reference MurmurHash3
    when a tail byte is >= 0x80 (the reference is unsigned there).

    >>> murmur3_32(b"a"), murmur3_32(b"hello")
    (1086686554, 1321743225)
    """
    return to_signed32(murmur3_from(bytes(data), seed & MASK32, 0))


__all__ = ["MURMUR3_SEED", "bucket_for", "bucket_hash", "bucket_ids", "murmur3_32"]
