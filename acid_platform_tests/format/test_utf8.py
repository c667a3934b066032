"""``format.utf8``: the first string that is not UTF-8 found in any Arrow layout a write may
hand over — sliced, chunked, nested, NULL-masked — and shown escaped."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pytest

from acid_platform.errors import InvalidUtf8Error
from acid_platform.format.utf8 import (
    EXCERPT_CHARS,
    InvalidText,
    as_text,
    carries_text,
    check_utf8,
    excerpt,
    find_invalid_text_value,
    find_invalid_utf8,
)

BAD = b"caf\xe9"


def _text(values: Sequence[bytes | None], typ: pa.DataType | None = None) -> pa.Array:
    typ = typ or pa.string()
    binary = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}[typ]
    return pa.array(values, binary).view(typ)


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_the_first_bad_string_is_found_in_slices_and_chunks(typ: pa.DataType) -> None:
    arr = _text([b"a", BAD, b"b", b"\xff"], typ)
    assert find_invalid_utf8(arr) == InvalidText(1, "", BAD)
    assert find_invalid_utf8(arr.slice(2)) == InvalidText(1, "", b"\xff")
    assert find_invalid_utf8(arr.slice(0, 1)) is None
    chunked = pa.chunked_array([arr.slice(0, 1), arr.slice(2, 1), arr.slice(3)])
    assert find_invalid_utf8(chunked) == InvalidText(2, "", b"\xff")
    big = _text([b"x"] * 100_000 + [BAD], typ)
    assert find_invalid_utf8(big) == InvalidText(100_000, "", BAD)


def test_nulls_and_what_they_hide_are_not_checked() -> None:
    values = _text([b"a", BAD, b"c", BAD])
    struct = pa.StructArray.from_arrays(
        [values], names=["a"], mask=pa.array([False, True, False, True])
    )
    assert find_invalid_utf8(struct) is None  # both bad values sit under NULL structs
    # a NULL list over non-empty elements: its elements are not stored
    lists = pa.ListArray.from_arrays(
        pa.array([0, 2, 3, 4], pa.int32()), values, mask=pa.array([True, False, False])
    )
    assert find_invalid_utf8(lists) == InvalidText(2, "[0]", BAD)
    nulls = pa.Array.from_buffers(pa.string(), 2, [pa.py_buffer(b"\x01"), *values.buffers()[1:]])
    assert find_invalid_utf8(nulls) is None  # row 1 is NULL: its bytes are not stored


def test_nested_paths_name_the_bad_value() -> None:
    values = _text([b"k", b"v", BAD, b"w"])
    keys = pa.MapArray.from_arrays(
        pa.array([0, 1, 2], pa.int32()), _text([b"k", BAD]), pa.array(["1", "2"])
    )
    assert find_invalid_utf8(keys) == InvalidText(1, "[0].key", BAD)
    maps = pa.MapArray.from_arrays(
        pa.array([0, 1, 2], pa.int32()), pa.array(["k", "q"]), values.slice(2)
    )
    assert find_invalid_utf8(maps) == InvalidText(0, "[0].value", BAD)
    deep = pa.array(
        [[{"a": [b"x"]}], [{"a": [b"y", BAD]}]],
        pa.list_(pa.struct([("a", pa.list_(pa.binary()))])),
    )
    assert find_invalid_utf8(deep) is None  # binary is not text
    assert find_invalid_utf8(as_text(pa.chunked_array([deep]))) == InvalidText(1, "[0].a[1]", BAD)
    assert carries_text(pa.map_(pa.int32(), pa.list_(pa.string())))
    assert not carries_text(pa.struct([("b", pa.binary()), ("n", pa.int64())]))


def test_the_error_names_table_column_row_and_escaped_bytes() -> None:
    with pytest.raises(InvalidUtf8Error) as err:
        check_utf8(_text([b"ok", BAD]), table="db.t", column="name", first_row=40)
    exc = err.value
    assert (exc.table, exc.column, exc.row, exc.excerpt) == ("db.t", "name", 41, "caf\\xe9")
    assert str(exc).startswith("table db.t: column 'name', row 41: 'caf\\xe9' is not UTF-8")
    check_utf8(pa.array(["café", "日本", None]), table="db.t", column="name")


def test_excerpts_are_short_and_escaped() -> None:
    assert excerpt(b"a\nb\tc\x00" + BAD) == "a\\nb\\tc\\x00caf\\xe9"
    long = excerpt(b"x" * 500 + BAD + b"y" * 500)
    assert long.startswith("…") and long.endswith("…") and "caf\\xe9" in long
    assert len(long) <= EXCERPT_CHARS + 2
    assert excerpt("日本".encode()) == "日本"


def test_python_text_with_surrogates_is_found() -> None:
    bad = BAD.decode("utf-8", errors="surrogateescape")
    assert find_invalid_text_value({"a": [1, {"b": bad}]}) == (".a[1].b", BAD)
    assert find_invalid_text_value("\ud800") == ("", b"\xed\xa0\x80")
    assert find_invalid_text_value(["café", b"\xe9", {"日本": None}]) is None
