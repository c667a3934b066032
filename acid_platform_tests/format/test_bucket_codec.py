"""BucketCodec: the packed ``bucket`` property of ACID rows.

Cases come from Hive's ``TestBucketCodec`` and Trino's ``TestAcidBucketCodec`` (both Apache-2.0),
and from ROW__ID values Hive prints in its own tests (``TestTxnCommands``: 536870912,
536936448, 537001984, ...).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from acid_platform.errors import InvalidBucketError
from acid_platform.format.bucket_codec import (
    MAX_BUCKET_ID,
    MAX_STATEMENT_ID,
    bucket_codec_version,
    decode_bucket,
    decode_bucket_ids,
    decode_statement_ids,
    encode_bucket,
    encode_bucket_array,
)

V1 = 1 << 29

# (bucket id, statement id, bucket property) as Hive writes them
WORKED = [
    (0, 0, 536870912),  # 0x20000000, every single-writer insert
    (1, 0, 536936448),  # 0x20010000
    (2, 0, 537001984),
    (3, 0, 537067520),
    (0, 1, 536870913),  # second statement of a multi-statement txn
    (7, 16, 537329680),  # Hive TestBucketCodec.testGetBucketCodecVersion1
    (4095, 4095, 0x2FFF0FFF),
]


@pytest.mark.parametrize(("bucket_id", "statement_id", "prop"), WORKED)
def test_encode_matches_hive(bucket_id: int, statement_id: int, prop: int) -> None:
    assert encode_bucket(bucket_id, statement_id) == prop


@pytest.mark.parametrize(("bucket_id", "statement_id", "prop"), WORKED)
def test_decode_inverts_encode(bucket_id: int, statement_id: int, prop: int) -> None:
    assert decode_bucket(prop) == (bucket_id, statement_id)
    assert bucket_codec_version(prop) == 1


def test_statement_id_defaults_to_zero() -> None:
    assert encode_bucket(1) == encode_bucket(1, 0) == 536936448


def test_negative_statement_id_means_none() -> None:
    # Hive: "Statement ID of -1 is acceptable and has the same affect as a value of 0"
    assert encode_bucket(7, -1) == encode_bucket(7, 0)
    assert encode_bucket_array(np.array([7]), -1).tolist() == [encode_bucket(7, 0)]


def test_version_1_fields_decode_independently() -> None:
    # Trino TestAcidBucketCodec.testGetBucketCodecVersion1 (the version bits added, since
    # decode_bucket reads the version from the value itself)
    assert decode_bucket(V1 | 0x0ABC0000) == (2748, 0)
    assert decode_bucket(V1 | 0x00000ABC) == (0, 2748)
    assert decode_bucket(V1 | 0x0ABC0ABC) == (2748, 2748)


def test_version_0_is_the_whole_value() -> None:
    # Trino/Hive testGetBucketCodecVersion0: legacy values are the bucket id, statement 0
    assert bucket_codec_version(0) == 0
    assert decode_bucket(7) == (7, 0)
    assert decode_bucket(100) == (100, 0)
    assert decode_bucket(0x0ABC0000) == (0x0ABC0000, 0)


def test_invalid_version_message_matches_trino() -> None:
    with pytest.raises(InvalidBucketError, match=r"^Invalid bucket 0x60000000\. Version=3$"):
        decode_bucket(3 << 29)


@pytest.mark.parametrize("version", range(2, 8))
def test_versions_2_to_7_are_rejected(version: int) -> None:
    value = (version << 29) | 0x00010000
    assert bucket_codec_version(value) == version
    with pytest.raises(InvalidBucketError, match=f"Version={version}"):
        decode_bucket(value)
    with pytest.raises(InvalidBucketError, match=f"Version={version}"):
        decode_bucket_ids(np.array([V1, value - (1 << 32) if value >= 1 << 31 else value]))


def test_signed_and_unsigned_spellings_agree() -> None:
    # ORC stores the property as a signed int: 0xE0000000 is -536870912 there
    with pytest.raises(InvalidBucketError, match=r"Invalid bucket 0xE0000000\. Version=7"):
        decode_bucket(-536870912)
    with pytest.raises(InvalidBucketError, match=r"Invalid bucket 0xFFFFFFFF\. Version=7"):
        decode_bucket(-1)
    with pytest.raises(InvalidBucketError, match=r"Invalid bucket 0xE0000000\. Version=7"):
        decode_bucket(0xE0000000)


def test_values_beyond_32_bits_are_rejected() -> None:
    for value in (1 << 32, -(1 << 31) - 1):
        with pytest.raises(InvalidBucketError, match=str(value)):
            decode_bucket(value)


@pytest.mark.parametrize(
    ("bucket_id", "statement_id", "named"),
    [
        (MAX_BUCKET_ID + 1, 0, "bucket id 4096"),
        (-1, 0, "bucket id -1"),
        (65536, 0, "bucket id 65536"),
        (7, MAX_STATEMENT_ID + 1, "statement id 4096"),
    ],
)
def test_out_of_range_ids_are_rejected(bucket_id: int, statement_id: int, named: str) -> None:
    with pytest.raises(InvalidBucketError, match=named):
        encode_bucket(bucket_id, statement_id)


def test_out_of_range_ids_are_rejected_vectorised() -> None:
    with pytest.raises(InvalidBucketError, match="bucket id 4096"):
        encode_bucket_array(np.array([0, 1, 4096, 2]))
    with pytest.raises(InvalidBucketError, match="bucket id -3"):
        encode_bucket_array(np.array([-3]))
    with pytest.raises(InvalidBucketError, match="statement id 4096"):
        encode_bucket_array(np.array([1]), 4096)
    with pytest.raises(InvalidBucketError, match="integers"):
        encode_bucket_array(np.array([1.0]))


def test_non_integers_are_rejected() -> None:
    with pytest.raises(TypeError):
        encode_bucket(1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidBucketError):
        encode_bucket(True)


def test_vectorised_forms_match_hive_values() -> None:
    ids = np.array([0, 1, 2, 3], dtype=np.int32)
    props = encode_bucket_array(ids)
    assert props.dtype == np.int32
    assert props.tolist() == [536870912, 536936448, 537001984, 537067520]
    assert decode_bucket_ids(props).tolist() == [0, 1, 2, 3]
    assert decode_statement_ids(encode_bucket_array(ids, 5)).tolist() == [5, 5, 5, 5]


def test_vectorised_decode_handles_legacy_and_empty() -> None:
    mixed = np.array([536936448, 5, 0, 536870913], dtype=np.int32)
    assert decode_bucket_ids(mixed).tolist() == [1, 5, 0, 0]
    assert decode_statement_ids(mixed).tolist() == [0, 0, 0, 1]
    assert decode_bucket_ids(np.array([], dtype=np.int32)).tolist() == []
    assert encode_bucket_array(np.array([], dtype=np.int32)).tolist() == []


@given(st.integers(0, MAX_BUCKET_ID), st.integers(0, MAX_STATEMENT_ID))
def test_round_trip_every_valid_pair(bucket_id: int, statement_id: int) -> None:
    prop = encode_bucket(bucket_id, statement_id)
    assert -(1 << 31) <= prop < 1 << 31  # fits ORC's int column
    assert decode_bucket(prop) == (bucket_id, statement_id)


def test_round_trip_exhaustive_for_buckets() -> None:
    ids = np.arange(MAX_BUCKET_ID + 1)
    for statement_id in (0, 1, 77, MAX_STATEMENT_ID):
        props = encode_bucket_array(ids, statement_id)
        assert decode_bucket_ids(props).tolist() == ids.tolist()
        assert set(decode_statement_ids(props).tolist()) == {statement_id}
        assert props.tolist() == [encode_bucket(int(i), statement_id) for i in ids]


def test_properties_sort_by_bucket_then_statement() -> None:
    # Hive relies on it: sorting by ROW__ID groups rows of one physical bucket together
    pairs = [(b, s) for b in (0, 1, 2, 4095) for s in (0, 1, 4095)]
    props = [encode_bucket(b, s) for b, s in pairs]
    assert props == sorted(props)


@given(hnp.arrays(np.int32, st.integers(0, 50), elements=st.integers(0, (2 << 29) - 1)))
def test_vectorised_decode_matches_scalar(values: np.ndarray) -> None:
    # versions 0 and 1 only: the two valid ones
    expected = [decode_bucket(int(v)) for v in values]
    assert decode_bucket_ids(values).tolist() == [b for b, _ in expected]
    assert decode_statement_ids(values).tolist() == [s for _, s in expected]


@given(
    hnp.arrays(np.int64, st.integers(0, 50), elements=st.integers(0, MAX_BUCKET_ID)),
    st.integers(-5, MAX_STATEMENT_ID),
)
def test_vectorised_encode_matches_scalar(ids: np.ndarray, statement_id: int) -> None:
    assert encode_bucket_array(ids, statement_id).tolist() == [
        encode_bucket(int(i), statement_id) for i in ids
    ]
