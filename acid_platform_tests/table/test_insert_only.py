"""Insert-only (micro-managed) transactional tables, as Hive keeps them: plain ORC, Parquet or
text files named ``000000_0`` in ``delta_w_w_s`` / ``base_w`` directories, read under the
snapshot's ValidWriteIdList (aborted and open write ids' directories ignored, INSERT OVERWRITE
hiding what is older), and UPDATE / DELETE / MERGE refused with Hive's error 10414."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from acid_platform import Warehouse
from acid_platform.errors import InsertOnlyTableError, UnsupportedOperationError
from acid_platform.format.plain_files import decode_text
from acid_platform.table import Table, lit
from acid_platform.table.schema import data_schema
from acid_platform_tests.helpers import data_files

FORMATS = ["orc", "parquet", "textfile"]
COLUMNS = [("id", "int"), ("name", "string"), ("ts", "timestamp"), ("amount", "decimal(10,2)")]
HIVE_MESSAGE = (
    "Attempt to do update or delete on table default.mm that is insert-only transactional"
)
MM = {"transactional": "true", "transactional_properties": "insert_only"}


def _rows(ids: range | list[int]) -> list[dict[str, object]]:
    import datetime as dt
    import decimal

    return [
        {
            "id": i,
            "name": None if i % 5 == 0 else f"n{i}",
            "ts": dt.datetime(1969, 12, 31, 23, 59, 58, 500000) + dt.timedelta(hours=i),
            "amount": decimal.Decimal(i) / 4,
        }
        for i in ids
    ]


def _create(wh: Warehouse, fmt: str, **kw: object) -> Table:
    return wh.create_table("mm", COLUMNS, properties=MM, stored_as=fmt, **kw)  # type: ignore[arg-type]


def _files(table: Table) -> set[str]:
    """The table's data files, relative to its directory."""
    root = Path(table.spec.location)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _ids(table: Table) -> list[int]:
    return sorted(r["id"] for r in table.scan(columns=["id"]).to_arrow().to_pylist())


def _read_plain(path: str, fmt: str, table: Table) -> list[dict[str, object]]:
    """One data file read with plain pyarrow, as a reader that knows nothing of ACID would."""
    if fmt == "orc":
        return orc.ORCFile(path).read().to_pylist()
    if fmt == "parquet":
        return pq.read_table(path).to_pylist()
    return decode_text(Path(path).read_bytes(), data_schema(table.spec), path).to_pylist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_inserts_write_plain_files_hive_names_and_read_back(wh: Warehouse, fmt: str) -> None:
    table = _create(wh, fmt)
    assert table.spec.is_insert_only and table.spec.file_format == fmt
    table.insert(_rows(range(1, 4)))
    table.insert(_rows([4]))
    assert _files(table) == {
        "delta_0000001_0000001_0000/000000_0",
        "delta_0000002_0000002_0000/000000_0",
    }
    first = os.path.join(table.spec.location, "delta_0000001_0000001_0000", "000000_0")
    plain = _read_plain(first, fmt, table)
    assert plain == _rows(range(1, 4))  # just the table's columns: no ACID event struct
    assert not any(Path(table.spec.location).rglob("_orc_acid_version"))
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == _rows(range(1, 5))
    assert wh.sql("SELECT count(*) AS n FROM mm").to_pylist() == [{"n": 4}]


