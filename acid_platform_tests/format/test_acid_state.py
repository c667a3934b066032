"""Directory selection over real directories: Hive's TestAcidUtils and Trino's TestAcidTables
cases, Hive 4 visibility and compaction rules, and the Hive-written fixture tables."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_platform.errors import AcidFormatError, InvalidNameError, NotEnoughHistoryError
from acid_platform.format.acid_state import (
    AcidDir,
    AcidState,
    OriginalFile,
    acid_state,
    is_acid_dir_name,
    list_partition_dirs,
)
from acid_platform.format.names import delete_delta_dir_name, delta_dir_name
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidCompactorWriteIdList, ValidWriteIdList

MAX = 2**63 - 1
COMPACTED = {"thisFileVersion": "0", "dataFormat": "compacted"}
RAW = {"thisFileVersion": "0", "dataFormat": "raw"}


def make(root: Path, *entries: str | tuple[str, int]) -> Path:
    """Create files (``name`` of 3 bytes, or ``(name, size)``); a name ending in ``/`` is a dir."""
    for entry in entries:
        name, size = (entry, 3) if isinstance(entry, str) else entry
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    return root


def marker(root: Path, directory: str, content: dict[str, str] | str) -> None:
    path = root / directory / "_metadata_acid"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


def w(text: str) -> ValidWriteIdList:
    return ValidWriteIdList.parse(text)


def names(items: tuple[AcidDir | OriginalFile, ...] | list[AcidDir]) -> list[str]:
    return [item.name for item in items]


def everything_up_to(hwm: int) -> ValidWriteIdList:
    return w(f"tbl:{hwm}:{MAX}::")


# --------------------------------------------------------------------------- originals


def test_original_files_in_path_order(tmp_path: Path) -> None:
    # Hive TestAcidUtils.testOriginal / Trino TestAcidTables.testOriginal
    part = make(
        tmp_path / "part1",
        "000000_0",
        "000000_0_copy_1",
        "000000_0_copy_2",
        "000001_1",
        "000002_0",
        "random",
        "_done",
        "_tmp/000000_0",
        "_tmp/abc/000000_0",
        "subdir/000000_0",
    )
    state = acid_state(part, everything_up_to(100))
    assert state.base is None
    assert state.deltas == ()
    assert state.obsolete == ()
    assert [f.path for f in state.original_files] == [
        str(part / n)
        for n in (
            "000000_0",
            "000000_0_copy_1",
            "000000_0_copy_2",
            "000001_1",
            "000002_0",
            "random",
            "subdir/000000_0",
        )
    ]
    assert [f.bucket_id for f in state.original_files] == [0, 0, 0, 1, 2, -1, 0]
    assert all(f.size == 3 for f in state.original_files)


def test_original_files_and_deltas(tmp_path: Path) -> None:
    # Hive TestAcidUtils.testOriginalDeltas / Trino testOriginalDeltas
    part = make(
        tmp_path / "part1",
        "000000_0",
        "000001_1",
        "000002_0",
        "random",
        "_done",
        "_tmp/000000_0",
        "_tmp/delta_025_025/000000_0",
        "subdir/000000_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delta_050_100/bucket_0",
        "delta_101_101/bucket_0",
    )
    state = acid_state(part, everything_up_to(100), ValidTxnList(1000))
    assert state.base is None
    assert names(state.obsolete) == ["delta_025_025", "delta_029_029"]
    assert names(state.original_files) == ["000000_0", "000001_1", "000002_0", "random", "000000_0"]
    assert state.original_files[-1].path == str(part / "subdir" / "000000_0")
    assert names(state.deltas) == ["delta_025_030", "delta_050_100"]
    assert [(d.min_write_id, d.max_write_id) for d in state.deltas] == [(25, 30), (50, 100)]


def test_a_base_makes_original_files_obsolete(tmp_path: Path) -> None:
    # Hive/Trino testObsoleteOriginals
    part = make(
        tmp_path, "base_10/bucket_0", "base_5/bucket_0", "000000_0", "000001_1", "sub/000002_0"
    )
    state = acid_state(part, everything_up_to(150))
    assert state.base is not None and state.base.name == "base_10"
    assert state.original_files == ()
    assert names(state.obsolete) == ["base_5", "000000_0", "000001_1", "000002_0"]
    assert isinstance(state.obsolete[1], OriginalFile)


def test_empty_original_files_are_skipped_unless_asked(tmp_path: Path) -> None:
    part = make(tmp_path, ("000000_0", 0), "000001_0")
    assert names(acid_state(part, everything_up_to(1)).original_files) == ["000001_0"]
    kept = acid_state(part, everything_up_to(1), ignore_empty_files=False)
    assert names(kept.original_files) == ["000000_0", "000001_0"]


# --------------------------------------------------------------------------- bases


def test_best_base_and_deltas(tmp_path: Path) -> None:
    # Hive TestAcidUtils.testBaseDeltas / Trino testBaseDeltas
    part = make(
        tmp_path,
        "_tmp/bucket_0",
        "_tmp/base_5/bucket_0",
        "base_5/bucket_0",
        "base_10/bucket_0",
        "base_49/bucket_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delta_050_105/bucket_0",
        "delta_90_120/bucket_0",
    )
    state = acid_state(part, everything_up_to(100), ValidTxnList(1000))
    assert state.base is not None and state.base.name == "base_49"
    assert names(state.obsolete) == [
        "base_10",
        "base_5",
        "delta_025_030",
        "delta_025_025",
        "delta_029_029",
    ]
    assert state.original_files == ()
    assert names(state.deltas) == ["delta_050_105"]


@pytest.fixture
def compacted_bases(tmp_path: Path) -> Path:
    """Hive's testBestBase tree, with compactor bases (Hive 2 treated every base as one)."""
    part = make(
        tmp_path / "part1",
        "base_5/bucket_0",
        "base_10/bucket_0",
        "base_25/bucket_0",
        "delta_98_100/bucket_0",
        "base_100/bucket_0",
        "delta_120_130/bucket_0",
        "base_200/bucket_0",
    )
    for base in ("base_5", "base_10", "base_25", "base_100", "base_200"):
        marker(part, base, COMPACTED)
    return part


