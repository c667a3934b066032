"""Record writers: delimited, JSON, regex, Arrow and pandas records into table rows, and bad
records named by a typed error that leaves the transaction to abort (or go on)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    InvalidUtf8Error,
    InvalidUtf8RecordError,
    MalformedRecordError,
    SchemaMismatchError,
    StreamingError,
)
from acid_platform.streaming import (
    ArrowRecordWriter,
    PandasRecordWriter,
    RecordWriter,
    StreamingConnection,
    StrictDelimitedInputWriter,
    StrictJsonWriter,
    StrictRegexWriter,
)

SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("score", pa.float64()),
        ("day", pa.date32()),
        ("ok", pa.bool_()),
        ("amount", pa.decimal128(10, 2)),
    ]
)


def test_delimited_records_parse_into_the_columns_types() -> None:
    w = StrictDelimitedInputWriter("|")
    rows = w.parse(
        [b"1|a|1.5|2024-05-01|true|12.30", "2|\\N||\\N|false|", b"3||0|2024-01-31|true|1"],
        SCHEMA,
        "db.t",
        0,
    ).to_pylist()
    assert rows[0] == {
        "id": 1,
        "name": "a",
        "score": 1.5,
        "day": dt.date(2024, 5, 1),
        "ok": True,
        "amount": Decimal("12.30"),
    }
    assert rows[1] == {
        "id": 2,
        "name": None,
        "score": None,
        "day": None,
        "ok": False,
        "amount": None,
    }
    assert rows[2]["name"] == ""  # an empty string stays a string
    # a record holding a line break is read one by one, the same way
    (odd,) = w.parse(["4|two\nlines|2|2024-05-02|false|3"], SCHEMA, "db.t", 0).to_pylist()
    assert odd["name"] == "two\nlines" and odd["score"] == 2.0


def test_delimited_complex_columns() -> None:
    schema = pa.schema(
        [
            ("id", pa.int32()),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int32())),
        ]
    )
    (row,) = (
        StrictDelimitedInputWriter(",")
        .parse([b"1,a\x02b,x\x031\x02y\x032"], schema, "t", 0)
        .to_pylist()
    )
    assert row == {"id": 1, "tags": ["a", "b"], "m": [("x", 1), ("y", 2)]}


@pytest.mark.parametrize(
    ("records", "index", "problem"),
    [
        ([b"1,a,1,2024-01-01,true,1", b"2,b"], 7, r"has 2 field\(s\)"),
        ([b"1,a,1,2024-01-01,true,1", b"x,b,1,2024-01-01,true,1"], 7, "column 'id'"),
        ([b"1,a,1,2024-13-01,true,1"], 6, "column 'day'"),
    ],
)
def test_a_malformed_delimited_record_is_named(
    records: list[bytes], index: int, problem: str
) -> None:
    with pytest.raises(MalformedRecordError, match=problem) as err:
        StrictDelimitedInputWriter(",").parse(records, SCHEMA, "db.t", 6)
    assert err.value.record_index == index
    assert err.value.record == records[-1].decode()
    assert f"record {index} of the transaction" in str(err.value) and "db.t" in str(err.value)


def test_json_records() -> None:
    w = StrictJsonWriter()
    rows = w.parse(
        [b'{"id": 1, "NAME": "a", "day": "2024-05-01", "amount": 2.5}', '{"id": 2,\n "ok": true}'],
        SCHEMA,
        "db.t",
        0,
    ).to_pylist()
    assert rows[0]["name"] == "a" and rows[0]["day"] == dt.date(2024, 5, 1)
    assert rows[0]["amount"] == Decimal("2.50") and rows[0]["ok"] is None
    assert rows[1] == {
        "id": 2,
        "name": None,
        "score": None,
        "day": None,
        "ok": True,
        "amount": None,
    }


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b'{"id": 2, "name": ', "is not JSON"),
        (b"[1, 2]", "is not a JSON object"),
        (b"null", "is not a JSON object"),  # pyarrow 26 crashed the process on it (issue 29)
        (b" 42", "is not a JSON object"),
        (b'"text"', "is not a JSON object"),
        (b'{"id": 2, "colour": "red"}', "colour"),
        (b'{"id": "two"}', "does not fit"),
    ],
)
def test_a_malformed_json_record_is_named(bad: bytes, problem: str) -> None:
    with pytest.raises(MalformedRecordError, match=problem) as err:
        StrictJsonWriter().parse([b'{"id": 1}', bad], SCHEMA, "db.t", 0)
    assert err.value.record_index == 1 and err.value.record == bad.decode()


@pytest.mark.parametrize(
    "writer",
    [StrictJsonWriter(), StrictRegexWriter(r"(\d+) (.*)")],
    ids=["json", "regex"],
)
def test_latin1_bytes_are_a_named_record_error(writer: Any) -> None:
    """Bytes that are not UTF-8 never reach a string column: a typed error naming the record,
    not a bare UnicodeDecodeError (issue 29)."""
    good = b'{"id": 1}' if isinstance(writer, StrictJsonWriter) else b"1 a"
    latin1 = (
        "2 café".encode("latin-1")
        if not isinstance(writer, StrictJsonWriter)
        else ('{"id": 2, "name": "café"}'.encode("latin-1"))
    )
    schema = (
        SCHEMA
        if isinstance(writer, StrictJsonWriter)
        else pa.schema([("id", pa.int32()), ("name", pa.string())])
    )
    with pytest.raises(MalformedRecordError, match="record 6 .* is not UTF-8") as err:
        writer.parse([good, latin1], schema, "db.t", 5)
    assert err.value.record_index == 6 and "caf\\xe9" in err.value.record


def test_regex_records() -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
    w = StrictRegexWriter(r"(\d+) \[(.*)\]")
    assert w.parse([b"1 [a]", "22 []"], schema, "t", 0).to_pylist() == [
        {"id": 1, "name": "a"},
        {"id": 22, "name": ""},
    ]
    with pytest.raises(MalformedRecordError, match=r"record 4 .* does not match") as err:
        w.parse([b"1 [a]", b"nope"], schema, "t", 3)
    assert err.value.record == "nope"
    with pytest.raises(MalformedRecordError, match="column 'id'"):
        StrictRegexWriter(r"(\S+) \[(.*)\]").parse([b"x [a]"], schema, "t", 0)
    with pytest.raises(SchemaMismatchError, match="1 group"):
        StrictRegexWriter(r"(\d+)").parse([b"1"], schema, "t", 0)


def test_arrow_and_pandas_records() -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
    batch = pa.record_batch({"ID": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    assert ArrowRecordWriter().parse(batch, schema, "t", 0).to_pylist()[1] == {"id": 2, "name": "b"}
    frame = pd.DataFrame({"id": [3], "name": ["c"]}, index=[9])
    assert PandasRecordWriter().parse(frame, schema, "t", 0).to_pylist() == [{"id": 3, "name": "c"}]
    with pytest.raises(SchemaMismatchError, match="pandas"):
        PandasRecordWriter().parse(batch, schema, "t", 0)
    with pytest.raises(SchemaMismatchError, match="Arrow"):
        ArrowRecordWriter().parse(frame, schema, "t", 0)


@pytest.mark.parametrize(
    ("writer", "good", "bad"),
    [
        (StrictDelimitedInputWriter(","), [b"1,a", b"2,b"], [b"3,c", b"4"]),
        (
            StrictJsonWriter(),
            [b'{"id": 1, "v": "a"}', b'{"id": 2, "v": "b"}'],
            [b'{"id": 3}', b"{oops"],
        ),
        (StrictRegexWriter(r"(\d+):(\w+)"), [b"1:a", b"2:b"], [b"3:c", b"4-d"]),
    ],
    ids=["delimited", "json", "regex"],
)
def test_bad_input_leaves_the_transaction_to_abort_cleanly(
    local_wh: Warehouse, writer: RecordWriter, good: list[bytes], bad: list[bytes]
) -> None:
    t = local_wh.create_table("t", [("id", "int"), ("v", "string")])
    conn = (
        StreamingConnection.builder(local_wh)
        .with_table("t")
        .with_transaction_batch_size(3)
        .with_record_writer(writer)
        .connect()
    )
    conn.begin_transaction()
    conn.write(good)
    with pytest.raises(MalformedRecordError) as err:
        conn.write(bad)
    assert err.value.record_index == 3  # positions count across the transaction's writes
    conn.abort_transaction()
    assert t.scan().to_arrow().num_rows == 0
    conn.begin_transaction()  # the connection goes on
    conn.write(good)
    with pytest.raises(MalformedRecordError):
        conn.write(bad)  # nothing of the failing call is kept
    conn.commit_transaction()
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2]
    conn.close()
    assert conn.stats.aborted_transactions == 1 and conn.stats.committed_transactions == 1


def test_misuse_is_a_streaming_error(local_wh: Warehouse) -> None:
    local_wh.create_table("t", [("id", "int")])
    conn = StreamingConnection.builder(local_wh).with_table("t").connect()
    with pytest.raises(StreamingError, match="begin_transaction"):
        conn.write(b"1")
    with pytest.raises(StreamingError, match="no transaction is open"):
        conn.commit_transaction()
    conn.begin_transaction()
    with pytest.raises(StreamingError, match="already open"):
        conn.begin_transaction()
    conn.close()
    local_wh.create_table(
        "mm", [("id", "int")], properties={"transactional_properties": "insert_only"}
    )
    with pytest.raises(StreamingError, match="insert-only"):
        StreamingConnection.builder(local_wh).with_table("mm").connect()


LATIN1 = "café".encode("latin-1")  # b"caf\xe9"


@pytest.mark.parametrize(
    ("writer", "good", "bad"),
    [
        (StrictDelimitedInputWriter("|"), b"1|a|2", b"2|" + LATIN1 + b"|1.5"),
        (StrictJsonWriter(), b'{"id": 1}', b'{"id": 2, "Name": "' + LATIN1 + b'"}'),
        (StrictRegexWriter(r"(\d+) (.*) (\S+)"), b"1 a 2", b"2 " + LATIN1 + b" 1.5"),
    ],
    ids=["delimited", "json", "regex"],
)
def test_a_latin1_text_record_names_its_column(writer: Any, good: bytes, bad: bytes) -> None:
    """Issue 29: a text record that is not UTF-8 is an ``InvalidUtf8RecordError`` — a
    ``MalformedRecordError`` and an ``InvalidUtf8Error`` — naming the record and its column."""
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])
    with pytest.raises(
        InvalidUtf8RecordError, match="record 8 .* not UTF-8 in column 'name'"
    ) as err:
        writer.parse([good, bad], schema, "db.t", 7)
    exc = err.value
    assert isinstance(exc, MalformedRecordError) and isinstance(exc, InvalidUtf8Error)
    assert (exc.record_index, exc.row, exc.column, exc.table) == (8, 8, "name", "db.t")
    assert "caf\\xe9" in exc.excerpt and "caf\\xe9" in exc.record


def _latin1_column() -> pa.Array:
    return pa.array([b"ok", LATIN1], pa.binary()).view(pa.string())  # bytes unchecked


@pytest.mark.parametrize(
    ("writer", "data", "column"),
    [
        (ArrowRecordWriter(), lambda: pa.table({"id": [1, 2], "name": _latin1_column()}), "name"),
        (
            ArrowRecordWriter(),
            lambda: pa.record_batch(
                {
                    "id": [1, 2],
                    "tags": pa.ListArray.from_arrays(
                        pa.array([0, 1, 2], pa.int32()), _latin1_column()
                    ),
                }
            ),
            "tags[0]",
        ),
        (
            PandasRecordWriter(),
            lambda: pd.DataFrame({"id": [1, 2], "name": ["ok", LATIN1]}),
            "name",
        ),
    ],
    ids=["arrow", "arrow nested", "pandas bytes"],
)
def test_latin1_text_in_arrow_and_pandas_records_names_record_and_column(
    writer: RecordWriter, data: Any, column: str
) -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("tags", pa.list_(pa.string()))])
    with pytest.raises(InvalidUtf8RecordError) as err:
        writer.parse(data(), schema, "db.t", 10)
    exc = err.value
    assert (exc.record_index, exc.column, exc.excerpt) == (11, column, "caf\\xe9")
    assert f"record 11 of the transaction is not UTF-8 in column '{column}'" in str(exc)


@pytest.mark.parametrize("writer", ["arrow", "delimited"])
def test_latin1_records_leave_the_transaction_to_go_on(local_wh: Warehouse, writer: str) -> None:
    """Nothing of the refused call is written (a struct column once took rows to the pyorc
    encoder, which raised a bare UnicodeDecodeError there); valid non-ASCII text commits."""
    t = local_wh.create_table("t", [("id", "int"), ("s", "string"), ("st", "struct<a:string>")])
    arrow = writer == "arrow"
    conn = (
        StreamingConnection.builder(local_wh)
        .with_table("t")
        .with_record_writer(ArrowRecordWriter() if arrow else StrictDelimitedInputWriter(","))
        .connect()
    )
    conn.begin_transaction()
    if arrow:
        good = pa.table({"id": [1], "s": ["café"], "st": [{"a": "日本"}]})
        st = pa.StructArray.from_arrays([_latin1_column()], names=["a"])
        bad = pa.table({"id": [2, 3], "s": ["x", "y"], "st": st})
    else:
        good = ["1,café,日本".encode()]  # type: ignore[assignment]
        bad = [b"2,x,y", b"3,y," + LATIN1]  # type: ignore[assignment]
    conn.write(good)
    with pytest.raises(InvalidUtf8RecordError) as err:
        conn.write(bad)
    assert err.value.record_index == 2
    assert err.value.column == "st.a" if arrow else err.value.column == "st"
    conn.commit_transaction()
    conn.close()
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "s": "café", "st": {"a": "日本"}}]