@pytest.mark.parametrize("fmt", FORMATS)
def test_sql_create_stored_as_and_insert_overwrite(wh: Warehouse, fmt: str) -> None:
    wh.sql(
        f"CREATE TABLE mm (id int, name string) STORED AS {fmt.upper()} "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    wh.sql("INSERT INTO mm VALUES (1, 'a'), (2, 'b')")
    wh.sql("INSERT OVERWRITE TABLE mm VALUES (3, 'c')")
    wh.sql("INSERT INTO mm VALUES (4, 'd')")
    table = wh.table("mm")
    assert table.spec.file_format == fmt
    assert _ids(table) == [3, 4]
    dirs = sorted(p.name for p in Path(table.spec.location).iterdir() if p.is_dir())
    assert dirs == ["base_0000002", "delta_0000001_0000001_0000", "delta_0000003_0000003_0000"]
    assert (Path(table.spec.location) / "base_0000002" / "000000_0").is_file()
    wh.sql("INSERT OVERWRITE TABLE mm SELECT * FROM mm WHERE id > 100")  # empty: hides all
    assert _ids(table) == []


def test_snapshot_reader_across_an_aborted_write_and_insert_overwrite(wh: Warehouse) -> None:
    table = _create(wh, "parquet")
    table.insert(_rows([1, 2]))
    with pytest.raises(RuntimeError), wh.transaction():
        table.insert(_rows([3]))
        raise RuntimeError("roll back")
    aborted = Path(table.spec.location) / "delta_0000002_0000002_0000" / "000000_0"
    assert aborted.is_file()  # written, then aborted: its directory is ignored by readers
    assert _ids(table) == [1, 2]
    before = table.scan(columns=["id"])  # a snapshot (reader lease) taken now
    table.insert(_rows([4]), overwrite=True)
    table.insert(_rows([5]))
    assert _ids(table) == [4, 5]
    assert sorted(r["id"] for r in before.to_arrow().to_pylist()) == [1, 2]


def test_an_open_write_is_invisible_to_other_readers(wh: Warehouse, tmp_path: Path) -> None:
    table = _create(wh, "orc")
    table.insert(_rows([1]))
    other = Warehouse.open(wh.root)
    with wh.transaction():
        table.insert(_rows([2]))
        assert _ids(table) == [1, 2]  # its own write id
        assert _ids(other.table("mm")) == [1]  # open: not in another reader's snapshot
    assert _ids(other.table("mm")) == [1, 2]


def test_multi_statement_transaction_writes_one_delta_per_statement(wh: Warehouse) -> None:
    table = _create(wh, "orc")
    with wh.transaction():
        table.insert(_rows([1]))
        table.insert(_rows([2, 3]))
    dirs = sorted(p.name for p in Path(table.spec.location).iterdir())
    assert dirs == ["delta_0000001_0000001_0000", "delta_0000001_0000001_0001"]
    assert _ids(table) == [1, 2, 3]


DML: dict[str, Callable[[Table], object]] = {
    "update": lambda t: t.update({"name": lit("z")}, "id = 1"),
    "delete": lambda t: t.delete("id = 1"),
    "merge": lambda t: t.merge(_rows([1]), "t.id = s.id").when_matched_delete().execute(),
}


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
@pytest.mark.parametrize("op", sorted(DML))
def test_row_level_dml_is_refused_with_hives_error(wh: Warehouse, fmt: str, op: str) -> None:
    table = _create(wh, fmt)
    table.insert(_rows([1, 2]))
    before = data_files(wh.root)
    with pytest.raises(InsertOnlyTableError, match=HIVE_MESSAGE):
        DML[op](table)
    assert data_files(wh.root) == before
    assert _ids(table) == [1, 2]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE mm SET name = 'z' WHERE id = 1",
        "DELETE FROM mm WHERE id = 1",
        "MERGE INTO mm t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
    ],
)
def test_sql_dml_is_refused_with_hives_error(wh: Warehouse, sql: str) -> None:
    _create(wh, "orc").insert(_rows([1]))
    with pytest.raises(InsertOnlyTableError, match=HIVE_MESSAGE):
        wh.sql(sql)


def test_row_id_is_refused(wh: Warehouse) -> None:
    table = _create(wh, "orc")
    with pytest.raises(UnsupportedOperationError, match="no ROW__ID"):
        table.scan(with_row_id=True).to_arrow()


def test_full_acid_tables_stay_orc(wh: Warehouse) -> None:
    with pytest.raises(UnsupportedOperationError, match="ACID compliant format"):
        wh.sql("CREATE TABLE f (id int) STORED AS PARQUET TBLPROPERTIES ('transactional'='true')")
    with pytest.raises(UnsupportedOperationError, match="STORED AS AVRO"):
        wh.create_table("g", [("id", "int")], properties=MM, stored_as="avro")
    with pytest.raises(Exception, match="primitive columns"):
        wh.create_table("h", [("m", "map<string,int>")], properties=MM, stored_as="textfile")
    assert wh.sql("SHOW TABLES").to_pylist() == []


def test_partitioned_and_bucketed_insert_only(wh: Warehouse) -> None:
    table = wh.create_table(
        "mm",
        [("id", "int"), ("name", "string")],
        partition_columns=[("ds", "string")],
        bucket_columns=["id"],
        num_buckets=2,
        properties=MM,
        stored_as="parquet",
    )
    table.insert([{"id": i, "name": f"n{i}", "ds": "a" if i % 2 else "b"} for i in range(8)])
    names = _files(table)
    assert names and all(n.split("/")[-1] in ("000000_0", "000001_0") for n in names)
    assert {n.split("/")[0] for n in names} == {"ds=a", "ds=b"}
    assert sorted(r["id"] for r in table.scan(where="ds = 'a'").to_arrow().to_pylist()) == [
        1,
        3,
        5,
        7,
    ]


