"""The Mutation API's values and checks on their own: ROW__IDs, the grouping and sequence
validators, the bucket resolver, the serializable table handle."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_platform.errors import GroupRevisitedError, RecordSequenceError
from acid_platform.format import bucket_for, encode_bucket
from acid_platform.metastore.model import OperationType, TableSpec
from acid_platform.streaming.mutate import (
    AcidTable,
    BucketIdResolver,
    GroupingValidator,
    Mutation,
    RecordIdentifier,
    SequenceValidator,
)

SPEC = TableSpec(
    "db",
    "acct",
    (("id", "int"), ("name", "string"), ("bal", "decimal(10,2)")),
    partition_columns=(("region", "string"),),
    bucket_columns=("id", "name"),
    num_buckets=4,
    location="/wh/db/acct",
    properties={"transactional": "true", "orc.compress": "SNAPPY"},
)


def test_a_row_id_comes_as_a_tuple_a_dict_or_itself() -> None:
    rid = RecordIdentifier(3, encode_bucket(2, 1), 7)
    assert RecordIdentifier.of((3, encode_bucket(2, 1), 7)) == rid
    assert RecordIdentifier.of({"writeid": 3, "bucketid": encode_bucket(2, 1), "rowid": 7}) == rid
    assert RecordIdentifier.of(rid) is rid
    assert rid.bucket == 2
    assert str(rid) == '{"writeid":3,"bucketid":537001985,"rowid":7}'
    with pytest.raises(ValueError, match="is not a ROW__ID"):
        RecordIdentifier.of("3,1,7")


def test_a_group_left_behind_cannot_come_back() -> None:
    v = GroupingValidator()
    assert v.enter("region=eu", 0) is True
    assert v.enter("region=eu", 0) is False
    assert v.enter("region=eu", 1) is True
    assert v.enter("region=us", 1) is True
    with pytest.raises(
        GroupRevisitedError, match=r"partition 'region=eu', bucket 0\) was revisited"
    ):
        v.enter("region=eu", 0)
    assert v.groups == 3


def test_updates_and_deletes_come_in_strictly_increasing_row_id_order() -> None:
    v = SequenceValidator()
    v.check(RecordIdentifier(1, encode_bucket(0), 5))
    v.check(RecordIdentifier(1, encode_bucket(0), 9))
    # the statement id is part of the bucket property: statement 1's row 0 follows statement 0's
    v.check(RecordIdentifier(1, encode_bucket(0, 1), 0))
    v.check(RecordIdentifier(2, encode_bucket(0), 0))
    with pytest.raises(RecordSequenceError, match="out of ROW__ID order"):
        v.check(RecordIdentifier(1, encode_bucket(0), 10))
    v.reset()
    v.check(RecordIdentifier(1, encode_bucket(0), 0))
    with pytest.raises(RecordSequenceError):  # the same row twice
        v.check(RecordIdentifier(1, encode_bucket(0), 0))


ids = st.tuples(
    st.integers(1, 3), st.sampled_from([encode_bucket(0), encode_bucket(0, 1)]), st.integers(0, 4)
)


@given(st.lists(ids, max_size=12), st.one_of(st.none(), ids))
def test_a_run_is_checked_as_its_records_one_by_one(
    run: list[tuple[int, int, int]], last: tuple[int, int, int] | None
) -> None:
    one, many = SequenceValidator(), SequenceValidator()
    if last is not None:
        one.last = many.last = RecordIdentifier(*last)
    failed_one = failed_many = False
    try:
        for r in run:
            one.check(RecordIdentifier(*r))
    except RecordSequenceError:
        failed_one = True
    wids, props, rids = (np.array([x[i] for x in run], dtype=np.int64) for i in range(3))
    try:
        many.check_run(wids, props.astype(np.int32), rids)
    except RecordSequenceError:
        failed_many = True
    assert failed_one == failed_many
    if not failed_one:
        assert one.last == many.last


def test_the_resolver_gives_hives_bucket_one_by_one_and_vectorised() -> None:
    resolver = BucketIdResolver(SPEC)
    rows = [{"id": i, "name": f"n{i % 7}", "bal": None} for i in range(50)]
    expected = [bucket_for([r["id"], r["name"]], ["int", "string"], 4) for r in rows]
    assert [resolver.compute_bucket_id(r) for r in rows] == expected
    table = pa.table({"ID": [r["id"] for r in rows], "name": [r["name"] for r in rows]})
    assert resolver.compute_bucket_ids(table).tolist() == expected
    stamped = resolver.attach_bucket_ids(table)
    assert stamped.column_names == ["row__id", "ID", "name"]
    assert [r["bucketid"] for r in stamped.column("row__id").to_pylist()] == [
        encode_bucket(b) for b in expected
    ]
    one = resolver.attach_bucket_id(rows[3])
    assert one["row__id"] == {"writeid": -1, "bucketid": encode_bucket(expected[3]), "rowid": -1}


def test_an_unbucketed_table_stamps_writer_id_0() -> None:
    spec = TableSpec("db", "t", (("id", "int"),), location="/wh/db/t")
    resolver = BucketIdResolver(spec)
    assert not resolver.bucketed
    assert resolver.compute_bucket_id({"id": 5}) == 0
    assert resolver.compute_bucket_ids(pa.table({"id": [1, 2]})).tolist() == [0, 0]


def test_a_table_handle_travels_as_json_and_by_pickle() -> None:
    handle = AcidTable(
        SPEC,
        txn_id=12,
        write_id=3,
        valid_txns="12:11::",
        valid_write_ids="db.acct:3:9223372036854775807::",
        metastore_url="postgresql+psycopg://u@127.0.0.1/m",
        txn_timeout_s=30.0,
        create_partitions=True,
    )
    assert AcidTable.decode(handle.encode()) == handle
    assert pickle.loads(pickle.dumps(handle)) == handle
    assert handle.is_sink and handle.name == "db.acct"
    assert handle.snapshot.write_ids.is_write_id_valid(3)


def test_mutations_have_their_statement_ids_and_letters() -> None:
    assert [m.statement for m in Mutation] == [0, 1, 2]
    assert Mutation.of("U") is Mutation.UPDATE and Mutation.of("delete") is Mutation.DELETE
    assert Mutation.INSERT.operation_type is OperationType.INSERT
    with pytest.raises(ValueError, match="unknown mutation"):
        Mutation.of("upsert")