def test_best_base_is_the_newest_usable_one(compacted_bases: Path) -> None:
    state = acid_state(compacted_bases, everything_up_to(150))
    assert state.base is not None and state.base.name == "base_100"
    assert state.base.is_compacted
    assert names(state.deltas) == ["delta_120_130"]
    assert names(state.obsolete) == ["base_10", "base_25", "base_5", "delta_98_100"]
    assert state.original_files == ()

    state = acid_state(compacted_bases, everything_up_to(10))
    assert state.base is not None and state.base.name == "base_10"
    assert state.deltas == ()
    assert names(state.obsolete) == ["base_5"]


def test_base_below_the_lowest_open_write_id_is_usable(compacted_bases: Path) -> None:
    # 121 is open, 99 aborted: base_100 holds no open write id; delta_98_100 mixes 99 with
    # committed ids, so the cleaner must keep 99's metadata.
    state = acid_state(compacted_bases, w("tbl:150:121:121:99"))
    assert state.base is not None and state.base.name == "base_100"
    assert names(state.deltas) == ["delta_120_130"]
    assert names(state.obsolete) == ["base_10", "base_25", "base_5", "delta_98_100"]
    assert state.has_uncompacted_aborts


def test_not_enough_history(compacted_bases: Path) -> None:
    with pytest.raises(NotEnoughHistoryError) as info:
        acid_state(compacted_bases, w("tbl:125:4:4:"))
    message = str(info.value)
    assert "Not enough history available for (125,4)" in message
    assert str(compacted_bases / "base_5") in message
    assert "tbl:125:4:4:" in message


def test_not_enough_history_names_the_oldest_base(tmp_path: Path) -> None:
    for deltas in (("delta_1_10/bucket_0", "delta_12_25/bucket_0"), ("delta_2_10/bucket_0",)):
        part = make(tmp_path / str(len(deltas)), *deltas, "base_25/bucket_0", "base_100/bucket_0")
        marker(part, "base_25", COMPACTED)
        marker(part, "base_100", COMPACTED)
        with pytest.raises(NotEnoughHistoryError, match=r"\(150,7\).*base_25"):
            acid_state(part, w("tbl:150:7:7:"))


def test_not_enough_history_for_a_hive4_compactor_base(tmp_path: Path) -> None:
    part = make(
        tmp_path, "base_0000010_v0000020/bucket_00000", "delta_0000011_0000011_0000/bucket_00000"
    )
    with pytest.raises(NotEnoughHistoryError):
        acid_state(part, w("tbl:11:5:5:"), ValidTxnList(30))


def test_insert_overwrite_bases_never_lack_history(tmp_path: Path) -> None:
    # An IOW base holds all history up to its write id; if the snapshot cannot see it, the
    # reader just reads the deltas.
    part = make(tmp_path, "delta_1_1/bucket_0", "base_25/bucket_0", "base_100/bucket_0")
    state = acid_state(part, w("tbl:20:4:4:"))
    assert state.base is None
    assert names(state.deltas) == ["delta_1_1"]


