"""Fixtures of the Mutation API tests: a fresh warehouse per test (real files, real SQLite
metastore) holding ``acct``, a partitioned and bucketed table, and ways to look at it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from acid_platform import Warehouse
from acid_platform.table import Table
from acid_platform_tests.helpers import warehouse_fixture

#: A warehouse that does not wait for locks.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"})

ACCT = [("id", "int"), ("name", "string"), ("bal", "decimal(10,2)")]
REGIONS = ("eu", "us", "apac")


def acct_rows(n: int, first: int = 0) -> list[dict[str, Any]]:
    """``n`` accounts from id ``first``, spread over three regions."""
    return [
        {"id": i, "name": f"n{i}", "bal": Decimal(i * 10) / 4, "region": REGIONS[i % 3]}
        for i in range(first, first + n)
    ]


def make_acct(
    wh: Warehouse, name: str = "acct", rows: int = 40, *, buckets: int = 4, partitioned: bool = True
) -> Table:
    """``name`` (accounts, bucketed on id, partitioned by region) holding ``rows`` accounts."""
    t = wh.create_table(
        name,
        ACCT,
        partition_columns=[("region", "string")] if partitioned else (),
        bucket_columns=["id"] if buckets else (),
        num_buckets=buckets,
    )
    data = acct_rows(rows)
    if not partitioned:
        data = [{k: v for k, v in r.items() if k != "region"} for r in data]
    t.insert(data)
    return t


@pytest.fixture
def acct(wh: Warehouse) -> Table:
    """``acct`` with 40 accounts (4 buckets, 3 regions)."""
    return make_acct(wh)


def with_row_ids(table: Table) -> list[dict[str, Any]]:
    """Every row with its ROW__ID, in (partition, ROW__ID) order: the table's exact state."""
    rows = table.scan(with_row_id=True).to_arrow().to_pylist()
    parts = list(table.spec.partition_column_names)

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        rid = r["row__id"]
        return (
            *[(r[p] is not None, r[p]) for p in parts],
            rid["writeid"],
            rid["bucketid"],
            rid["rowid"],
        )

    return sorted(rows, key=key)
