"""Mutation API coordinators refuse text that is not UTF-8 for a string column (issue 29):
records given one by one and prepared batches alike raise ``InvalidUtf8Error`` naming the
column and the record before anything of it is written, and the coordinator leaves no file."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import InvalidUtf8Error
from acid_platform.streaming.mutate import MUTATION, MutatorClient, MutatorCoordinator
from acid_platform.streaming.mutate.files import written_files
from acid_platform.table import Table
from acid_platform_tests.streaming.mutate.conftest import with_row_ids

LATIN1 = "café".encode("latin-1")


@pytest.mark.parametrize("value", [LATIN1, LATIN1.decode("utf-8", errors="surrogateescape")])
def test_a_record_with_latin1_text_is_refused(wh: Warehouse, acct: Table, value: object) -> None:
    before = with_row_ids(acct)
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    handle = txn.table("acct")
    coordinator = MutatorCoordinator(handle)
    with pytest.raises(InvalidUtf8Error) as err:
        coordinator.insert(["eu"], {"id": 900, "name": "ok", "bal": None})
        coordinator.insert(["eu"], {"id": 903, "name": value, "bal": Decimal("1.00")})
        coordinator.close()
    assert (err.value.column, err.value.row, err.value.excerpt) == ("name", 1, "caf\\xe9")
    assert "insert record ROW__ID" in str(err.value)
    assert coordinator.state == "aborted" and written_files(handle) == []
    txn.abort()
    assert with_row_ids(acct) == before


def test_a_batch_with_latin1_text_is_refused(wh: Warehouse, acct: Table) -> None:
    before = with_row_ids(acct)
    eu = [r for r in before if r["region"] == "eu"][:2]
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    handle = txn.table("acct")
    coordinator = MutatorCoordinator(handle)
    names = pa.array([b"fine", LATIN1], pa.binary()).view(pa.string())  # bytes unchecked
    batch = pa.table(
        {
            MUTATION: ["update", "update"],
            "row__id": [r["row__id"] for r in eu],
            "id": [r["id"] for r in eu],
            "name": names,
            "bal": [r["bal"] for r in eu],
            "region": ["eu", "eu"],
        }
    )
    with pytest.raises(InvalidUtf8Error) as err:
        coordinator.mutate(batch)
    assert (err.value.column, err.value.row) == ("name", 1)
    assert coordinator.state == "aborted" and written_files(handle) == []
    txn.abort()
    assert with_row_ids(acct) == before
    # valid non-ASCII text goes through
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    with MutatorCoordinator(txn.table("acct")) as good:
        good.mutate(batch.set_column(3, "name", pa.array(["日本", "café"])))
    assert good.report is not None
    txn.commit([good.report])
    assert {r["name"] for r in with_row_ids(acct) if r["id"] in {e["id"] for e in eu}} == {
        "日本",
        "café",
    }
