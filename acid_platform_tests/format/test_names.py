"""Directory and file names: Hive's AcidUtils naming cases, Trino's TestAcidTables parsing cases,
and round trips for any id, including ids wider than the padding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_platform.errors import InvalidNameError
from acid_platform.format.names import (
    BASE_PREFIX,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    FLUSH_LENGTH_SUFFIX,
    METADATA_ACID_FILE,
    ORC_ACID_VERSION_FILE,
    OriginalFileName,
    ParsedBase,
    ParsedDelta,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delta_dir_name,
    flush_length_file_name,
    is_acid_dir_name,
    is_hidden,
    looks_like_acid_dir_name,
    original_file_name,
    parse_acid_dir_name,
    parse_bucket_file_name,
    parse_original_file_name,
)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MAX = 2**31 - 1


def test_constants_are_hives() -> None:
    assert ORC_ACID_VERSION_FILE == "_orc_acid_version"
    assert METADATA_ACID_FILE == "_metadata_acid"
    assert FLUSH_LENGTH_SUFFIX == "_flush_length"
    assert (BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX) == ("base_", "delta_", "delete_delta_")


# --------------------------------------------------------------------------- building names


def test_names_follow_hive_create_filename() -> None:
    # Hive TestAcidUtils.testCreateFilename
    assert original_file_name(1) == "000001_0"
    assert original_file_name(123) == "000123_0"
    assert f"{base_dir_name(200)}/{bucket_file_name(23)}" == "base_0000200/bucket_00023"
    assert delta_dir_name(100, 200, 0) == "delta_0000100_0000200_0000"
    assert delete_delta_dir_name(100, 200, 0) == "delete_delta_0000100_0000200_0000"
    assert delta_dir_name(100, 200) == "delta_0000100_0000200"
    assert delete_delta_dir_name(100, 200, -1) == "delete_delta_0000100_0000200"
    assert delta_dir_name(100, 200, 7) == "delta_0000100_0000200_0007"
    assert delete_delta_dir_name(100, 200, 7) == "delete_delta_0000100_0000200_0007"


def test_ids_wider_than_the_padding_are_printed_in_full() -> None:
    # Hive TestAcidUtils.testCreateFilenameLargeIds
    assert original_file_name(123456789) == "123456789_0"
    assert base_dir_name(1234567890) == "base_1234567890"
    assert delta_dir_name(1234567880, 1234567890, 0) == "delta_1234567880_1234567890_0000"
    assert delta_dir_name(1, 1, 12345) == "delta_0000001_0000001_12345"
    assert bucket_file_name(123456) == "bucket_123456"


def test_delete_delta_names() -> None:
    # Trino/Hive testDeleteDeltaSubdirPathGeneration
    assert delete_delta_dir_name(13, 13, 5) == "delete_delta_0000013_0000013_0005"
    assert delete_delta_dir_name(1, 10) == "delete_delta_0000001_0000010"
    assert delete_delta_dir_name(1, 10, 5) == "delete_delta_0000001_0000010_0005"


def test_visibility_suffix_is_written_only_when_not_zero() -> None:
    assert base_dir_name(5) == "base_0000005"
    assert base_dir_name(5, 0) == "base_0000005"
    assert base_dir_name(5, 19) == "base_0000005_v0000019"
    assert delta_dir_name(1, 2, visibility_txn_id=19) == "delta_0000001_0000002_v0000019"
    assert delete_delta_dir_name(1, 2, 3, 19) == "delete_delta_0000001_0000002_0003_v0000019"
    assert ParsedBase(5, 19).name == "base_0000005_v0000019"
    assert ParsedDelta(1, 1, 0, is_delete=True).name == "delete_delta_0000001_0000001_0000"


def test_bucket_and_side_file_names() -> None:
    assert bucket_file_name(1) == "bucket_00001"
    assert bucket_file_name(1, 0) == "bucket_00001_0"
    assert flush_length_file_name("bucket_00000") == "bucket_00000_flush_length"
    assert (
        flush_length_file_name("/t/delta_1_2/bucket_00003")
        == "/t/delta_1_2/bucket_00003_flush_length"
    )
    assert original_file_name(2, 1) == "000002_0_copy_1"


def test_negative_bucket_and_attempt_ids_are_refused() -> None:
    with pytest.raises(InvalidNameError):
        bucket_file_name(-1)
    with pytest.raises(InvalidNameError):
        bucket_file_name(1, -1)
    with pytest.raises(InvalidNameError):
        original_file_name(-1)


def test_ids_outside_java_ranges_are_refused() -> None:
    with pytest.raises(InvalidNameError):
        ParsedBase(LONG_MAX + 1)
    with pytest.raises(InvalidNameError):
        ParsedDelta(1, 1, INT_MAX + 1)
    with pytest.raises(InvalidNameError):
        ParsedDelta(LONG_MIN - 1, 1)


# --------------------------------------------------------------------------- parsing names


def test_parse_base() -> None:
    # Trino TestAcidTables.testParseBase, Hive TestAcidUtils.testParsing
    assert parse_acid_dir_name("base_000123") == ParsedBase(123, 0)
    assert parse_acid_dir_name("base_123_v456") == ParsedBase(123, 456)
    assert parse_acid_dir_name("base_0000005_v0000019") == ParsedBase(5, 19)
    assert parse_acid_dir_name("base_5_v0") == ParsedBase(5, 0)


def test_parse_base_of_converted_table() -> None:
    # The first compaction after a non-ACID -> ACID conversion writes base_<Long.MIN_VALUE>.
    name = f"base_{LONG_MIN}"
    assert parse_acid_dir_name(name) == ParsedBase(LONG_MIN)
    assert base_dir_name(LONG_MIN) == name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Trino TestAcidTables.testParseDelta (the _v part is kept here, not ignored)
        ("delta_12_34", ParsedDelta(12, 34, -1)),
        ("delete_delta_12_34", ParsedDelta(12, 34, -1, is_delete=True)),
        ("delta_12_34_56", ParsedDelta(12, 34, 56)),
        ("delete_delta_12_34_56", ParsedDelta(12, 34, 56, is_delete=True)),
        ("delta_12_34_v78", ParsedDelta(12, 34, -1, 78)),
        ("delete_delta_12_34_v78", ParsedDelta(12, 34, -1, 78, is_delete=True)),
        ("delta_12_34_56_v78", ParsedDelta(12, 34, 56, 78)),
        ("delete_delta_12_34_56_v78", ParsedDelta(12, 34, 56, 78, is_delete=True)),
        # padding is irrelevant (Hive testOverlapingDelta names)
        ("delta_00061_61", ParsedDelta(61, 61)),
        ("delta_0000063_63", ParsedDelta(63, 63)),
        ("delta_0060_60_1", ParsedDelta(60, 60, 1)),
        ("delta_0000001_0000002_v0000019", ParsedDelta(1, 2, -1, 19)),
        ("delta_10000001_10000001_0000", ParsedDelta(10000001, 10000001, 0)),
        # Java's parseLong takes a sign
        ("base_+5", ParsedBase(5)),
    ],
)
def test_parse_delta(name: str, expected: ParsedDelta | ParsedBase) -> None:
    assert parse_acid_dir_name(name) == expected
    assert is_acid_dir_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "delta_x_y",
        "delta_1",
        "delta_1_",
        "delta_1_2_3_4",
        "delta_1_2_v",
        "delta_1_2_vx",
        f"delta_1_2_{INT_MAX + 1}",
        "delete_delta_1",
        "base_",
        "base_abc",
        "base_5_vx",
        f"base_{LONG_MAX + 1}",
        "base_\u0661",  # an Arabic-Indic digit: Python's int() takes it, Java's parseLong does not
        "base_ 5",
        "base_5.bak",
    ],
)
def test_malformed_acid_names_parse_to_none(name: str) -> None:
    assert parse_acid_dir_name(name) is None
    assert not is_acid_dir_name(name)
    assert looks_like_acid_dir_name(name)


@pytest.mark.parametrize(
    "name",
    ["000000_0", "random", "bucket_00000", "_tmp", "deltas", "base", "Delta_1_1", "_metadata_acid"],
)
def test_other_names_are_not_acid_dirs(name: str) -> None:
    assert parse_acid_dir_name(name) is None
    assert not looks_like_acid_dir_name(name)


def test_side_files_only_count_in_streaming_deltas() -> None:
    assert ParsedDelta(2, 5).may_contain_side_file
    assert not ParsedDelta(2, 5, visibility_txn_id=7).may_contain_side_file
    assert not ParsedDelta(2, 5, is_delete=True).may_contain_side_file
    assert not ParsedDelta(5, 5, 0).may_contain_side_file


def test_statement_id_minus_one_means_none() -> None:
    assert not ParsedDelta(1, 1).has_statement_id
    assert ParsedDelta(1, 1, 0).has_statement_id


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bucket_00001", (1, None)),
        ("bucket_0", (0, None)),
        ("bucket_00001_0", (1, 0)),
        ("bucket_00023_17", (23, 17)),
        ("bucket_123456", (123456, None)),
        ("bucket_00000_flush_length", None),
        ("bucket_00000_0_flush_length", None),
        ("bucket_abc", None),
        ("bucket_00000.orc", None),
        ("bucket_", None),
        (f"bucket_{INT_MAX + 1}", None),
        ("000000_0", None),
        ("_orc_acid_version", None),
    ],
)
def test_parse_bucket_file_name(name: str, expected: tuple[int, int | None] | None) -> None:
    assert parse_bucket_file_name(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("000000_0", OriginalFileName(0, 0)),
        ("000001_1", OriginalFileName(1, 0)),
        ("000002_0_copy_1", OriginalFileName(2, 1)),
        ("000002_0_copy_12", OriginalFileName(2, 12)),
        ("123456789_0", OriginalFileName(123456789, 0)),
        ("00000_0", OriginalFileName(0, 0)),
        ("random", None),
        ("000000_0_copy_", None),
        ("000000_0.orc", None),
        ("000000", None),
        ("bucket_00000", None),
        ("20180918230307-b382b8c7-271c-4025-be64-4a68f4db32e5_1_0", None),
    ],
)
def test_parse_original_file_name(name: str, expected: OriginalFileName | None) -> None:
    assert parse_original_file_name(name) == expected


@pytest.mark.parametrize(
    ("name", "hidden"),
    [
        ("_tmp", True),
        ("_done", True),
        (".hive-staging_hive_2020-01-01_00-00-00_000_1", True),
        ("_metadata_acid", True),
        ("base_1", False),
        ("000000_0", False),
    ],
)
def test_is_hidden(name: str, hidden: bool) -> None:
    assert is_hidden(name) is hidden


# --------------------------------------------------------------------------- round trips

longs = st.integers(min_value=LONG_MIN, max_value=LONG_MAX)
small_or_wide = st.one_of(st.integers(min_value=0, max_value=10_000), longs)
statement_ids = st.one_of(
    st.just(-1), st.integers(min_value=0, max_value=20), st.integers(-(2**31), INT_MAX)
)


@given(write_id=small_or_wide, visibility=small_or_wide)
def test_base_names_round_trip(write_id: int, visibility: int) -> None:
    parsed = ParsedBase(write_id, visibility)
    assert parse_acid_dir_name(parsed.name) == parsed


@given(
    low=small_or_wide,
    high=small_or_wide,
    statement_id=statement_ids,
    visibility=small_or_wide,
    is_delete=st.booleans(),
)
def test_delta_names_round_trip(
    low: int, high: int, statement_id: int, visibility: int, is_delete: bool
) -> None:
    parsed = ParsedDelta(low, high, statement_id, visibility, is_delete)
    assert parse_acid_dir_name(parsed.name) == parsed


@given(
    write_id=st.integers(min_value=0, max_value=LONG_MAX),
    padding=st.integers(min_value=0, max_value=12),
)
def test_padding_does_not_matter(write_id: int, padding: int) -> None:
    text = str(write_id).zfill(padding)
    assert parse_acid_dir_name(f"delta_{text}_{text}") == ParsedDelta(write_id, write_id)
    assert parse_acid_dir_name(f"base_{text}") == ParsedBase(write_id)


@given(
    bucket_id=st.integers(min_value=0, max_value=INT_MAX),
    attempt_id=st.none() | st.integers(min_value=0, max_value=INT_MAX),
)
def test_bucket_names_round_trip(bucket_id: int, attempt_id: int | None) -> None:
    name = bucket_file_name(bucket_id, attempt_id)
    assert parse_bucket_file_name(name) == (bucket_id, attempt_id)
    assert parse_bucket_file_name(flush_length_file_name(name)) is None


@given(
    bucket_id=st.integers(min_value=0, max_value=INT_MAX),
    copy_number=st.integers(min_value=0, max_value=INT_MAX),
)
def test_original_names_round_trip(bucket_id: int, copy_number: int) -> None:
    name = original_file_name(bucket_id, copy_number)
    assert parse_original_file_name(name) == OriginalFileName(bucket_id, copy_number)
