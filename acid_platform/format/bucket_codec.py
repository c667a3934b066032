"""The ``bucket`` property of ACID rows (Hive's ``BucketCodec``).

Every ACID event carries a 32-bit ``bucket`` field, shown to SQL as ``ROW__ID.bucketid``. Since
Hive 3 it packs three things (codec version 1)::

    bits 31-29  codec version (0 = legacy, 1 = Hive 3+; 2..7 are invalid)
    bit  28     reserved, 0
    bits 27-16  bucket id (writer id for unbucketed tables), 0..4095
    bits 15-12  reserved, 0
    bits 11-0   statement id, 0..4095

Version 0 is what Hive 2 wrote: the whole value is the bucket id and the statement id is 0.

Hive 4 can also squeeze writer ids above 4095 into version 1 by borrowing the statement-id bits a
transaction with few statements leaves unused (``BucketCodec.encode`` with ``maxStmtId``). This
module never writes such values; decoding one gives what Hive's own V1 decoder gives (the low 12
bits of the writer id, and the statement field with the borrowed bits in it).

>>> encode_bucket(1)
536936448
>>> decode_bucket(536936448)
(1, 0)
>>> hex(encode_bucket(2748, 2748))
'0x2abc0abc'
"""

from __future__ import annotations

import operator

import numpy as np
import numpy.typing as npt

from acid_platform.errors import InvalidBucketError

#: Largest bucket (writer) id codec version 1 can hold (12 bits).
MAX_BUCKET_ID = 4095
#: Largest statement id codec version 1 can hold (12 bits).
MAX_STATEMENT_ID = 4095

_VERSION_SHIFT = 29
_VERSION_MASK = 0b111 << _VERSION_SHIFT
_BUCKET_SHIFT = 16
_BUCKET_MASK = 0x0FFF0000
_STATEMENT_MASK = 0x00000FFF
_V1 = 1 << _VERSION_SHIFT


def encode_bucket(bucket_id: int, statement_id: int = 0) -> int:
    """The version-1 bucket property of ``bucket_id`` written by statement ``statement_id``.

    A negative statement id means "none" and encodes as 0, as in Hive.

    >>> encode_bucket(0), encode_bucket(3), encode_bucket(0, 1)
    (536870912, 537067520, 536870913)
    """
    _check_range("bucket id", bucket_id, MAX_BUCKET_ID)
    statement_id = max(operator.index(statement_id), 0)
    _check_range("statement id", statement_id, MAX_STATEMENT_ID)
    return _V1 | (operator.index(bucket_id) << _BUCKET_SHIFT) | statement_id


def decode_bucket(value: int) -> tuple[int, int]:
    """``(bucket_id, statement_id)`` of a bucket property (signed or unsigned 32-bit).

    >>> decode_bucket(536870913)
    (0, 1)
    >>> decode_bucket(7)  # written before Hive 3
    (7, 0)
    """
    unsigned = _as_unsigned(value)
    version = unsigned >> _VERSION_SHIFT
    if version == 0:
        return unsigned, 0
    if version == 1:
        return (unsigned & _BUCKET_MASK) >> _BUCKET_SHIFT, unsigned & _STATEMENT_MASK
    raise InvalidBucketError(_invalid_message(unsigned))


def bucket_codec_version(value: int) -> int:
    """The codec version field (bits 31-29) of a bucket property, 0..7, without validating it.

    >>> bucket_codec_version(536870912), bucket_codec_version(3 << 29)
    (1, 3)
    """
    return _as_unsigned(value) >> _VERSION_SHIFT


def encode_bucket_array(bucket_ids: npt.ArrayLike, statement_id: int = 0) -> npt.NDArray[np.int32]:
    """Vectorised :func:`encode_bucket`: one bucket property (``int32``) per bucket id.

    >>> encode_bucket_array(np.array([0, 1, 2]), 1).tolist()
    [536870913, 536936449, 537001985]
    """
    ids = np.asarray(bucket_ids)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise InvalidBucketError(f"bucket ids must be integers, got an array of {ids.dtype}")
    ids = ids.astype(np.int64, copy=False)
    bad = (ids < 0) | (ids > MAX_BUCKET_ID)
    if bad.any():
        _check_range("bucket id", int(ids[np.argmax(bad)]), MAX_BUCKET_ID)
    statement_id = max(operator.index(statement_id), 0)
    _check_range("statement id", statement_id, MAX_STATEMENT_ID)
    return (_V1 | (ids << _BUCKET_SHIFT) | statement_id).astype(np.int32)


def decode_bucket_ids(values: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Vectorised bucket (writer) ids of bucket properties read from ORC (``int32``).

    Version-0 values decode to themselves; any value of version 2..7 raises.

    >>> decode_bucket_ids(np.array([536870912, 536936448, 5], dtype=np.int32)).tolist()
    [0, 1, 5]
    """
    unsigned = np.asarray(values).astype(np.int64, copy=False) & 0xFFFFFFFF
    version = unsigned >> _VERSION_SHIFT
    bad = version > 1
    if bad.any():
        raise InvalidBucketError(_invalid_message(int(unsigned[np.argmax(bad)])))
    ids = np.where(version == 0, unsigned, (unsigned & _BUCKET_MASK) >> _BUCKET_SHIFT)
    return ids.astype(np.int32)


def decode_statement_ids(values: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Vectorised statement ids of bucket properties (0 for version-0 values).

    >>> decode_statement_ids(np.array([536870913, 5], dtype=np.int32)).tolist()
    [1, 0]
    """
    unsigned = np.asarray(values).astype(np.int64, copy=False) & 0xFFFFFFFF
    version = unsigned >> _VERSION_SHIFT
    bad = version > 1
    if bad.any():
        raise InvalidBucketError(_invalid_message(int(unsigned[np.argmax(bad)])))
    return np.where(version == 0, 0, unsigned & _STATEMENT_MASK).astype(np.int32)


# --------------------------------------------------------------------------- helpers
def _check_range(what: str, value: int, maximum: int) -> None:
    if isinstance(value, bool) or not 0 <= operator.index(value) <= maximum:
        raise InvalidBucketError(
            f"{what} {value!r} is out of range 0..{maximum} for BucketCodec V1"
        )


def _as_unsigned(value: int) -> int:
    # ORC stores the property as a signed int; accept its unsigned spelling too.
    value = operator.index(value)
    if not -(1 << 31) <= value < (1 << 32):
        raise InvalidBucketError(f"bucket property {value} does not fit in 32 bits")
    return value & 0xFFFFFFFF


def _invalid_message(unsigned: int) -> str:
    # Trino's wording (AcidBucketCodec.forBucket), so errors read the same in both engines.
    return f"Invalid bucket 0x{unsigned:08X}. Version={unsigned >> _VERSION_SHIFT}"