def test_base_of_a_converted_table(tmp_path: Path) -> None:
    part = make(tmp_path, f"base_{-(2**63)}/bucket_0", "delta_1_1/bucket_0", "base_100/bucket_0")
    marker(part, "base_100", COMPACTED)
    state = acid_state(part, w(f"tbl:1:{MAX}:"))
    assert state.base is not None and state.base.write_id == -(2**63)
    assert names(state.deltas) == ["delta_1_1"]
    assert state.obsolete == ()


def test_compactor_base_wins_over_insert_overwrite_base_of_same_write_id(tmp_path: Path) -> None:
    part = make(tmp_path, "base_0000005/bucket_00000", "base_0000005_v0000019/bucket_00000")
    state = acid_state(part, everything_up_to(5), ValidTxnList(20))
    assert state.base is not None and state.base.name == "base_0000005_v0000019"
    assert names(state.obsolete) == ["base_0000005"]

    # compactor txn 19 still open: its base is invisible, the IOW base is read
    state = acid_state(
        part, everything_up_to(5), ValidTxnList(20, open_txns=(19,), min_open_txn=19)
    )
    assert state.base is not None and state.base.name == "base_0000005"
    assert state.obsolete == ()


def test_compactor_base_by_marker_wins_over_insert_overwrite_base(tmp_path: Path) -> None:
    # Hive 3: the compactor base has no _v, only a _metadata_acid marker. Order of listing
    # does not matter.
    part = make(tmp_path, "base_5/bucket_0", "base_0000005/bucket_0")
    marker(part, "base_5", COMPACTED)
    state = acid_state(part, everything_up_to(5))
    assert state.base is not None and state.base.name == "base_5"
    assert names(state.obsolete) == ["base_0000005"]


def test_aborted_insert_overwrite_base_is_aborted(tmp_path: Path) -> None:
    part = make(tmp_path, "base_0000003/bucket_00000", "base_0000006/bucket_00000")
    state = acid_state(part, w(f"tbl:10:{MAX}::6"))
    assert state.base is not None and state.base.name == "base_0000003"
    assert names(state.aborted) == ["base_0000006"]
    assert state.obsolete == ()


def test_base_of_an_open_write_id_is_not_read(tmp_path: Path) -> None:
    # An INSERT OVERWRITE still running (write id 6 open) has already written base_0000006.
    # Hive 4 AcidUtils.isValidBase had a shortcut accepting any base <= the min open write id;
    # Hive removed it (HIVE-29601) and so do we: the open overwrite stays invisible.
    part = make(tmp_path, "delta_0000005_0000005_0000/bucket_00000", "base_0000006/bucket_00000")
    state = acid_state(part, w("tbl:6:6:6:"))
    assert state.base is None
    assert names(state.deltas) == ["delta_0000005_0000005_0000"]


def test_empty_base_directory_still_overwrites(tmp_path: Path) -> None:
    # INSERT OVERWRITE of an empty result: the base has no bucket file.
    part = make(tmp_path, "delta_0000001_0000001_0000/bucket_00000", "base_0000002/")
    state = acid_state(part, everything_up_to(2))
    assert state.base is not None and state.base.files == ()
    assert state.deltas == ()
    assert names(state.obsolete) == ["delta_0000001_0000001_0000"]


# --------------------------------------------------------------------------- deltas


def test_overlapping_deltas(tmp_path: Path) -> None:
    # Hive/Trino testOverlapingDelta: padding does not matter; delta_40_60 shadows 52_55, 60_60
    part = make(
        tmp_path,
        "delta_0000063_63/bucket_0",
        "delta_000062_62/bucket_0",
        "delta_00061_61/bucket_0",
        "delta_40_60/bucket_0",
        "delta_0060_60/bucket_0",
        "delta_052_55/bucket_0",
        "base_50/bucket_0",
    )
    state = acid_state(part, everything_up_to(100), ValidTxnList(1000))
    assert state.base is not None and state.base.name == "base_50"
    assert names(state.obsolete) == ["delta_052_55", "delta_0060_60"]
    assert names(state.deltas) == [
        "delta_40_60",
        "delta_00061_61",
        "delta_000062_62",
        "delta_0000063_63",
    ]


