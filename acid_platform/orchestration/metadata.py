"""The metadata every materialization carries.

* Dagster's standard keys: ``dagster/row_count`` (the table's rows after the write),
  ``dagster/partition_row_count`` (the rows of the asset's partition, when the write was of one
  partition; a write of several — a single-run backfill — reports their rows together as
  ``partition_range_row_count`` instead: Dagster gives every partition of the range the same
  metadata, so a per-partition key would claim the range's rows for each),
  ``dagster/column_schema`` (partition and bucketing columns described as such) and
  ``dagster/table_name``, ``dagster/uri`` (the table location);
* what the write did, from :meth:`StatementMetrics.as_dict` (summed over the statements of its
  one transaction): ``txn_id``, ``write_id``, ``statement_ids``, ``rows_inserted`` /
  ``rows_updated`` / ``rows_deleted``, ``dirs_written``, ``files_written``, ``bytes_written``,
  ``duration_s``; and ``operation`` (the write mode);
* the table's health (:mod:`.health`): ``table_partitions``, ``delta_count``,
  ``delete_delta_count``, ``delete_ratio``, ``table_bytes`` — numbers the UI plots over time;
* for a Spark output, who wrote it (:func:`.spark_io.spark_metadata`): ``spark/app_id``,
  ``spark/master``, ``spark/driver``, ``spark/tasks``, ``spark/writers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dagster import MetadataValue, TableColumn, TableSchema

from acid_platform.orchestration.health import TableHealth
from acid_platform.table import Table
from acid_platform.table.statement import StatementMetrics

ROW_COUNT = "dagster/row_count"
PARTITION_ROW_COUNT = "dagster/partition_row_count"
RANGE_ROW_COUNT = "partition_range_row_count"
COLUMN_SCHEMA = "dagster/column_schema"
TABLE_NAME = "dagster/table_name"
URI = "dagster/uri"


def column_schema(table: Table) -> TableSchema:
    """The table's columns with their Hive types; partition and bucketing columns say so."""
    spec = table.spec
    partitions = set(spec.partition_column_names)
    buckets = set(spec.bucket_columns)
    columns = []
    for name, hive_type in [*spec.columns, *spec.partition_columns]:
        roles = (["partition column"] if name in partitions else []) + (
            [f"bucketing column ({spec.num_buckets} buckets)"] if name in buckets else []
        )
        columns.append(TableColumn(name, hive_type, description=", ".join(roles) or None))
    return TableSchema(columns)


def statement_metadata(metrics: Sequence[StatementMetrics]) -> dict[str, Any]:
    """The statements of one transaction, as one set of :meth:`StatementMetrics.as_dict`
    fields (counts summed, lists joined, the last write id)."""
    out: dict[str, Any] = {}
    for m in metrics:
        for key, value in m.as_dict().items():
            if key == "table":
                continue
            if key in ("txn_id", "write_id"):
                if value is not None:
                    out[key] = value
            elif isinstance(value, list):
                out[key] = [*out.get(key, []), *(v for v in value if v not in out.get(key, []))]
            else:
                out[key] = out.get(key, 0) + value
    return out


def materialization_metadata(
    table: Table,
    operation: str,
    metrics: Sequence[StatementMetrics],
    health: TableHealth,
    partitions: int,
) -> dict[str, Any]:
    """All of the module docs' keys for one write of ``table`` covering ``partitions`` of the
    asset's partitions (0: an unpartitioned asset)."""
    out: dict[str, Any] = {
        TABLE_NAME: table.name,
        COLUMN_SCHEMA: column_schema(table),
        "operation": operation,
        "table_location": MetadataValue.path(table.spec.location),
        URI: table_uri(table.spec.location),
    }
    out |= statement_metadata(metrics)
    out |= health_metadata(health)
    if health.rows is not None:
        out[ROW_COUNT] = health.rows
    if partitions and health.slice_rows is not None:
        out[PARTITION_ROW_COUNT if partitions == 1 else RANGE_ROW_COUNT] = health.slice_rows
    return out


def table_uri(location: str) -> str:
    """The table's location as a URI (``file://`` for a local path).

    >>> table_uri("/wh/retail.db/sales"), table_uri("s3://b/wh/sales")
    ('file:///wh/retail.db/sales', 's3://b/wh/sales')
    """
    return location if "://" in location else f"file://{location}"


def health_metadata(health: TableHealth) -> dict[str, Any]:
    """The health numbers (see module docs)."""
    out: dict[str, Any] = {
        "table_partitions": health.partitions,
        "delta_count": health.deltas,
        "delete_delta_count": health.delete_deltas,
        "table_bytes": health.bytes,
    }
    ratio = health.delete_ratio
    if ratio is not None:
        out["delete_ratio"] = MetadataValue.float(ratio)
    return out


__all__ = [
    "COLUMN_SCHEMA",
    "PARTITION_ROW_COUNT",
    "RANGE_ROW_COUNT",
    "ROW_COUNT",
    "TABLE_NAME",
    "URI",
    "column_schema",
    "health_metadata",
    "materialization_metadata",
    "statement_metadata",
    "table_uri",
]