def test_text_values_as_hive_writes_them(wh: Warehouse) -> None:
    table = wh.create_table(
        "mm",
        [("b", "boolean"), ("d", "double"), ("t", "timestamp"), ("s", "string")],
        properties=MM,
        stored_as="textfile",
    )
    import datetime as dt

    table.insert(
        [
            {"b": True, "d": 1e7, "t": dt.datetime(2024, 1, 2, 3, 4, 5), "s": None},
            {"b": False, "d": 0.5, "t": dt.datetime(2024, 1, 2, 3, 4, 5, 120000), "s": "x"},
        ]
    )
    (name,) = _files(table)
    assert (Path(table.spec.location) / name).read_bytes() == (
        b"true\x011.0E7\x012024-01-02 03:04:05\x01\\N\n"
        b"false\x010.5\x012024-01-02 03:04:05.12\x01x\n"
    )
    assert table.scan().to_arrow().num_rows == 2
    with pytest.raises(Exception, match="delimiter"):
        table.insert([{"s": "a\nb"}])
    assert table.scan().to_arrow().column("s").to_pylist() == [None, "x"]


def test_arrow_rows_round_trip_every_primitive_type_in_parquet(wh: Warehouse) -> None:
    cols = [("a", "tinyint"), ("b", "smallint"), ("c", "bigint"), ("d", "float"), ("e", "date")]
    cols += [("f", "char(3)"), ("g", "varchar(2)"), ("h", "binary"), ("i", "array<int>")]
    table = wh.create_table("mm", cols, properties=MM, stored_as="parquet")
    import datetime as dt

    row = {"a": 1, "b": 2, "c": 3, "d": 1.5, "e": dt.date(1, 1, 1), "f": "x", "g": "abc"}
    row |= {"h": b"\x00\x01", "i": [1, None]}
    table.insert(pa.Table.from_pylist([row]))
    (got,) = table.scan().to_arrow().to_pylist()
    assert got == row | {"f": "x  ", "g": "ab"}  # Hive's char padding and varchar cut


def _dirs(table: Table, partition: str = "") -> list[str]:
    root = Path(table.spec.location) / partition
    return sorted(p.name for p in root.iterdir() if p.is_dir())


@pytest.mark.parametrize("fmt", FORMATS)
def test_major_compaction_merges_to_a_plain_base_and_the_cleaner_removes_the_inputs(
    wh: Warehouse, fmt: str
) -> None:
    table = _create(wh, fmt)
    table.insert(_rows([1, 2]))
    with pytest.raises(RuntimeError), wh.transaction():
        table.insert(_rows([3]))
        raise RuntimeError("roll back")
    table.insert(_rows([4]))
    reader = table.scan(columns=["id"])  # holds the files the compaction replaces
    (info,) = wh.compact("mm", kind="major", wait=True)
    assert info.state.value in ("ready for cleaning", "succeeded"), info
    base = [d for d in _dirs(table) if d.startswith("base_")]
    assert base == [f"base_0000003_v{info.txn_id:07d}"]
    assert _files(table) >= {f"{base[0]}/000000_0"}
    path = Path(table.spec.location) / base[0] / "000000_0"
    assert sorted(int(str(r["id"])) for r in _read_plain(str(path), fmt, table)) == [1, 2, 4]
    assert _ids(table) == [1, 2, 4]
    first = wh.clean().removed  # the aborted delta goes; the reader's lease keeps the others
    assert [os.path.basename(p) for p in first] == ["delta_0000002_0000002_0000"]
    assert sorted(r["id"] for r in reader.to_arrow().to_pylist()) == [1, 2, 4]
    wh.clean()
    assert _dirs(table) == base  # the deltas and the aborted delta are gone
    assert _ids(table) == [1, 2, 4]


def test_minor_compaction_merges_deltas_into_one_plain_delta(wh: Warehouse) -> None:
    table = _create(wh, "orc")
    table.insert(_rows([1]), overwrite=True)
    table.insert(_rows([2]))
    table.insert(_rows([3]))
    (info,) = wh.compact("mm", kind="minor", wait=True)
    wh.clean()
    assert _dirs(table) == ["base_0000001", f"delta_0000002_0000003_v{info.txn_id:07d}"]
    assert _ids(table) == [1, 2, 3]
    table.insert(_rows([4]))
    wh.compact("mm", kind="major", wait=True)
    wh.clean()
    (base,) = _dirs(table)
    assert base.startswith("base_0000004_v") and _ids(table) == [1, 2, 3, 4]