def test_overlapping_deltas_with_statement_ids(tmp_path: Path) -> None:
    # Hive/Trino testOverlapingDelta2: the statement deltas of 62 are all read; those of 60 are
    # covered by the minor-compacted delta_40_60.
    part = make(
        tmp_path,
        "delta_0000063_63_0/bucket_0",
        "delta_000062_62_0/bucket_0",
        "delta_000062_62_3/bucket_0",
        "delta_00061_61_0/bucket_0",
        "delta_40_60/bucket_0",
        "delta_0060_60_1/bucket_0",
        "delta_0060_60_4/bucket_0",
        "delta_0060_60_7/bucket_0",
        "delta_052_55/bucket_0",
        "delta_058_58/bucket_0",
        "base_50/bucket_0",
    )
    state = acid_state(part, everything_up_to(100))
    assert state.base is not None and state.base.name == "base_50"
    assert names(state.obsolete) == [
        "delta_052_55",
        "delta_058_58",
        "delta_0060_60_1",
        "delta_0060_60_4",
        "delta_0060_60_7",
    ]
    assert names(state.deltas) == [
        "delta_40_60",
        "delta_00061_61_0",
        "delta_000062_62_0",
        "delta_000062_62_3",
        "delta_0000063_63_0",
    ]


def test_deltas_with_an_open_write_id(tmp_path: Path) -> None:
    # Hive/Trino deltasWithOpenTxnInRead(2): delta_2_5 partly valid is read; 4 and 101 are not
    part = make(
        tmp_path,
        "delta_1_1/bucket_0",
        "delta_2_5/bucket_0",
        "delta_4_4_1/bucket_0",
        "delta_4_4_3/bucket_0",
        "delta_101_101_1/bucket_0",
    )
    txns = ValidTxnList(1000, open_txns=(50,), min_open_txn=55)
    state = acid_state(part, w("tbl:100:4:4"), txns)
    assert names(state.deltas) == ["delta_1_1", "delta_2_5"]
    assert state.obsolete == ()


def test_compactor_skips_deltas_with_unresolved_write_ids(tmp_path: Path) -> None:
    # Hive deltasWithOpenTxnsNotInCompact(2)
    part = make(tmp_path, "delta_1_1/bucket_0", "delta_2_5/bucket_0")
    state = acid_state(part, ValidCompactorWriteIdList.parse(f"tbl:4:{MAX}"))
    assert names(state.deltas) == ["delta_1_1"]
    make(part, "delta_2_5/bucket_0_flush_length", "delta_6_10/bucket_0")
    state = acid_state(part, ValidCompactorWriteIdList.parse(f"tbl:3:{MAX}"))
    assert names(state.deltas) == ["delta_1_1"]


def test_base_with_delete_deltas(tmp_path: Path) -> None:
    # Hive/Trino testBaseWithDeleteDeltas: delete_delta_110_110 is above the high watermark
    part = make(
        tmp_path,
        "base_5/bucket_0",
        "base_10/bucket_0",
        "base_49/bucket_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delete_delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delete_delta_025_030/bucket_0",
        "delta_050_105/bucket_0",
        "delete_delta_050_105/bucket_0",
        "delete_delta_110_110/bucket_0",
    )
    state = acid_state(part, everything_up_to(100), ValidTxnList(1000))
    assert state.base is not None and state.base.name == "base_49"
    assert names(state.obsolete) == [
        "base_10",
        "base_5",
        "delete_delta_025_030",
        "delta_025_030",
        "delta_025_025",
        "delete_delta_029_029",
        "delta_029_029",
    ]
    assert state.original_files == ()
    assert names(state.deltas) == ["delete_delta_050_105", "delta_050_105"]
    assert names(state.insert_deltas) == ["delta_050_105"]
    assert names(state.delete_deltas) == ["delete_delta_050_105"]


def test_overlapping_deltas_and_delete_deltas(tmp_path: Path) -> None:
    # Hive/Trino testOverlapingDeltaAndDeleteDelta
    part = make(
        tmp_path,
        "delta_0000063_63/bucket_0",
        "delta_000062_62/bucket_0",
        "delta_00061_61/bucket_0",
        "delete_delta_00064_64/bucket_0",
        "delta_40_60/bucket_0",
        "delete_delta_40_60/bucket_0",
        "delta_0060_60/bucket_0",
        "delta_052_55/bucket_0",
        "delete_delta_052_55/bucket_0",
        "base_50/bucket_0",
    )
    state = acid_state(part, everything_up_to(100))
    assert state.base is not None and state.base.name == "base_50"
    assert names(state.obsolete) == ["delete_delta_052_55", "delta_052_55", "delta_0060_60"]
    assert names(state.deltas) == [
        "delete_delta_40_60",
        "delta_40_60",
        "delta_00061_61",
        "delta_000062_62",
        "delta_0000063_63",
        "delete_delta_00064_64",
    ]


