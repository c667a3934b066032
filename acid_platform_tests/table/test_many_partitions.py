"""A statement writing into many new partitions registers them in ONE metastore write (issue
34): one existence query and one multi-row INSERT, not a lookup and an INSERT per partition —
on SQLite and PostgreSQL."""

from __future__ import annotations

import pyarrow as pa

from acid_platform import Warehouse
from acid_platform_tests.helpers import SentStatements, warehouse_fixture

wh = warehouse_fixture(backends=["sqlite", "postgresql"])


def _rows(parts: range) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(parts), pa.int32()), "p": pa.array(list(parts), pa.int32())}
    )


def test_many_new_partitions_are_registered_in_one_write(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")], partition_columns=[("p", "int")])
    with SentStatements() as sent:
        t.insert(_rows(range(300)))
    inserts = sent.transactions_of("INSERT INTO PARTITIONS")
    lookups = [n for n, text in sent.statements if "FROM PARTITIONS" in text]
    assert len(inserts) == 1, inserts
    assert len(lookups) <= 2, lookups  # the existence query (and the session's first listing)
    assert sorted(wh.list_partitions("t"), key=lambda n: int(n[2:])) == [
        f"p={i}" for i in range(300)
    ]
    assert t.scan().to_arrow().num_rows == 300

    # 150 known and 150 new partitions: the new ones, once more in one INSERT
    with SentStatements() as sent:
        t.insert(_rows(range(150, 450)))
    assert len(sent.transactions_of("INSERT INTO PARTITIONS")) == 1
    assert len(wh.list_partitions("t")) == 450
    assert t.scan().to_arrow().num_rows == 600


def test_add_partitions_registers_only_the_new_ones(wh: Warehouse) -> None:
    wh.create_table("u", [("id", "int")], partition_columns=[("ds", "string"), ("hr", "int")])
    ms = wh.metastore
    assert ms.add_partitions("default", "u", ["ds=a/hr=1", "DS=a/hr=1", "ds=b/hr=2"]) == [
        "ds=a/hr=1",
        "ds=b/hr=2",
    ]
    assert ms.add_partitions("default", "u", ["ds=b/hr=2", "ds=c/hr=3"]) == ["ds=c/hr=3"]
    assert ms.add_partitions("default", "u", ["ds=c/hr=3"]) == []
    assert sorted(ms.list_partitions("default", "u")) == ["ds=a/hr=1", "ds=b/hr=2", "ds=c/hr=3"]