def test_the_initiator_compacts_insert_only_tables(wh: Warehouse) -> None:
    from acid_platform.compaction import Initiator

    table = _create(wh, "parquet")
    for i in range(12):
        table.insert(_rows([i]))
    (decision,) = [d for d in Initiator(wh).run() if d.table == "mm"]
    assert decision.type == "major" and decision.deltas == 12, decision
    assert decision.reason == "12 deltas > hive.compactor.delta.num.threshold 10 and no base"


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_timestamps_in_hives_whole_range(wh: Warehouse, fmt: str) -> None:
    import datetime as dt

    table = wh.create_table("mm", [("id", "int"), ("t", "timestamp")], properties=MM, stored_as=fmt)
    wide = [dt.datetime(1500, 6, 1, 10), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]
    table.insert(pa.table({"id": [1, 2], "t": pa.array(wide, pa.timestamp("us"))}))
    table.insert([{"id": 3, "t": dt.datetime(2024, 1, 1)}])
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["t"] for r in got] == [*wide, dt.datetime(2024, 1, 1)]


def test_a_text_table_refuses_timestamps_beyond_nanoseconds(wh: Warehouse) -> None:
    import datetime as dt

    table = wh.create_table("mm", [("t", "timestamp")], properties=MM, stored_as="textfile")
    with pytest.raises(Exception, match="nanosecond range"):
        table.insert(pa.table({"t": pa.array([dt.datetime(1500, 1, 1)], pa.timestamp("us"))}))
    assert table.scan().to_arrow().num_rows == 0


def test_the_consistency_checks_pass_on_an_insert_only_table(wh: Warehouse) -> None:
    from acid_platform.table.verify import verify_table

    table = _create(wh, "parquet")
    table.insert(_rows([1, 2]))
    with pytest.raises(RuntimeError), wh.transaction():
        table.insert(_rows([3]))
        raise RuntimeError("roll back")
    table.insert(_rows([4]), overwrite=True)
    findings = verify_table(wh, "mm")
    assert [f.check for f in findings if not f.passed] == []
    assert len(findings) == 6


def test_compaction_with_hive3_names_marks_the_plain_base_compacted(wh: Warehouse) -> None:
    table = wh.create_table(
        "mm",
        COLUMNS,
        properties=MM | {"acid.compactor.hive3.compatible": "true"},
        stored_as="parquet",
    )
    table.insert(_rows([1]))
    table.insert(_rows([2]))
    wh.compact("mm", kind="major", wait=True)
    wh.clean()
    assert _dirs(table) == ["base_0000002"]  # Hive 3's name: no _v<T>
    assert _files(table) == {"base_0000002/000000_0", "base_0000002/_metadata_acid"}
    assert _ids(table) == [1, 2]
    table.insert(_rows([3]))
    assert _ids(table) == [1, 2, 3]


def test_truncate_writes_empty_bases_as_hive_does(wh: Warehouse) -> None:
    wh.sql(
        "CREATE TABLE mm (id int) PARTITIONED BY (p string) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    wh.sql("INSERT INTO mm VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = wh.table("mm").scan(columns=["id"])
    wh.sql("TRUNCATE TABLE mm PARTITION (p='a')")
    assert _ids(wh.table("mm")) == [2, 3]
    assert _dirs(wh.table("mm"), "p=a") == ["base_0000002", "delta_0000001_0000001_0000"]
    wh.sql("TRUNCATE TABLE mm")
    assert _ids(wh.table("mm")) == []
    assert sorted(r["id"] for r in before.to_arrow().to_pylist()) == [1, 2, 3]
    wh.sql(
        "CREATE TABLE flat (id int) STORED AS TEXTFILE "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    wh.sql("INSERT INTO flat VALUES (1)")
    wh.sql("TRUNCATE TABLE flat")
    assert wh.sql("SELECT count(*) AS n FROM flat").to_pylist() == [{"n": 0}]


def test_fsck_checks_plain_files_against_their_record(wh: Warehouse) -> None:
    from acid_platform.errors import FileRecordError
    from acid_platform.table.fsck import fsck_table

    table = _create(wh, "parquet")
    table.insert(_rows([1, 2]))
    table.insert(_rows([3]))
    assert fsck_table(wh, "mm").ok
    stray = Path(table.spec.location) / "delta_0000002_0000002_0000" / "000001_0"
    stray.write_bytes(b"not written by a commit")
    report = fsck_table(wh, "mm")
    assert not report.ok and [p.path for p in report.problems] == [str(stray)]
    with pytest.raises(FileRecordError):
        table.scan().to_arrow()  # a read refuses a file no commit wrote
    stray.unlink()
    (Path(table.spec.location) / "delta_0000001_0000001_0000" / "000000_0").unlink()
    assert not fsck_table(wh, "mm").ok