def test_minor_compacted_delta_makes_delete_delta_inside_obsolete(tmp_path: Path) -> None:
    part = make(tmp_path, "delta_40_60/bucket_0", "delete_delta_50_50/bucket_0")
    state = acid_state(part, everything_up_to(100))
    assert names(state.deltas) == ["delta_40_60"]
    assert names(state.obsolete) == ["delete_delta_50_50"]


def test_compactor_takes_delete_deltas_below_the_open_write_id(tmp_path: Path) -> None:
    # Hive deltasAndDeleteDeltasWithOpenTxnsNotInCompact
    part = make(
        tmp_path,
        "delta_1_1/bucket_0",
        "delete_delta_2_2/bucket_0",
        "delta_2_5/bucket_0",
        "delete_delta_2_5/bucket_0",
        "delta_2_5/bucket_0_flush_length",
        "delete_delta_7_7/bucket_0",
        "delta_6_10/bucket_0",
    )
    state = acid_state(part, ValidCompactorWriteIdList.parse(f"tbl:4:{MAX}:"), ValidTxnList(1000))
    assert names(state.deltas) == ["delta_1_1", "delete_delta_2_2"]


def test_delete_deltas_with_an_open_write_id(tmp_path: Path) -> None:
    # Hive/Trino deleteDeltasWithOpenTxnInRead: delete_delta_3_3 is covered by delete_delta_2_5
    part = make(
        tmp_path,
        "delta_1_1/bucket_0",
        "delta_2_5/bucket_0",
        "delete_delta_2_5/bucket_0",
        "delete_delta_3_3/bucket_0",
        "delta_4_4_1/bucket_0",
        "delta_4_4_3/bucket_0",
        "delta_101_101_1/bucket_0",
    )
    state = acid_state(part, w("tbl:100:4:4"))
    assert names(state.deltas) == ["delta_1_1", "delete_delta_2_5", "delta_2_5"]
    assert names(state.obsolete) == ["delete_delta_3_3"]


def test_statement_deltas_of_one_transaction_are_all_read(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        f"{delta_dir_name(7, 7, 0)}/bucket_00000",
        f"{delta_dir_name(7, 7, 1)}/bucket_00000",
        f"{delete_delta_dir_name(7, 7, 1)}/bucket_00000",
        f"{delta_dir_name(7, 7, 2)}/bucket_00000",
    )
    state = acid_state(part, everything_up_to(7))
    assert names(state.deltas) == [
        "delta_0000007_0000007_0000",
        "delete_delta_0000007_0000007_0001",
        "delta_0000007_0000007_0001",
        "delta_0000007_0000007_0002",
    ]


def test_aborted_deltas(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000003_0000003_0000/bucket_00000",
        "delete_delta_0000003_0000003_0000/bucket_00000",
        "delta_0000002_0000004/bucket_00000",
    )
    state = acid_state(part, w(f"tbl:10:{MAX}::3"))
    assert names(state.aborted) == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000003_0000003_0000",
    ]
    assert state.has_uncompacted_aborts  # delta_2_4 holds aborted 3 and committed 2, 4
    assert names(state.deltas) == ["delta_0000001_0000001_0000", "delta_0000002_0000004"]


def test_directories_of_open_or_aborted_compactions_are_invisible(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000002_0000002_0000/bucket_00000",
        "delta_0000001_0000002_v0000030/bucket_00000",
        "delta_0000001_0000002_v0000031/bucket_00000",
    )
    txns = ValidTxnList(40, open_txns=(31,), aborted_txns=(30,), min_open_txn=31)
    state = acid_state(part, everything_up_to(2), txns)
    assert names(state.deltas) == ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    assert names(state.aborted) == ["delta_0000001_0000002_v0000030"]
    # without a txn list every visibility suffix counts as committed
    state = acid_state(part, everything_up_to(2))
    assert names(state.deltas)[0] == "delta_0000001_0000002_v0000030"
    assert state.deltas[0].is_compacted
    assert "delta_0000001_0000001_0000" in names(state.obsolete)


def test_deltas_above_the_high_watermark_are_dropped_not_obsolete(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000002_0000002_0000/bucket_00000",
    )
    state = acid_state(part, everything_up_to(1))
    assert names(state.deltas) == ["delta_0000001_0000001_0000"]
    assert state.obsolete == () and state.aborted == ()


# --------------------------------------------------------------------------- files


