"""Text that is not UTF-8 is never stored (issue 29, "Bad bytes stored"): Latin-1 bytes for a
STRING, VARCHAR or CHAR column — top level or inside a struct, array or map — are refused on
every write path of the table API and of SQL with an ``InvalidUtf8Error`` naming the table, the
column and the row, before anything is written; valid non-ASCII text round-trips. Real files,
real ORC, a real SQLite metastore."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.errors import InvalidUtf8Error, SqlSyntaxError
from acid_platform.table import Table
from acid_platform.table.schema import table_schema
from acid_platform_tests.store_path import StorePath

COLUMNS = [
    ("id", "int"),
    ("s", "string"),
    ("v", "varchar(10)"),
    ("c", "char(4)"),
    ("st", "struct<a:string,n:int>"),
    ("l", "array<string>"),
    ("m", "map<string,string>"),
    ("b", "binary"),
]
LATIN1 = "café".encode("latin-1")  # b"caf\xe9": é in Latin-1, not UTF-8
#: What Python makes of those bytes read as UTF-8 with ``surrogateescape`` (a file, argv, stdin).
SURROGATES = LATIN1.decode("utf-8", errors="surrogateescape")
GOOD = [{"id": 0, "s": "ok"}]


def _text(values: Sequence[bytes | None]) -> pa.Array:
    """A string array holding ``values``' bytes unchecked, as a view of binary data makes it."""
    return pa.array(values, pa.binary()).view(pa.string())


@pytest.fixture
def t(wh: Warehouse) -> Table:
    table = wh.create_table("t", COLUMNS, partition_columns=[("p", "string")])
    table.insert([{**GOOD[0], "p": "x"}])
    return table


def _state(table: Table) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """What the table holds and every file under it (nothing may change on a refused write)."""
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    return rows, StorePath(table.spec.location).files()


def _chunks(*parts: pa.Array) -> pa.ChunkedArray:
    return pa.chunked_array(list(parts))


#: INSERT inputs holding Latin-1 bytes: (data, the column the error names, the row it names).
BAD_INSERTS: dict[str, tuple[Callable[[], Any], str, int]] = {
    "arrow string": (lambda: pa.table({"id": [1, 2], "s": _text([b"ok", LATIN1])}), "s", 1),
    "arrow record batch": (
        lambda: pa.record_batch({"id": [1, 2, 3], "s": _text([None, b"a", LATIN1])}),
        "s",
        2,
    ),
    "second chunk": (
        lambda: pa.table(
            {
                "id": _chunks(pa.array([1, 2]), pa.array([3, 4])),
                "s": _chunks(_text([b"a", b"b"]), _text([b"c", LATIN1])),
            }
        ),
        "s",
        3,
    ),
    "varchar": (lambda: pa.table({"id": [1], "v": _text([LATIN1])}), "v", 0),
    "char": (lambda: pa.table({"id": [1, 2], "c": _text([b"ab", LATIN1])}), "c", 1),
    "struct field": (
        lambda: pa.table(
            {
                "id": [1, 2],
                "st": pa.StructArray.from_arrays(
                    [_text([b"ok", LATIN1]), pa.array([1, 2], pa.int32())], names=["a", "n"]
                ),
            }
        ),
        "st.a",
        1,
    ),
    "array element": (
        lambda: pa.table(
            {
                "id": [1, 2],
                "l": pa.ListArray.from_arrays(
                    pa.array([0, 1, 3], pa.int32()), _text([b"x", b"y", LATIN1])
                ),
            }
        ),
        "l[1]",
        1,
    ),
    "map value": (
        lambda: pa.table(
            {
                "id": [1],
                "m": pa.MapArray.from_arrays(
                    pa.array([0, 2], pa.int32()), pa.array(["k", "q"]), _text([b"v", LATIN1])
                ),
            }
        ),
        "m[1].value",
        0,
    ),
    "map key": (
        lambda: pa.table(
            {
                "id": [1],
                "m": pa.MapArray.from_arrays(
                    pa.array([0, 1], pa.int32()), _text([LATIN1]), pa.array(["v"])
                ),
            }
        ),
        "m[0].key",
        0,
    ),
    "arrow binary": (lambda: pa.table({"id": [1, 2], "s": pa.array([b"ok", LATIN1])}), "s", 1),
    "list of dicts with bytes": (lambda: [{"id": 1, "s": LATIN1}], "s", 0),
    "list of dicts with surrogates": (
        lambda: [{"id": 1, "st": None}, {"id": 2, "st": {"a": SURROGATES, "n": 1}}],
        "st.a",
        1,
    ),
    "dict of columns with surrogates": (
        lambda: {"id": [1, 2], "l": [["ok"], ["x", SURROGATES]]},
        "l[1]",
        1,
    ),
    "pandas bytes": (lambda: pd.DataFrame({"id": [1, 2], "s": ["ok", LATIN1]}), "s", 1),
    "pandas surrogates": (lambda: pd.DataFrame({"id": [1, 2], "s": [SURROGATES, "ok"]}), "s", 0),
    "partition value": (lambda: pa.table({"id": [1, 2], "p": _text([b"x", LATIN1])}), "p", 1),
}


