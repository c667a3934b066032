"""Snapshots: Hive's TestValidReadTxnList, TestValidReaderWriteIdList and
TestValidCompactorWriteIdList cases, exact strings, and range answers checked against a
brute-force oracle."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_platform.errors import InvalidSnapshotError
from acid_platform.format.id_list import RangeResponse
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.txn_write_id_list import (
    VALID_TABLES_WRITEIDS_KEY,
    ValidTxnWriteIdList,
    format_txn_write_id_lists,
    parse_txn_write_id_lists,
)
from acid_platform.format.write_id_list import (
    CleanerWriteIdList,
    ValidCompactorWriteIdList,
    ValidWriteIdList,
)

MAX = 2**63 - 1
NONE, SOME, ALL = RangeResponse.NONE, RangeResponse.SOME, RangeResponse.ALL


# --------------------------------------------------------------------------- ValidTxnList


def test_txn_list_without_exceptions() -> None:
    txns = ValidTxnList(1)
    assert str(txns) == f"1:{MAX}::"
    back = ValidTxnList.parse(str(txns))
    assert back.is_txn_valid(1)
    assert not back.is_txn_valid(2)
    assert back == txns


def test_txn_list_with_open_txns() -> None:
    txns = ValidTxnList(5, open_txns=(2, 4), min_open_txn=4)
    assert str(txns) == "5:4:2,4:"
    back = ValidTxnList.parse("5:4:2,4:")
    assert [back.is_txn_valid(t) for t in range(1, 7)] == [True, False, True, False, True, False]


def test_txn_list_with_many_exceptions() -> None:
    txns = ValidTxnList(2000, open_txns=tuple(range(100, 1100)), min_open_txn=900)
    back = ValidTxnList.parse(str(txns))
    assert back == txns
    assert all(back.is_txn_valid(t) for t in range(100))
    assert not any(back.is_txn_valid(t) for t in range(100, 1100))
    assert all(back.is_txn_valid(t) for t in range(1100, 2001))
    assert not back.is_txn_valid(2001)


def test_txn_list_with_aborted_txns() -> None:
    txns = ValidTxnList(11, open_txns=(4, 6, 10), aborted_txns=(2, 8), min_open_txn=4)
    assert str(txns) == "11:4:4,6,10:2,8"
    assert [txns.is_txn_aborted(t) for t in (2, 4, 6, 8, 10)] == [True, False, False, True, False]
    assert txns.exceptions == (2, 4, 6, 8, 10)


def test_hive4_txn_ranges_are_read_and_can_be_written() -> None:
    # Hive 4 TestValidReadTxnList.testAbortedTxnRange: runs of 5+ ids are written "a-b".
    txns = ValidTxnList(11, open_txns=(4, 5, 6, 7, 8, 10), aborted_txns=(2, 9), min_open_txn=4)
    assert txns.to_string(ranges=True) == "11:4:4-8,10:2,9"
    assert str(txns) == "11:4:4,5,6,7,8,10:2,9"  # what Hive 3 and Trino can read
    back = ValidTxnList.parse("11:4:4-8,10:2,9")
    assert back == txns
    assert back.is_txn_aborted(2) and back.is_txn_aborted(9)
    assert not back.is_txn_aborted(4) and not back.is_txn_aborted(6)
    assert (
        ValidTxnList(9, open_txns=(1, 2, 3, 4)).to_string(ranges=True)
        == "9:9223372036854775807:1,2,3,4:"
    )


@pytest.mark.parametrize(
    "text",
    [
        f"1:{MAX}::",
        "5:4:2,4:",
        "11:4:4,6,10:2,8",
        "1915:9223372036854775807::1899,1907",  # a real Hive 3 dump
        "162684:9223372036854775807::",
    ],
)
def test_txn_list_strings_round_trip(text: str) -> None:
    assert str(ValidTxnList.parse(text)) == text


def test_empty_txn_list_string_means_everything_valid() -> None:
    txns = ValidTxnList.parse("")
    assert txns.high_watermark == MAX
    assert txns.is_txn_valid(12345)


def test_txn_ranges() -> None:
    txns = ValidTxnList.parse("11:4:4,6,10:2,8")
    assert txns.is_txn_range_valid(12, 20) is NONE
    assert txns.is_txn_range_valid(1, 1) is ALL
    assert txns.is_txn_range_valid(1, 3) is SOME
    assert txns.is_txn_range_valid(4, 4) is NONE
    assert txns.is_txn_range_aborted(2, 2) is ALL
    assert txns.is_txn_range_aborted(1, 3) is SOME
    assert txns.is_txn_range_aborted(12, 13) is NONE
    assert txns.is_txn_range_aborted(3, 7) is NONE


# --------------------------------------------------------------------------- ValidWriteIdList


def test_write_id_list_without_exceptions() -> None:
    write_ids = ValidWriteIdList("t1", 1)
    assert str(write_ids) == f"t1:1:{MAX}::"
    back = ValidWriteIdList.parse(str(write_ids))
    assert back.is_write_id_valid(1)
    assert not back.is_write_id_valid(2)


def test_write_id_list_with_open_write_ids() -> None:
    write_ids = ValidWriteIdList("t1", 5, open_write_ids=(2, 4), min_open_write_id=4)
    assert str(write_ids) == "t1:5:4:2,4:"
    back = ValidWriteIdList.parse("t1:5:4:2,4:")
    assert [back.is_write_id_valid(w) for w in range(1, 7)] == [
        True,
        False,
        True,
        False,
        True,
        False,
    ]


def test_write_id_list_with_many_exceptions() -> None:
    write_ids = ValidWriteIdList("t1", 2000, open_write_ids=range(100, 1100), min_open_write_id=900)
    back = ValidWriteIdList.parse(str(write_ids))
    assert back == write_ids
    assert all(back.is_write_id_valid(w) for w in range(100))
    assert not any(back.is_write_id_valid(w) for w in range(100, 1100))
    assert all(back.is_write_id_valid(w) for w in range(1100, 2001))
    assert not back.is_write_id_valid(2001)


def test_write_id_list_with_aborted_write_ids() -> None:
    write_ids = ValidWriteIdList("t1", 11, (4, 6, 10), (2, 8), 4)
    assert str(write_ids) == "t1:11:4:4,6,10:2,8"
    assert [write_ids.is_write_id_aborted(w) for w in (2, 4, 6, 8, 10)] == [
        True,
        False,
        False,
        True,
        False,
    ]


@pytest.mark.parametrize(
    "text",
    [
        "test_hcube_2.tbl1:3:9223372036854775807::",  # real Hive 3 dumps
        "test_hcube_2.tbl:2:9223372036854775807::",
        "t1:1:9223372036854775807::",
        "t1:5:4:2,4:",
        "t1:11:4:4,6,10:2,8",
        "db.t:10:9223372036854775807::3,8",
        "null:5:9223372036854775807::",
    ],
)
def test_write_id_list_strings_round_trip(text: str) -> None:
    assert str(ValidWriteIdList.parse(text)) == text


def test_null_table_name() -> None:
    assert ValidWriteIdList.parse("null:5:9223372036854775807::").table_name is None
    assert ValidWriteIdList.parse("NULL:5:9223372036854775807::").table_name is None
    assert str(ValidWriteIdList(None, 5)) == "null:5:9223372036854775807::"


def test_short_strings_as_trino_and_hive_tests_write_them() -> None:
    trino = ValidWriteIdList.parse("tbl:100:4:4")
    assert trino.open_write_ids == (4,) and trino.min_open_write_id == 4
    assert str(trino) == "tbl:100:4:4:"
    three_fields = ValidWriteIdList.parse(f"tbl:4:{MAX}")
    assert three_fields == ValidWriteIdList("tbl", 4)


def test_empty_write_id_list_string_means_everything_valid() -> None:
    write_ids = ValidWriteIdList.parse("")
    assert write_ids.table_name is None and write_ids.high_watermark == MAX


def test_of_derives_min_open_write_id() -> None:
    assert ValidWriteIdList.of("t1", 11, (10, 4, 6), (8, 2)) == ValidWriteIdList.parse(
        "t1:11:4:4,6,10:2,8"
    )
    assert ValidWriteIdList.of("t1", 5, aborted_write_ids=(2,)).min_open_write_id is None


def test_constructor_normalises_like_hive() -> None:
    write_ids = ValidWriteIdList("t", 11, [10, 4, 6, 4], [8, 2], 4)
    assert write_ids.open_write_ids == (4, 6, 10)
    assert write_ids.aborted_write_ids == (2, 8)
    # Hive keeps the min open write id only when there are exceptions ...
    assert ValidWriteIdList("t", 5, min_open_write_id=3).min_open_write_id is None
    # ... and Long.MAX_VALUE means "none".
    assert ValidWriteIdList("t", 5, (3,), min_open_write_id=MAX).min_open_write_id is None


def test_is_valid_base() -> None:
    write_ids = ValidWriteIdList.parse("t:150:121:121:99")
    assert write_ids.is_valid_base(100)
    assert write_ids.is_valid_base(120)
    assert not write_ids.is_valid_base(121)
    assert not write_ids.is_valid_base(200)
    no_open = ValidWriteIdList.parse(f"t:150:{MAX}::99")
    assert no_open.is_valid_base(150) and not no_open.is_valid_base(151)


def test_write_id_ranges_valid() -> None:
    write_ids = ValidWriteIdList.parse("t:11:4:4,6,10:2,8")
    assert write_ids.is_write_id_range_valid(12, 15) is NONE  # above the high watermark
    assert write_ids.is_write_id_range_valid(1, 1) is ALL  # below the first exception
    assert write_ids.is_write_id_range_valid(1, 3) is SOME
    assert write_ids.is_write_id_range_valid(4, 4) is NONE
    assert write_ids.is_write_id_range_valid(5, 5) is ALL
    assert write_ids.is_write_id_range_valid(9, 13) is SOME  # 10 open, 12-13 unknown
    assert write_ids.is_write_id_range_valid(10, 10) is NONE
    assert write_ids.is_write_id_range_valid(11, 13) is SOME
    no_exceptions = ValidWriteIdList.parse(f"t:100:{MAX}::")
    assert no_exceptions.is_write_id_range_valid(90, 120) is SOME
    assert no_exceptions.is_write_id_range_valid(101, 101) is NONE
    assert no_exceptions.is_write_id_range_valid(1, 100) is ALL


def test_write_id_ranges_aborted() -> None:
    # TestValidCompactorWriteIdList.testAbortedRange, on a reader list and a compactor list
    for write_ids in (
        ValidWriteIdList.parse("t1:11:4::5,6,7,8"),
        ValidCompactorWriteIdList.parse("t1:11:4::5,6,7,8"),
    ):
        assert write_ids.is_write_id_range_aborted(1, 3) is NONE
        assert write_ids.is_write_id_range_aborted(9, 10) is NONE
        assert write_ids.is_write_id_range_aborted(6, 7) is ALL
        assert write_ids.is_write_id_range_aborted(4, 6) is SOME
        assert write_ids.is_write_id_range_aborted(6, 13) is SOME
        assert write_ids.is_write_id_range_aborted(12, 13) is NONE


def test_range_valid_keeps_hives_first_exception_shortcut() -> None:
    # With an exception above the high watermark (never handed out by a metastore), Hive answers
    # ALL for a range ending below that exception even if it passes the watermark.
    write_ids = ValidWriteIdList("t", 5, open_write_ids=(10,), min_open_write_id=10)
    assert write_ids.is_write_id_range_valid(3, 7) is ALL


# --------------------------------------------------------------------------- compactor list


def test_compactor_range_above_watermark_is_none() -> None:
    assert (
        ValidCompactorWriteIdList("t1", 2, aborted_write_ids=(3, 4)).is_write_id_range_valid(7, 9)
        is NONE
    )
    assert ValidCompactorWriteIdList("t1", 5).is_write_id_range_valid(7, 9) is NONE
    assert (
        ValidCompactorWriteIdList("t1", 3, aborted_write_ids=(3, 6)).is_write_id_range_valid(7, 9)
        is NONE
    )
    assert (
        ValidCompactorWriteIdList("t1", 7, aborted_write_ids=(8,)).is_write_id_range_valid(7, 9)
        is NONE
    )


def test_compactor_range_below_watermark_is_all() -> None:
    assert (
        ValidCompactorWriteIdList("t1", 12, aborted_write_ids=(13, 14)).is_write_id_range_valid(
            7, 9
        )
        is ALL
    )
    assert ValidCompactorWriteIdList("t1", 15).is_write_id_range_valid(7, 9) is ALL
    # aborted ids inside the range do not matter: the compactor skips their rows
    assert (
        ValidCompactorWriteIdList("t1", 15, aborted_write_ids=(8,)).is_write_id_range_valid(7, 9)
        is ALL
    )


def test_compactor_drops_exceptions_above_watermark() -> None:
    write_ids = ValidCompactorWriteIdList("t1", 15, aborted_write_ids=(8, 11, 17, 29))
    assert write_ids.exceptions == (8, 11)
    assert write_ids.is_write_id_range_valid(7, 9) is ALL
    assert write_ids.is_write_id_range_valid(12, 16) is NONE


def test_compactor_strings() -> None:
    assert (
        str(ValidCompactorWriteIdList("t1", 8, aborted_write_ids=(7, 9, 10, MAX)))
        == f"t1:8:{MAX}::7"
    )
    assert str(ValidCompactorWriteIdList(None, MAX)) == f"null:{MAX}:{MAX}::"
    assert str(ValidCompactorWriteIdList("t1", 23)) == f"t1:23:{MAX}::"
    read = ValidCompactorWriteIdList.parse(f"t1:37:{MAX}::7,9,10")
    assert (read.table_name, read.high_watermark, read.min_open_write_id) == ("t1", 37, None)
    assert read.exceptions == (7, 9, 10)
    empty = ValidCompactorWriteIdList.parse(f"t1:21:{MAX}:")
    assert (empty.high_watermark, empty.min_open_write_id, empty.exceptions) == (21, None, ())
    aborted = ValidCompactorWriteIdList.parse("t1:5:4::1,2,3")
    assert (aborted.high_watermark, aborted.min_open_write_id) == (5, 4)
    assert aborted.exceptions == (1, 2, 3)
    assert str(aborted) == "t1:5:4::1,2,3"


def test_compactor_counts_every_exception_as_aborted() -> None:
    write_ids = ValidCompactorWriteIdList.parse("t1:9:3:3:1")
    assert write_ids.is_write_id_aborted(3) and write_ids.is_write_id_aborted(1)
    assert not ValidWriteIdList.parse("t1:9:3:3:1").is_write_id_aborted(3)


def test_compactor_list_from_reader_list() -> None:
    # TxnUtils.createValidCompactWriteIdList: hwm = min open - 1, aborted ids below it kept
    reader = ValidWriteIdList.parse("t:10:5:5,7:3,8")
    assert str(ValidCompactorWriteIdList.from_reader(reader)) == "t:4:5::3"
    no_open = ValidWriteIdList.parse(f"t:10:{MAX}::3,8")
    assert str(ValidCompactorWriteIdList.from_reader(no_open)) == f"t:10:{MAX}::3,8"
    only_open = ValidWriteIdList.parse("t:10:5:5:")
    assert str(ValidCompactorWriteIdList.from_reader(only_open)) == f"t:4:{MAX}::"
    assert isinstance(ValidCompactorWriteIdList.from_reader(reader), ValidCompactorWriteIdList)


# --------------------------------------------------------------------------- CleanerWriteIdList


def test_cleaner_list_from_reader_list_is_capped() -> None:
    # Hive's ValidCleanerWriteIdList: the cap lowers the watermark, ids above it are dropped
    reader = ValidWriteIdList.of("db.t", 9, open_write_ids=[8], aborted_write_ids=[3, 9])
    capped = CleanerWriteIdList.from_reader(reader, cap=7)
    assert isinstance(capped, CleanerWriteIdList)
    assert str(capped) == "db.t:7:8::3"
    assert capped.is_write_id_range_valid(5, 7) is ALL
    assert capped.is_write_id_range_valid(5, 8) is NONE  # ends above the watermark
    assert capped.is_write_id_aborted(3) and not capped.is_write_id_aborted(9)
    uncapped = CleanerWriteIdList.from_reader(reader)
    assert (uncapped.high_watermark, uncapped.exceptions) == (9, (3, 8, 9))
    assert CleanerWriteIdList.from_reader(reader, cap=20).high_watermark == 9


def test_cleaner_list_never_reaches_past_its_watermark() -> None:
    write_ids = CleanerWriteIdList("db.t", 5, aborted_write_ids=(2, 6))
    assert write_ids.exceptions == (2,)  # 6 is dropped on construction
    assert not write_ids.is_write_id_aborted(6)
    # a reader list counts the valid part of the range (SOME); the cleaner's list says NONE
    assert ValidWriteIdList("db.t", 5, (), (2,)).is_write_id_range_valid(3, 9) is SOME
    assert write_ids.is_write_id_range_valid(3, 9) is NONE


@pytest.mark.parametrize("kind", [ValidWriteIdList, ValidCompactorWriteIdList, CleanerWriteIdList])
def test_every_write_id_list_parses_to_its_own_kind(kind: type[ValidWriteIdList]) -> None:
    text = "db.t:5:4::1,2,3"
    read = kind.parse(text)
    assert type(read) is kind
    assert str(read) == text
    assert type(kind.parse("")) is kind
    assert type(kind.of("db.t", 5, [4])) is kind


# --------------------------------------------------------------------------- ValidTxnWriteIdList


def test_txn_write_id_lists_round_trip() -> None:
    text = f"12$db.a:3:{MAX}::$db.b:5:4:4:"
    value = parse_txn_write_id_lists(text)
    assert value.txn_id == 12
    assert value.get("db.a") == ValidWriteIdList("db.a", 3)
    assert value.get("db.b") == ValidWriteIdList("db.b", 5, (4,), (), 4)
    assert value.get("db.c") is None
    assert format_txn_write_id_lists(value) == text
    assert str(ValidTxnWriteIdList.parse(text)) == text
    assert str(ValidTxnWriteIdList(7)) == "7"
    assert VALID_TABLES_WRITEIDS_KEY == "hive.txn.tables.valid.writeids"


@pytest.mark.parametrize(
    "text", ["", "x$db.a:3:1::", "12$", "12$$db.a:3:1::", f"12$null:3:{MAX}::", "12$db.a"]
)
def test_bad_txn_write_id_lists(text: str) -> None:
    with pytest.raises(InvalidSnapshotError):
        parse_txn_write_id_lists(text)


def test_txn_write_id_list_keys_must_match_tables() -> None:
    with pytest.raises(InvalidSnapshotError):
        ValidTxnWriteIdList(1, {"db.a": ValidWriteIdList("db.b", 1)})
    with pytest.raises(InvalidSnapshotError):
        ValidTxnWriteIdList.of(1, ValidWriteIdList(None, 1))


# --------------------------------------------------------------------------- bad strings


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "5",
        "5:x",
        "5:4:a:",
        "1:2:3:4:5",
        "5:4:2,,4:",
        "5:4: 2:",
        "5:4:9-3:",
        "5:4:2:2",  # open and aborted at once
        "99999999999999999999:1::",
    ],
)
def test_bad_txn_list_strings_name_the_text(text: str) -> None:
    with pytest.raises(InvalidSnapshotError) as info:
        ValidTxnList.parse(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "t",
        "t:1",
        "t:x:1::",
        "t:1:2:3:4:5",
        "t:5:4:2-4:",
        "t:5:4:2,a:",
        "t:5:4::1.5",
        "t:5:4:4:4",
        "d:b:5:4::",
    ],
)
def test_bad_write_id_list_strings_name_the_text(text: str) -> None:
    with pytest.raises(InvalidSnapshotError) as info:
        ValidWriteIdList.parse(text)
    assert repr(text) in str(info.value)


def test_table_names_that_break_the_format_are_refused() -> None:
    with pytest.raises(InvalidSnapshotError):
        ValidWriteIdList("db:t", 1)
    with pytest.raises(InvalidSnapshotError):
        ValidWriteIdList("db$t", 1)


def test_ids_must_be_java_longs() -> None:
    with pytest.raises(InvalidSnapshotError):
        ValidTxnList(MAX + 1)
    with pytest.raises(InvalidSnapshotError):
        ValidWriteIdList("t", 5, open_write_ids=("3",))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties


@st.composite
def write_id_lists(draw: st.DrawFn, max_id: int = 40) -> ValidWriteIdList:
    """Lists the metastore could hand out: every exception at or below the high watermark."""
    hwm = draw(st.integers(min_value=0, max_value=max_id))
    ids = draw(st.sets(st.integers(min_value=1, max_value=max(hwm, 1)), max_size=hwm))
    ids = {i for i in ids if i <= hwm}
    aborted = draw(st.sets(st.sampled_from(sorted(ids)))) if ids else set()
    open_ids = ids - aborted
    table = draw(st.sampled_from(["db.t", "t1", None]))
    return ValidWriteIdList.of(table, hwm, open_ids, aborted)


@given(write_id_lists())
def test_write_id_list_strings_round_trip_for_any_list(write_ids: ValidWriteIdList) -> None:
    text = str(write_ids)
    assert ValidWriteIdList.parse(text) == write_ids
    assert str(ValidWriteIdList.parse(text)) == text


@given(write_id_lists(max_id=200), st.booleans())
def test_txn_list_strings_round_trip_for_any_list(lists: ValidWriteIdList, ranges: bool) -> None:
    txns = ValidTxnList(
        lists.high_watermark, lists.open_write_ids, lists.aborted_write_ids, lists.min_open_write_id
    )
    text = txns.to_string(ranges=ranges)
    assert ValidTxnList.parse(text) == txns
    assert ValidTxnList.parse(text).to_string(ranges=ranges) == text


def _oracle(answers: list[bool]) -> RangeResponse:
    if all(answers):
        return ALL
    return SOME if any(answers) else NONE


@settings(max_examples=300)
@given(
    write_id_lists(), st.integers(min_value=-2, max_value=45), st.integers(min_value=0, max_value=8)
)
def test_range_answers_match_brute_force(write_ids: ValidWriteIdList, low: int, width: int) -> None:
    high = low + width
    ids = range(low, high + 1)
    assert write_ids.is_write_id_range_valid(low, high) is _oracle(
        [write_ids.is_write_id_valid(w) for w in ids]
    )
    expected_aborted = (
        NONE
        if write_ids.high_watermark < low
        else _oracle([write_ids.is_write_id_aborted(w) for w in ids])
    )
    assert write_ids.is_write_id_range_aborted(low, high) is expected_aborted
    txns = ValidTxnList(
        write_ids.high_watermark,
        write_ids.open_write_ids,
        write_ids.aborted_write_ids,
        write_ids.min_open_write_id,
    )
    assert txns.is_txn_range_valid(low, high) is write_ids.is_write_id_range_valid(low, high)


@settings(max_examples=200)
@given(
    write_id_lists(), st.integers(min_value=0, max_value=45), st.integers(min_value=0, max_value=8)
)
def test_compactor_list_never_covers_an_unresolved_write_id(
    reader: ValidWriteIdList, low: int, width: int
) -> None:
    compactor = ValidCompactorWriteIdList.from_reader(reader)
    high = low + width
    if compactor.is_write_id_range_valid(low, high) is ALL:
        # every id in the range is committed or aborted for the reader: none open, none unknown
        assert all(
            reader.is_write_id_valid(w) or reader.is_write_id_aborted(w)
            for w in range(max(low, 1), high + 1)
        )
    assert all(w <= compactor.high_watermark for w in compactor.exceptions)
    assert set(compactor.exceptions) <= set(reader.aborted_write_ids)


@pytest.mark.parametrize("parse", [ValidWriteIdList.parse, ValidTxnList.parse])
@pytest.mark.parametrize("text", [None, 5, b"db.t:5::"])
def test_a_snapshot_that_is_not_a_string_is_a_typed_error(parse: Any, text: Any) -> None:
    """Issue 13: ``parse(None)`` was an AttributeError."""
    with pytest.raises(InvalidSnapshotError, match="expected a string"):
        parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "db.t:" + "9" * 5000 + ":9223372036854775807::",
        "db.t:5:9223372036854775807:" + "1" * 5000 + ":",
        "db.t:5:9223372036854775807::-" + "7" * 5000,
        "db.t:9223372036854775808:9223372036854775807::",
    ],
)
def test_a_number_too_long_for_a_java_long_is_a_typed_error(text: str) -> None:
    """Issue 13: a 5,000-digit number was Python's untyped int() digit-limit ValueError; the
    message stays short."""
    with pytest.raises(InvalidSnapshotError, match="does not fit a Java long") as info:
        ValidWriteIdList.parse(text)
    assert len(str(info.value)) < 400
    with pytest.raises(InvalidSnapshotError, match="does not fit a Java long"):
        ValidTxnList.parse("9" * 5000 + ":5::")


def test_leading_zeros_still_read_as_the_number() -> None:
    assert (
        ValidWriteIdList.parse("db.t:" + "0" * 30 + "5:9223372036854775807::").high_watermark == 5
    )
