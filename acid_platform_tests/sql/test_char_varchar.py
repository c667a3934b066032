"""char(n) and varchar(n) as Hive has them: varchar cut to n on write, char cut and padded to n
(stored padded, read padded, compared ignoring trailing spaces), the ORC footer naming
CHAR/VARCHAR with their lengths, and the proleptic Gregorian calendar."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyorc

from acid_platform import Warehouse
from acid_platform.format import (
    EventWriter,
    ValidWriteIdList,
    bucket_file_name,
    delta_dir_name,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.format.orc_footer import PROLEPTIC_GREGORIAN
from acid_platform.format.orc_tail import parse_tail
from acid_platform.format.protobuf import decode_message, decompress_stream
from acid_platform.format.streaming_file import StreamingEventFile
from acid_platform.format.types import row_schema

CREATE = (
    "CREATE TABLE t (id INT, c CHAR(5), v VARCHAR(3), s STRING) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true')"
)


def _rows(wh: Warehouse, sql: str) -> list[dict[str, object]]:
    return wh.sql(sql).to_pylist()  # type: ignore[no-any-return]


def _footer(path: Path) -> dict[int, list[int | bytes]]:
    data = path.read_bytes()
    info = parse_tail(data)
    end = len(data) - 1 - info.postscript_length
    raw = decompress_stream(data[end - info.footer_length : end], info.compression, info.block_size)
    return decode_message(raw)


def test_values_follow_hives_rules(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, 'ab', 'abcdef', 'ab'), (2, 'abcdefgh', 'x', 'x  ')")
    assert _rows(wh, "SELECT id, c, v, s FROM t ORDER BY id") == [
        {"id": 1, "c": "ab   ", "v": "abc", "s": "ab"},
        {"id": 2, "c": "abcde", "v": "x", "s": "x  "},
    ]
    # a constant compared with a char column is converted to char(5): trailing spaces do not count
    assert _rows(wh, "SELECT id FROM t WHERE c = 'ab   '") == [{"id": 1}]
    assert _rows(wh, "SELECT id FROM t WHERE c = 'ab'") == [{"id": 1}]
    assert _rows(wh, "SELECT id FROM t WHERE c IN ('abcde', 'zz') ORDER BY id") == [{"id": 2}]
    assert _rows(wh, "SELECT id FROM t WHERE s = 'x'") == []  # string keeps its spaces
    # UPDATE and DELETE write and compare by the same rules
    wh.sql("UPDATE t SET c = 'q', v = 'zzzzz' WHERE c = 'ab'")
    assert _rows(wh, "SELECT c, v FROM t WHERE id = 1") == [{"c": "q    ", "v": "zzz"}]
    wh.sql("DELETE FROM t WHERE c = 'q '")
    assert _rows(wh, "SELECT id FROM t") == [{"id": 2}]


def test_orc_footer_names_char_and_varchar_and_the_calendar(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, 'ab', 'abcdef', 'ab')")
    (path,) = Path(wh.table("t").spec.location).glob("delta_*/bucket_*")
    with path.open("rb") as fh:
        assert str(pyorc.Reader(fh).schema).endswith(
            "row:struct<id:int,c:char(5),v:varchar(3),s:string>>"
        )
    assert _footer(path)[11] == [PROLEPTIC_GREGORIAN]


def test_files_written_before_the_rules_read_padded_and_cut(tmp_path: Path) -> None:
    # written with plain strings, as earlier versions did; read with the table's char types
    plain = pa.schema([("c", pa.string()), ("v", pa.string())])
    path = tmp_path / "t" / delta_dir_name(1, 1, 0) / bucket_file_name(0)
    write_acid_version_file(path.parent)
    with EventWriter(path, plain) as w:
        rows = pa.table({"c": ["ab", None], "v": ["abcdef", "x"]})
        w.write(insert_events(rows, 1, encode_bucket(0)))
    got = read_acid(
        tmp_path / "t",
        ValidWriteIdList.parse("db.t:1:9223372036854775807::"),
        schema=row_schema([("c", "char(5)"), ("v", "varchar(3)")]),
    )
    assert got.to_pylist() == [{"c": "ab   ", "v": "abc"}, {"c": None, "v": "x"}]


def test_streaming_files_follow_the_same_rules(tmp_path: Path) -> None:
    schema = row_schema([("c", "char(5)"), ("v", "varchar(3)")])
    path = tmp_path / "t" / delta_dir_name(1, 2) / bucket_file_name(0)
    write_acid_version_file(path.parent)
    f = StreamingEventFile(path, schema)
    rows = pa.table({"c": ["ab"], "v": ["abcdef"]})
    f.write(insert_events(rows, 1, encode_bucket(0)))
    f.flush()
    f.commit()
    f.close()
    with path.open("rb") as fh:
        assert str(pyorc.Reader(fh).schema).endswith("row:struct<c:char(5),v:varchar(3)>>")
    assert _footer(path)[11] == [PROLEPTIC_GREGORIAN]
    row = po.read_table(path).column("row").to_pylist()
    assert row == [{"c": "ab   ", "v": "abc"}]


def test_merge_conditions_compare_target_chars_as_hive(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, 'ab', 'a', 'x'), (2, 'cd', 'b', 'y')")
    wh.sql(
        "MERGE INTO t USING (SELECT 1 AS id, 'ab' AS c) s ON t.id = s.id "
        "WHEN MATCHED AND t.c = 'ab' AND s.c = 'ab' THEN UPDATE SET v = 'hit'"
    )
    assert _rows(wh, "SELECT id, v FROM t ORDER BY id") == [
        {"id": 1, "v": "hit"},
        {"id": 2, "v": "b"},
    ]