@pytest.mark.parametrize("overwrite", [False, True], ids=["insert", "overwrite"])
@pytest.mark.parametrize("case", list(BAD_INSERTS))
def test_latin1_bytes_are_refused_by_insert_naming_column_and_row(
    t: Table, case: str, overwrite: bool
) -> None:
    make, column, row = BAD_INSERTS[case]
    before = _state(t)
    data = make()
    static = None if column == "p" else {"p": "x"}
    with pytest.raises(InvalidUtf8Error) as err:
        t.insert(data, partition=static, overwrite=overwrite)
    exc = err.value
    assert (exc.table, exc.column, exc.row) == ("default.t", column, row)
    assert exc.excerpt == "caf\\xe9"
    assert f"table default.t: column '{column}', row {row}: 'caf\\xe9' is not UTF-8" in str(exc)
    assert _state(t) == before  # nothing visible, no file written


def test_valid_non_ascii_text_round_trips(wh: Warehouse, t: Table) -> None:
    row = {
        "id": 1,
        "s": "café",
        "v": "日本",
        "c": "né",
        "st": {"a": "über", "n": 1},
        "l": ["日本", "é"],
        "m": [("clé", "valeur é")],
        "b": LATIN1,  # a BINARY column takes any bytes
        "p": "ü",
    }
    t.insert(pa.Table.from_pylist([row], schema=table_schema(t.spec)))
    t.insert(pa.table({"id": [2], "s": pa.array(["日本".encode()]), "p": ["x"]}))  # UTF-8 bytes
    t.insert(pd.DataFrame({"id": [3], "s": ["naïve"], "p": ["x"]}))
    rows = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    assert rows[1] == {**row, "c": "né  "}  # char(4) is padded
    assert rows[2]["s"] == "日本" and rows[3]["s"] == "naïve"
    assert wh.sql("SELECT s FROM t WHERE id = 1").to_pylist() == [{"s": "café"}]


@pytest.mark.parametrize("fmt", ["orc", "parquet", "textfile"])
def test_insert_only_tables_refuse_them_too(wh: Warehouse, fmt: str) -> None:
    mm = {"transactional": "true", "transactional_properties": "insert_only"}
    table = wh.create_table("mm", [("id", "int"), ("s", "string")], properties=mm, stored_as=fmt)
    table.insert(GOOD)
    before = _state(table)
    with pytest.raises(InvalidUtf8Error, match=r"column 's', row 1"):
        table.insert(pa.table({"id": [1, 2], "s": _text([b"ok", LATIN1])}))
    assert _state(table) == before
    table.insert([{"id": 5, "s": "café"}])
    assert {r["s"] for r in table.scan().to_arrow().to_pylist()} == {"ok", "café"}


def test_update_refuses_bytes_that_are_not_utf8(wh: Warehouse, t: Table) -> None:
    before = _state(t)
    with pytest.raises(InvalidUtf8Error) as err:
        t.update({"s": "unhex('636166e9')"}, "id = 0")
    assert err.value.column == "s" and err.value.excerpt == "caf\\xe9"
    assert "UPDATE output column 's', row 0" in str(err.value)
    with pytest.raises(InvalidUtf8Error):
        wh.sql("UPDATE t SET st = named_struct('a', unhex('e9'), 'n', 1) WHERE id = 0")
    assert _state(t) == before
    t.update({"s": "unhex('636166c3a9')"}, "id = 0")  # UTF-8 bytes are text
    assert t.scan().to_arrow().to_pylist()[0]["s"] == "café"