def test_bucket_files_and_side_files(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        ("delta_0000002_0000005/bucket_00000", 500),
        ("delta_0000002_0000005/bucket_00000_flush_length", 8),
        ("delta_0000002_0000005/bucket_00001", 700),
        "delta_0000002_0000005/_orc_acid_version",
        "delta_0000002_0000005/.bucket_00000.crc",
        "delta_0000002_0000005/_SUCCESS",
        "delta_0000006_0000006_0000/bucket_00000_0",
        "delta_0000006_0000006_0000/bucket_00003_1",
        "delta_0000006_0000006_0000/bucket_00003_1_flush_length",
        "delta_0000006_0000006_0000/notes.txt",
    )
    streaming, insert = acid_state(part, everything_up_to(6)).deltas
    assert [(f.name, f.size, f.bucket_id, f.attempt_id) for f in streaming.files] == [
        ("bucket_00000", 500, 0, None),
        ("bucket_00001", 700, 1, None),
    ]
    assert streaming.files[0].flush_length_path == str(
        part / "delta_0000002_0000005" / "bucket_00000_flush_length"
    )
    assert streaming.files[1].flush_length_path is None
    assert [(f.bucket_id, f.attempt_id) for f in insert.files] == [(0, 0), (3, 1)]
    # side files only count in streaming deltas (min != max, no visibility suffix)
    assert all(f.flush_length_path is None for f in insert.files)


def test_sub_directories_of_bases_and_deltas_are_skipped(tmp_path: Path) -> None:
    # Trino testSkippingSubDirectories
    part = make(
        tmp_path,
        "base_1/bucket_0",
        "base_1/base_1/bucket_0",
        "delta_025_025/bucket_0",
        "delta_025_025/delta_025_025/bucket_0",
        "delete_delta_029_029/bucket_0",
        "delete_delta_029_029/delete_delta_029_029/bucket_0",
    )
    state = acid_state(part, everything_up_to(100))
    assert state.base is not None and state.base.name == "base_1"
    assert [f.path for f in state.base.files] == [str(part / "base_1" / "bucket_0")]
    assert state.original_files == ()
    assert names(state.deltas) == ["delta_025_025", "delete_delta_029_029"]
    assert all(len(d.files) == 1 for d in state.deltas)


def test_hidden_and_staging_directories_are_ignored(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        ".hive-staging_hive_2024-01-01_00-00-00_000_1/-ext-10000/000000_0",
        "_tmp.delta_0000002_0000002_0000/bucket_00000",
        "_tmp_space.db/base_3/bucket_0",
        "_SUCCESS",
        ".000000_0.crc",
        "delta_0000001_0000001_0000/bucket_00000",
        "sub/_hidden/000000_0",
        "sub/.hidden/000001_0",
    )
    state = acid_state(part, everything_up_to(5))
    assert names(state.deltas) == ["delta_0000001_0000001_0000"]
    assert state.original_files == ()
    assert state.base is None


def test_acid_named_files_and_nested_acid_dirs_are_originals(tmp_path: Path) -> None:
    part = make(tmp_path, "delta_0000001_0000001", "subdir/delta_0000002_0000002/bucket_00000")
    state = acid_state(part, everything_up_to(5))
    assert state.deltas == ()
    assert [f.path for f in state.original_files] == [
        str(part / "delta_0000001_0000001"),
        str(part / "subdir" / "delta_0000002_0000002" / "bucket_00000"),
    ]


def test_malformed_acid_directory_is_refused(tmp_path: Path) -> None:
    part = make(tmp_path, "delta_x_y/bucket_0")
    with pytest.raises(InvalidNameError, match="delta_x_y"):
        acid_state(part, everything_up_to(5))
    assert not is_acid_dir_name("delta_x_y")


def test_missing_directory_is_an_empty_partition(tmp_path: Path) -> None:
    expected = AcidState(None, (), ())
    assert acid_state(tmp_path / "nope", everything_up_to(5)) == expected
    assert acid_state(tmp_path, everything_up_to(5)) == expected


# --------------------------------------------------------------------------- raw (LOAD DATA)


def test_raw_delta_by_marker(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "delta_0000007_0000007_0000/000001_0",
        "delta_0000007_0000007_0000/000000_0_copy_1",
        "delta_0000007_0000007_0000/000000_0",
        "delta_0000007_0000007_0000/random",
    )
    marker(part, "delta_0000007_0000007_0000", RAW)
    (delta,) = acid_state(part, everything_up_to(7)).deltas
    assert delta.is_raw and not delta.is_compacted
    assert [(f.name, f.bucket_id) for f in delta.files] == [
        ("000000_0", 0),
        ("000000_0_copy_1", 0),
        ("000001_0", 1),
    ]


