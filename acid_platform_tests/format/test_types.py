"""The ACID event fields and the ROW__ID column: spelled as Hive spells them, defined once."""

from __future__ import annotations

import pyarrow as pa

from acid_platform.format import types as t
from acid_platform.format.types import (
    EVENT_KEY_COLUMNS,
    ROW_ID_COLUMN,
    ROW_ID_EVENT_FIELDS,
    ROW_ID_FIELDS,
    ROW_ID_TYPE,
    ROW_VERSION_FIELDS,
    event_schema,
    row_id_text,
    schema_to_hive,
)


def test_event_schema_is_hives() -> None:
    schema = event_schema(pa.schema([pa.field("a", pa.int32())]))
    assert schema_to_hive(schema) == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        "currentTransaction:bigint,row:struct<a:int>>"
    )
    assert schema.names[:5] == list(EVENT_KEY_COLUMNS)


def test_row_id_event_fields_are_the_sort_key_and_versions_add_the_writer() -> None:
    assert ROW_ID_EVENT_FIELDS == ("originalTransaction", "bucket", "rowId")
    assert (*ROW_ID_EVENT_FIELDS, t.CURRENT_TRANSACTION) == ROW_VERSION_FIELDS
    assert (t.OPERATION, *ROW_VERSION_FIELDS) == EVENT_KEY_COLUMNS


def test_row_id_column_as_sql_shows_it() -> None:
    assert ROW_ID_COLUMN == "row__id"
    assert (
        pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])
        == ROW_ID_TYPE
    )
    assert tuple(f.name for f in ROW_ID_TYPE) == ROW_ID_FIELDS
    assert row_id_text(1, 536870912, 0) == '{"writeid":1,"bucketid":536870912,"rowid":0}'
