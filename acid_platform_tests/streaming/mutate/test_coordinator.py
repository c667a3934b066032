"""``MutatorCoordinator``: records become delete and insert events of their (partition, bucket)
group under the transaction's statement ids, invisible until the client commits; each ordering
error is raised before anything of it is written, and the coordinator leaves no file behind."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    BucketIdError,
    GroupRevisitedError,
    InvalidPartitionError,
    MutationError,
    RecordSequenceError,
)
from acid_platform.format import bucket_for, decode_bucket, encode_bucket
from acid_platform.streaming.mutate import (
    MUTATION,
    BucketIdResolver,
    MutatorClient,
    MutatorCoordinator,
    RecordIdentifier,
    SinkTable,
)
from acid_platform.streaming.mutate.files import written_files
from acid_platform.table import Table
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.streaming.mutate.conftest import with_row_ids

Change = tuple[str, str, dict[str, Any]]  # (mutation, region, record)


def _bucket(row: dict[str, Any]) -> int:
    return decode_bucket(row["row__id"]["bucketid"])[0]


def _region_by_bucket(table: Table, region: str) -> dict[int, list[dict[str, Any]]]:
    """The region's rows by bucket, each list in ROW__ID order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in with_row_ids(table):
        if r["region"] == region:
            out.setdefault(_bucket(r), []).append(r)
    return dict(sorted(out.items()))


def _feed(coordinator: MutatorCoordinator, changes: list[Change], batch: bool) -> None:
    if not batch:
        for mutation, region, record in changes:
            getattr(coordinator, mutation)([region], record)
        return
    columns = ("row__id", "id", "name", "bal")
    rows = [{MUTATION: m, **{c: r.get(c) for c in columns}, "region": g} for m, g, r in changes]
    coordinator.mutate(pa.Table.from_pylist(rows))


def test_records_are_events_of_their_group_under_the_mutation_statement_ids(
    wh: Warehouse, acct: Table
) -> None:
    before = with_row_ids(acct)
    groups = _region_by_bucket(acct, "eu")
    bucket, rows = next((b, rs) for b, rs in groups.items() if len(rs) >= 2)
    updated, deleted = rows[0], rows[1]
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    handle = txn.table("acct")
    w = handle.write_id
    new = BucketIdResolver(handle.spec).attach_bucket_id(
        {"id": 1000, "name": "new", "bal": Decimal("1.50")}
    )
    new_bucket = RecordIdentifier.of(new["row__id"]).bucket
    changes = [
        (new_bucket, (-1, -1), "insert", new),
        (
            bucket,
            (updated["row__id"]["bucketid"], updated["row__id"]["rowid"]),
            "update",
            {**updated, "name": "changed"},
        ),
        (
            bucket,
            (deleted["row__id"]["bucketid"], deleted["row__id"]["rowid"]),
            "delete",
            {"row__id": deleted["row__id"]},
        ),
    ]
    with MutatorCoordinator(handle) as coordinator:
        for _, _, mutation, record in sorted(changes, key=lambda c: (c[0], c[1])):
            getattr(coordinator, mutation)(["eu"], record)
    report = coordinator.report
    assert report is not None
    assert (report.rows_inserted, report.rows_updated, report.rows_deleted) == (1, 1, 1)
    assert with_row_ids(acct) == before  # written, not visible
    txn.commit([report])

    after = {r["id"]: r for r in acct.scan(with_row_id=True).to_arrow().to_pylist()}
    assert after[1000]["row__id"] == {
        "writeid": w,
        "bucketid": encode_bucket(new_bucket),
        "rowid": 0,
    }
    assert after[updated["id"]]["row__id"] == {
        "writeid": w,
        "bucketid": encode_bucket(bucket, 1),
        "rowid": 0,
    }
    assert after[updated["id"]]["name"] == "changed"
    assert deleted["id"] not in after
    assert len(after) == len(before)
    part = Path(acct.spec.location) / "region=eu"
    ours = [d for d in acid_dirs(part) if f"_{w:07d}_" in d]
    assert ours == [
        f"delete_delta_{w:07d}_{w:07d}_0001",
        f"delete_delta_{w:07d}_{w:07d}_0002",
        f"delta_{w:07d}_{w:07d}_0000",
        f"delta_{w:07d}_{w:07d}_0001",
    ]
    assert w in wh.metastore.committed_write_ids("default", "acct", "region=eu")


def _revisit(groups: dict[int, list[dict[str, Any]]]) -> list[Change]:
    (b0, r0), (_, r1) = list(groups.items())[:2]
    return [
        ("update", "eu", {**r0[0], "name": "x"}),
        ("update", "eu", {**r1[0], "name": "y"}),
        ("delete", "eu", {"row__id": r0[1]["row__id"]}),  # back to the first group
    ]


def _out_of_sequence(groups: dict[int, list[dict[str, Any]]]) -> list[Change]:
    (_, r0), (_, r1) = list(groups.items())[:2]
    return [
        ("update", "eu", {**r0[0], "name": "x"}),  # a whole group first: its file is written
        ("update", "eu", {**r1[1], "name": "y"}),
        ("delete", "eu", {"row__id": r1[0]["row__id"]}),  # lower ROW__ID after a higher one
    ]


def _duplicate_row_id(groups: dict[int, list[dict[str, Any]]]) -> list[Change]:
    (_, r0), (_, r1) = list(groups.items())[:2]
    return [
        ("delete", "eu", {"row__id": r0[0]["row__id"]}),
        ("update", "eu", {**r1[0], "name": "y"}),
        ("delete", "eu", {"row__id": r1[0]["row__id"]}),  # the same row again
    ]