def test_merge_refuses_a_source_with_bytes_that_are_not_utf8(t: Table) -> None:
    before = _state(t)
    source = pa.table({"id": [0, 7], "s": _text([b"ok", LATIN1]), "p": ["x", "x"]})
    merge = t.merge(source, on="t.id = s.id").when_matched_update({"s": "s.s"})
    with pytest.raises(InvalidUtf8Error) as err:
        merge.when_not_matched_insert({"id": "s.id", "s": "s.s", "p": "s.p"}).execute()
    assert (err.value.column, err.value.row) == ("s", 1)
    assert "MERGE source column 's', row 1" in str(err.value)
    # bytes (a binary source column) become text only when they are UTF-8
    binary = pa.table({"id": [0, 7], "raw": pa.array(["é".encode(), LATIN1]), "p": ["x", "x"]})
    with pytest.raises(InvalidUtf8Error, match="INSERT output column 's', row 0"):
        (
            t.merge(binary, on="t.id = s.id")
            .when_matched_update({"s": "s.raw"})
            .when_not_matched_insert({"id": "s.id", "s": "s.raw", "p": "s.p"})
            .execute()
        )
    assert _state(t) == before
    good = pa.table({"id": [0, 8], "s": ["日本", "café"], "p": ["x", "x"]})
    t.merge(good, on="t.id = s.id").when_matched_update({"s": "s.s"}).when_not_matched_insert(
        {"id": "s.id", "s": "s.s", "p": "s.p"}
    ).execute()
    assert sorted((r["id"], r["s"]) for r in t.scan().to_arrow().to_pylist()) == [
        (0, "日本"),
        (8, "café"),
    ]


def test_sql_inserts_refuse_bytes_that_are_not_utf8(wh: Warehouse, t: Table) -> None:
    before = _state(t)
    with pytest.raises(InvalidUtf8Error) as err:
        wh.sql(
            "INSERT INTO t (id, s, p) VALUES (1, unhex('6f6b'), 'x'), (2, unhex('636166e9'), 'x')"
        )
    assert (err.value.column, err.value.row) == ("s", 1)
    # Latin-1 bytes in the statement text itself (a script read with surrogateescape)
    with pytest.raises(SqlSyntaxError, match=r"line 2, column 16: the text is not UTF-8") as bad:
        wh.sql(f"INSERT INTO t (id, s, p)\nVALUES (3, '{SURROGATES}', 'x')")
    assert "VALUES (3, 'caf\\xe9', 'x')" in str(bad.value)
    # the embedded engine's own conversions never make bad text: a cast of bytes spells them
    # out, and decode() refuses them
    with pytest.raises(Exception, match="could not convert blob to UTF8"):
        wh.sql("INSERT INTO t (id, s, p) VALUES (4, decode(unhex('e9'), 'UTF-8'), 'x')")
    assert _state(t) == before
    wh.sql("INSERT INTO t (id, s, p) VALUES (5, CAST(unhex('e9') AS STRING), 'x')")
    wh.sql("INSERT INTO t (id, s, p) VALUES (6, unhex('636166c3a9'), 'x')")
    wh.sql("INSERT INTO t (id, s, p) VALUES (7, '日本', 'x')")
    got = {r["id"]: r["s"] for r in wh.sql("SELECT id, s FROM t WHERE id > 4").to_pylist()}
    assert got == {5: "\\xE9", 6: "café", 7: "日本"}


def test_acid_sql_names_latin1_script_text_without_a_traceback(t: Table, tmp_path: Path) -> None:
    script = tmp_path / "latin1.sql"
    script.write_bytes(b"INSERT INTO t (id, s, p) VALUES (1, '" + LATIN1 + b"', 'x');\n")
    root = str(Path(t.spec.location).parent)
    before = _state(t)
    runner = CliRunner()
    for args, stdin in (
        (["-f", str(script)], None),
        (["-f", "-"], script.read_bytes()),
        ([], script.read_bytes()),  # the shell, reading piped lines
    ):
        result = runner.invoke(app, ["sql", "-w", root, *args], input=stdin)
        output = result.output
        assert "line 1, column 41: the text is not UTF-8 (\\xe9)" in output, output
        assert "Traceback" not in output
        assert result.exit_code != 0 or not args  # the shell prints the error and goes on
    assert _state(t) == before


def test_the_first_bad_row_of_a_large_insert_is_named(t: Table) -> None:
    """The check is vectorised (Arrow's validation, then bisection to the first bad value):
    it names the row in a large input too."""
    n = 200_000
    values = [f"name-{i}-café".encode() for i in range(n)]
    values[n - 3] = LATIN1
    with pytest.raises(InvalidUtf8Error) as err:
        t.insert(pa.table({"id": pa.array(range(n), pa.int32()), "s": _text(values)}))
    assert err.value.row == n - 3
