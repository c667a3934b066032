"""``BucketIdResolver``: the bucket a record belongs to, and the ROW__ID an insert is stamped
with (Hive's ``BucketIdResolver`` / ``BucketIdResolverImpl``).

A bucketed table's rows go to bucket ``hash(bucketing columns) % buckets`` (Hive's bucketing
hash of the table's ``bucketing_version``). An unbucketed table has no such rule: its inserts
are stamped with writer id 0, and a row keeps the writer id of its ROW__ID when updated.

Stamping inserts before grouping looks odd but is what the documentation prescribes: it spreads
inserts over (partition, bucket) groups, hence over workers, and puts every new row where Hive
itself would. An insert's ROW__ID is ``(-1, <bucket property>, -1)``: only its bucket counts;
the coordinator assigns the write id and row id.

>>> from acid_platform.metastore.model import TableSpec
>>> spec = TableSpec("db", "t", (("id", "int"), ("v", "string")), bucket_columns=("id",),
...                  num_buckets=4, location="/wh/db/t")
>>> resolver = BucketIdResolver(spec)
>>> resolver.compute_bucket_id({"id": 1, "v": "a"})
1
>>> resolver.attach_bucket_id({"id": 1, "v": "a"})["row__id"]
{'writeid': -1, 'bucketid': 536936448, 'rowid': -1}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from acid_platform.errors import BucketIdError
from acid_platform.format import (
    ROW_ID_COLUMN,
    ROW_ID_FIELDS,
    ROW_ID_TYPE,
    bucket_for,
    encode_bucket,
)
from acid_platform.format.bucket_codec import encode_bucket_array
from acid_platform.metastore.model import TableSpec
from acid_platform.streaming.mutate.validators import RecordIdentifier
from acid_platform.table.event_layout import UNBUCKETED_WRITER_ID, hive_buckets
from acid_platform.table.schema import conform, data_schema

#: The write id and row id of a stamped insert (replaced when it is written).
UNASSIGNED = -1


class BucketIdResolver:
    """Computes buckets of records of one table and stamps inserts with them."""

    def __init__(self, spec: TableSpec) -> None:
        self.spec = spec
        types = dict(spec.columns)
        self._types = [types[c] for c in spec.bucket_columns]
        fields = data_schema(spec)
        self._schema = pa.schema([fields.field(c) for c in spec.bucket_columns])

    @property
    def bucketed(self) -> bool:
        """Whether the table is bucketed (else every insert gets writer id 0)."""
        return bool(self.spec.num_buckets)

    def compute_bucket_id(self, record: Mapping[str, Any]) -> int:
        """The bucket of one record (a mapping holding the bucketing columns)."""
        if not self.bucketed:
            return UNBUCKETED_WRITER_ID
        try:
            values = [record[c] for c in self.spec.bucket_columns]
        except KeyError as exc:
            raise BucketIdError(
                f"table {self.spec.full_name}: record has no bucketing column {exc.args[0]!r}"
            ) from None
        return bucket_for(values, self._types, self.spec.num_buckets, self.spec.bucketing_version)

    def compute_bucket_ids(self, rows: pa.Table) -> np.ndarray:
        """The bucket of every row of ``rows`` (which hold the bucketing columns), vectorised."""
        if not self.bucketed:
            return np.full(rows.num_rows, UNBUCKETED_WRITER_ID, np.int32)
        present = {c.lower(): c for c in rows.column_names}
        missing = [c for c in self.spec.bucket_columns if c not in present]
        if missing:
            raise BucketIdError(
                f"table {self.spec.full_name}: records have no bucketing column(s) {missing}"
            )
        cols = rows.select([present[c] for c in self.spec.bucket_columns])
        cols = cols.rename_columns(list(self.spec.bucket_columns))
        typed = conform(self.spec.full_name, cols, self._schema, fill_missing=False)
        return hive_buckets(self.spec, typed).astype(np.int32)

    def attach_bucket_id(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """``record`` with an insert's ROW__ID (``row__id``) stamped with its bucket."""
        row_id = RecordIdentifier(
            UNASSIGNED, encode_bucket(self.compute_bucket_id(record)), UNASSIGNED
        )
        return {**record, ROW_ID_COLUMN: dict(zip(ROW_ID_FIELDS, row_id, strict=True))}

    def attach_bucket_ids(self, rows: pa.Table) -> pa.Table:
        """``rows`` with an insert's ROW__ID column (``row__id``) first, stamped per row."""
        buckets = encode_bucket_array(self.compute_bucket_ids(rows))
        n = rows.num_rows
        unassigned = pa.array(np.full(n, UNASSIGNED, np.int64))
        row_id = pa.StructArray.from_arrays(
            [unassigned, pa.array(buckets, pa.int32()), unassigned], fields=list(ROW_ID_TYPE)
        )
        if ROW_ID_COLUMN in rows.column_names:
            rows = rows.drop_columns([ROW_ID_COLUMN])
        return rows.add_column(0, ROW_ID_COLUMN, row_id)


__all__ = ["UNASSIGNED", "BucketIdResolver"]