def test_raw_directories_without_marker(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "base_0000003/000000_0",
        "delta_0000004_0000004_0000/bucket_00000",
        "delta_0000005_0000005_0000/000000_0",
        "delete_delta_0000006_0000006_0000/000000_0",
        "delta_0000007_0000008/000000_0",
    )
    state = acid_state(part, everything_up_to(8))
    assert state.base is not None and state.base.is_raw
    assert [(d.name, d.is_raw) for d in state.deltas] == [
        ("delta_0000004_0000004_0000", False),
        ("delta_0000005_0000005_0000", True),
        ("delete_delta_0000006_0000006_0000", False),
        ("delta_0000007_0000008", False),
    ]


def test_compacted_base_is_never_raw(tmp_path: Path) -> None:
    part = make(tmp_path, "base_0000003_v0000010/000000_0")
    state = acid_state(part, everything_up_to(3))
    assert state.base is not None and state.base.is_compacted and not state.base.is_raw


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        {"thisFileVersion": "1", "dataFormat": "compacted"},
        {"dataFormat": "compacted"},
        {"thisFileVersion": "0", "dataFormat": "shiny"},
        {"thisFileVersion": "0"},
    ],
)
def test_bad_metadata_file_is_an_error(tmp_path: Path, content: dict[str, str] | str) -> None:
    part = make(tmp_path, "base_5/bucket_0")
    marker(part, "base_5", content)
    with pytest.raises(AcidFormatError, match="_metadata_acid"):
        acid_state(part, everything_up_to(5))


# --------------------------------------------------------------------------- AcidDir


def test_acid_dir_properties(tmp_path: Path) -> None:
    part = make(
        tmp_path,
        "base_0000004_v0000009/bucket_00000",
        "delete_delta_0000005_0000006_0002/bucket_00000",
    )
    state = acid_state(part, everything_up_to(6), ValidTxnList(10))
    base, delta = state.base, state.deltas[0]
    assert base is not None
    assert (base.is_base, base.is_delete, base.write_id, base.min_write_id, base.max_write_id) == (
        True,
        False,
        4,
        0,
        4,
    )
    assert (base.statement_id, base.visibility_txn_id, base.is_compacted) == (-1, 9, True)
    assert (delta.is_base, delta.is_delete, delta.min_write_id, delta.max_write_id) == (
        False,
        True,
        5,
        6,
    )
    assert (delta.statement_id, delta.visibility_txn_id, delta.is_compacted) == (2, 0, False)
    with pytest.raises(TypeError):
        _ = delta.write_id


# --------------------------------------------------------------------------- file systems


def test_uri_and_explicit_file_system(tmp_path: Path) -> None:
    make(tmp_path / "tbl" / "p", "delta_0000001_0000001_0000/bucket_00000")
    by_uri = acid_state(f"file://{tmp_path}/tbl/p", everything_up_to(1))
    assert names(by_uri.deltas) == ["delta_0000001_0000001_0000"]
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    state = acid_state("tbl/p", everything_up_to(1), filesystem=sub)
    assert [d.path for d in state.deltas] == ["tbl/p/delta_0000001_0000001_0000"]
    assert state.deltas[0].files[0].path == "tbl/p/delta_0000001_0000001_0000/bucket_00000"


# --------------------------------------------------------------------------- partitions


def test_list_partition_dirs(tmp_path: Path) -> None:
    table = make(
        tmp_path / "t",
        "ds=2024-01-02/hr=1/delta_0000001_0000001_0000/bucket_00000",
        "ds=2024-01-01/hr=2/",
        "ds=2024-01-01/hr=10/",
        "ds=2024-01-01/HR=3/",
        "ds=2024-01-01/other=1/",
        "ds=2024-01-01/hr=4",  # a file, not a partition
        "ds=2024-01-01/.hive-staging_x/",
        "ds=a%3Ab/hr=1/",
        "_tmp/",
        "stray/",
    )
    assert list_partition_dirs(table, ["ds", "hr"]) == [
        ("ds=2024-01-01/HR=3", str(table / "ds=2024-01-01" / "HR=3")),
        ("ds=2024-01-01/hr=10", str(table / "ds=2024-01-01" / "hr=10")),
        ("ds=2024-01-01/hr=2", str(table / "ds=2024-01-01" / "hr=2")),
        ("ds=2024-01-02/hr=1", str(table / "ds=2024-01-02" / "hr=1")),
        ("ds=a%3Ab/hr=1", str(table / "ds=a%3Ab" / "hr=1")),
    ]
    assert [name for name, _ in list_partition_dirs(table, ["ds"])] == [
        "ds=2024-01-01",
        "ds=2024-01-02",
        "ds=a%3Ab",
    ]
    assert list_partition_dirs(table, []) == [("", str(table))]
    assert list_partition_dirs(tmp_path / "missing", ["ds"]) == []


