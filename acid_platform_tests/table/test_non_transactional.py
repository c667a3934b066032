"""Non-transactional tables (``'transactional'='false'``, which only the Python API creates):
UPDATE, DELETE and MERGE are refused with Hive's message (ErrorMsg.ACID_OP_ON_NONACID_TABLE),
and INSERT is refused too (every writer here writes ACID files, which Hive would misread in a
plain table). Each refusal writes nothing: the files, the rows and the write ids stay as they
were."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from acid_platform import Warehouse
from acid_platform.errors import NonTransactionalTableError, UnsupportedOperationError
from acid_platform.table import Table, lit
from acid_platform_tests.helpers import warehouse_fixture
from acid_platform_tests.store_path import StorePath

HIVE_MESSAGE = "Attempt to do update or delete on table default.plain that is not transactional"
ROWS = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]

#: Refusals on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


@pytest.fixture
def plain(wh: Warehouse) -> Table:
    """A non-transactional table holding one plain ORC file, as a non-ACID Hive writer leaves
    it (``000000_0``)."""
    table = wh.create_table(
        "plain", [("id", "int"), ("name", "string")], properties={"transactional": "false"}
    )
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]})
    with (StorePath(table.spec.location) / "000000_0").open_output() as out:
        orc.write_table(data, out)
    return table


def _state(wh: Warehouse) -> tuple[dict[str, int], str, list[dict[str, object]]]:
    """The warehouse's files, the table's ValidWriteIdList (its high-water mark and aborted
    write ids: a refused statement allocates none) and its rows."""
    rows = sorted(wh.table("plain").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == ROWS  # the plain file reads as it was written
    files = {
        rel: size for rel, size in StorePath(wh.root).files().items() if "_metastore" not in rel
    }
    return files, str(wh.metastore.valid_write_ids(None, "default", "plain")), rows


DML: dict[str, Callable[[Table], object]] = {
    "update": lambda t: t.update({"name": lit("z")}, "id = 1"),
    "update all": lambda t: t.update({"name": lit("z")}),
    "delete": lambda t: t.delete("id = 1"),
    "delete all": lambda t: t.delete(),
    "merge": lambda t: t.merge(ROWS, "t.id = s.id").when_matched_delete().execute(),
    "merge insert": lambda t: (
        t.merge(ROWS, "t.id = s.id").when_not_matched_insert({"id": "s.id"}).execute()
    ),
}


@pytest.mark.parametrize("op", sorted(DML))
def test_row_level_dml_is_refused_with_hives_message(wh: Warehouse, plain: Table, op: str) -> None:
    before = _state(wh)
    with pytest.raises(NonTransactionalTableError, match=HIVE_MESSAGE):
        DML[op](plain)
    assert _state(wh) == before


def test_insert_is_refused(wh: Warehouse, plain: Table) -> None:
    before = _state(wh)
    for overwrite in (False, True):
        with pytest.raises(NonTransactionalTableError, match="not transactional") as info:
            plain.insert(ROWS, overwrite=overwrite)
        assert "default.plain" in str(info.value)
    assert isinstance(info.value, UnsupportedOperationError)
    assert _state(wh) == before


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE plain SET name = 'z' WHERE id = 1",
        "DELETE FROM plain WHERE id = 2",
        "MERGE INTO plain t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
    ],
)
def test_sql_dml_is_refused_with_hives_message(wh: Warehouse, plain: Table, statement: str) -> None:
    before = _state(wh)
    with pytest.raises(NonTransactionalTableError, match=HIVE_MESSAGE):
        wh.sql_session.execute(statement)
    assert _state(wh) == before


def test_sql_insert_is_refused(wh: Warehouse, plain: Table) -> None:
    before = _state(wh)
    with pytest.raises(NonTransactionalTableError, match="default.plain that is not transactional"):
        wh.sql_session.execute("INSERT INTO plain VALUES (3, 'c')")
    assert _state(wh) == before


def test_sql_truncate_is_refused(wh: Warehouse, plain: Table) -> None:
    before = _state(wh)
    with pytest.raises(NonTransactionalTableError, match="TRUNCATE TABLE default.plain: .*not"):
        wh.sql_session.execute("TRUNCATE TABLE plain")
    assert _state(wh) == before


def test_transactional_tables_still_take_dml(wh: Warehouse) -> None:
    table = wh.create_table("acid", [("id", "int"), ("name", "string")])
    table.insert(ROWS)
    table.update({"name": lit("z")}, "id = 1")
    table.delete("id = 2")
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "name": "z"}]