def _bucket_column_updated(groups: dict[int, list[dict[str, Any]]]) -> list[Change]:
    (_, r0), (b1, r1) = list(groups.items())[:2]
    other = next(i for i in range(2000, 3000) if bucket_for([i], ["int"], 4) != b1)
    resolver_row = {**r1[0], "id": other}
    return [
        ("update", "eu", {**r0[0], "name": "x"}),
        ("update", "eu", resolver_row),  # a bucketing column changed: another bucket
    ]


def _insert_in_the_wrong_bucket(groups: dict[int, list[dict[str, Any]]]) -> list[Change]:
    (b0, r0), (b1, _) = list(groups.items())[:2]
    return [
        ("update", "eu", {**r0[0], "name": "x"}),
        (
            "insert",
            "eu",
            {
                "id": r0[0]["id"] + 3000,
                "name": "n",
                "bal": None,
                "row__id": {
                    "writeid": -1,
                    "bucketid": encode_bucket(b1 if b1 != b0 else 0),
                    "rowid": -1,
                },
            },
        ),
    ]


CASES: dict[
    str, tuple[Callable[[dict[int, list[dict[str, Any]]]], list[Change]], type[MutationError]]
] = {
    "group revisited": (_revisit, GroupRevisitedError),
    "record out of sequence": (_out_of_sequence, RecordSequenceError),
    "same ROW__ID twice": (_duplicate_row_id, RecordSequenceError),
    "bucketing column updated": (_bucket_column_updated, BucketIdError),
    "insert stamped with another bucket": (_insert_in_the_wrong_bucket, BucketIdError),
}


@pytest.mark.parametrize("batch", [False, True], ids=["records", "batch"])
@pytest.mark.parametrize("case", list(CASES))
def test_an_ordering_error_is_raised_and_nothing_is_written(
    wh: Warehouse, acct: Table, case: str, batch: bool
) -> None:
    make, error = CASES[case]
    before = with_row_ids(acct)
    changes = make(_region_by_bucket(acct, "eu"))
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    handle = txn.table("acct")
    coordinator = MutatorCoordinator(handle)
    with pytest.raises(error):
        _feed(coordinator, changes, batch)
    assert coordinator.state == "aborted"
    assert written_files(handle) == []  # the groups it had finished are gone too
    with pytest.raises(MutationError, match="is aborted"):
        coordinator.delete(["eu"], {"row__id": before[0]["row__id"]})
    txn.abort()
    assert with_row_ids(acct) == before


def test_a_batch_and_the_same_records_one_by_one_write_the_same_rows(
    wh: Warehouse, acct: Table, tmp_path: Path
) -> None:
    groups = _region_by_bucket(acct, "us")
    changes: list[Change] = []
    for rows in groups.values():
        changes.append(("update", "us", {**rows[0], "bal": Decimal("9.99")}))
        changes += [("delete", "us", {"row__id": r["row__id"]}) for r in rows[1:3]]
    results = []
    for batch in (False, True):
        txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
        with MutatorCoordinator(txn.table("acct")) as coordinator:
            _feed(coordinator, changes, batch)
        assert coordinator.report is not None
        results.append(
            sorted(
                (f.partition, f.statement, f.bucket, f.kind, f.rows)
                for f in coordinator.report.files
            )
        )
        txn.abort()
    assert results[0] == results[1] and results[0]


def test_an_insert_without_a_row_id_is_stamped_with_its_bucket(wh: Warehouse, acct: Table) -> None:
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    with MutatorCoordinator(txn.table("acct")) as coordinator:
        coordinator.insert(["eu"], {"id": 4242, "name": "x", "bal": None})
    assert coordinator.report is not None
    txn.commit([coordinator.report])
    got = [r for r in acct.scan(with_row_id=True).to_arrow().to_pylist() if r["id"] == 4242]
    assert _bucket(got[0]) == BucketIdResolver(acct.spec).compute_bucket_id({"id": 4242})


@pytest.mark.parametrize("create", [True, False], ids=["coordinator creates", "client creates"])
def test_a_new_partition_is_created_by_the_coordinator_or_by_the_client(
    wh: Warehouse, acct: Table, create: bool
) -> None:
    txn = MutatorClient(wh, [SinkTable("acct", create_partitions=create)]).new_transaction().begin()
    with MutatorCoordinator(txn.table("acct")) as coordinator:
        coordinator.insert(["mars"], {"id": 7, "name": "m", "bal": None})
    assert coordinator.report is not None and coordinator.report.recorded is create
    before_commit = wh.metastore.list_partitions("default", "acct")
    assert ("region=mars" in before_commit) is create
    metrics = txn.commit([coordinator.report])
    assert "region=mars" in wh.metastore.list_partitions("default", "acct")
    write_id = metrics[0].write_id
    assert write_id in wh.metastore.committed_write_ids("default", "acct", "region=mars")
    assert [r["id"] for r in acct.scan(where="region = 'mars'").to_arrow().to_pylist()] == [7]


def test_the_wrong_number_of_partition_values_is_refused(wh: Warehouse, acct: Table) -> None:
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    coordinator = MutatorCoordinator(txn.table("acct"))
    with pytest.raises(InvalidPartitionError, match="0 partition values"):
        coordinator.insert([], {"id": 1, "name": "x", "bal": None})
    txn.abort()