# --------------------------------------------------------------------------- Hive-written tables


def test_hive_written_table_deltas(hive_fixtures: Path) -> None:
    table = hive_fixtures / "apache-hive" / "test_hcube_2.db" / "tbl1"
    state = acid_state(table, w("test_hcube_2.tbl1:3:9223372036854775807::"))
    assert names(state.deltas) == [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    ]
    assert [(f.name, f.size) for f in state.deltas[0].files] == [("bucket_00000", 611)]
    assert state.base is None and state.original_files == () and state.obsolete == ()
    older = acid_state(table, w("test_hcube_2.tbl1:2:9223372036854775807::"))
    assert len(older.deltas) == 2


def test_hive_written_replication_dump_partitions(hive_fixtures: Path) -> None:
    table = hive_fixtures / "apache-hive" / "repl_dump" / "hive" / "test_hcube_2" / "tbl6"
    partitions = list_partition_dirs(table, ["fld1"])
    assert [name for name, _ in partitions] == ["fld1=1", "fld1=2"]
    for _, path in partitions:
        state = acid_state(f"{path}/data", w("test_hcube_2.tbl6:2:9223372036854775807::"))
        assert names(state.deltas) == ["delta_0000001_0000001_0000"]


def test_hive_written_converted_table(hive_fixtures: Path) -> None:
    table = hive_fixtures / "trino" / "dummy_id_data_orc"
    state = acid_state(table, w(f"t:10000001:{MAX}::"))
    assert [(f.name, f.bucket_id) for f in state.original_files] == [
        ("000000_0", 0),
        ("000001_0", 1),
        ("000002_0", 2),
        ("000002_0_copy_1", 2),
        ("000002_0_copy_2", 2),
    ]
    assert names(state.delete_deltas) == ["delete_delta_10000001_10000001_0000"]


def test_hive_written_delete_deltas(hive_fixtures: Path) -> None:
    # delete_delta_4_4 (minor-compacted naming) sorts before and shadows delete_delta_4_4_0
    state = acid_state(hive_fixtures / "trino" / "fullacid_delete_delta_test", w(f"t:10:{MAX}::"))
    assert names(state.deltas) == [
        "delete_delta_0000004_0000004",
        "delete_delta_0000007_0000007_0000",
    ]
    assert names(state.obsolete) == ["delete_delta_0000004_0000004_0000"]
    nation = hive_fixtures / "trino" / "nation_delete_deltas"
    assert len(acid_state(nation, w(f"t:4:{MAX}::")).delete_deltas) == 2
    assert names(acid_state(nation, w(f"t:3:{MAX}::")).deltas) == [
        "delete_delta_0000003_0000003_0000"
    ]


# --------------------------------------------------------------------------- property


@settings(max_examples=60, deadline=None)
@given(
    written=st.sets(st.integers(min_value=1, max_value=12), min_size=1),
    states=st.lists(st.sampled_from(["committed", "open", "aborted"]), min_size=12, max_size=12),
    hwm=st.integers(min_value=0, max_value=12),
)
def test_single_statement_deltas_follow_the_snapshot(
    written: set[int], states: list[str], hwm: int
) -> None:
    """Each write id's delta and delete delta are read iff the write id is valid, and listed as
    aborted iff it is aborted."""
    open_ids = {i for i in range(1, hwm + 1) if states[i - 1] == "open"}
    aborted_ids = {i for i in range(1, hwm + 1) if states[i - 1] == "aborted"}
    write_ids = ValidWriteIdList.of("db.t", hwm, open_ids, aborted_ids)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in written:
            make(
                root,
                f"{delta_dir_name(i, i, 0)}/bucket_00000",
                f"{delete_delta_dir_name(i, i, 0)}/bucket_00000",
            )
        state = acid_state(root, write_ids)
    visible = sorted(i for i in written if write_ids.is_write_id_valid(i))
    assert [(d.min_write_id, d.is_delete) for d in state.deltas] == [
        (i, delete) for i in visible for delete in (True, False)
    ]
    assert sorted({d.min_write_id for d in state.aborted}) == sorted(written & aborted_ids)
    assert state.obsolete == ()
