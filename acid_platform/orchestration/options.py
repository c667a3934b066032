"""What an asset's metadata asks of the IO manager: the write mode, the key columns, the MERGE
clauses and, for a table the first write creates, its layout.

The mode comes from the asset's definition metadata and can be overridden at run time by the
output metadata (``context.add_output_metadata({"write_mode": "append"})``), as in
dagster-iceberg; without either, the IO manager's ``default_write_mode``::

    @asset(
        metadata={
            "write_mode": "merge",                 # append | overwrite | merge | delete
            "key_columns": ["store_id"],           # merge and delete match rows on these
            "merge_options": {"delete_condition": "s.closed"},
            "partition_expr": "ds",                # Dagster partition -> Hive partition column
            "clustered_by": ["store_id"], "buckets": 4,
            "table_properties": {"orc.compress": "ZSTD"},
        }
    )

An insert-only table: ``"table_properties": {"transactional_properties": "insert_only"}``,
with ``"stored_as": "parquet"`` (or ``"textfile"``; default ORC) for its plain files.

Bad metadata raises :class:`~acid_platform.errors.AssetMetadataError` before anything is
written.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import MetadataValue

from acid_platform.errors import AssetMetadataError

#: Metadata keys the IO manager reads (definition metadata; the first four also output metadata).
WRITE_MODE = "write_mode"
KEY_COLUMNS = "key_columns"
MERGE_OPTIONS = "merge_options"
PARTITION_EXPR = "partition_expr"
PARTITIONED_BY = "partitioned_by"
CLUSTERED_BY = "clustered_by"
BUCKETS = "buckets"
TABLE_PROPERTIES = "table_properties"
STORED_AS = "stored_as"


class WriteMode(enum.StrEnum):
    """How an output is written to its table slice (one transaction each)."""

    #: INSERT the rows.
    APPEND = "append"
    #: Replace the slice (the asset's partitions, or the whole table) with the rows.
    OVERWRITE = "overwrite"
    #: MERGE the rows on the key columns (update matches, insert the rest; see MergeOptions).
    MERGE = "merge"
    #: DELETE the table's rows whose key columns match a row of the output.
    DELETE = "delete"


@dataclass(frozen=True)
class MergeOptions:
    """The WHEN clauses of the MERGE a ``merge`` write runs (``s`` = the output, ``t`` = the
    table): ``WHEN MATCHED AND delete_condition THEN DELETE``, ``WHEN MATCHED [AND
    update_condition] THEN UPDATE`` every column (``update``), ``WHEN NOT MATCHED [AND
    insert_condition] THEN INSERT`` (``insert``; e.g. ``NOT s.closed``, so that a source row
    that a later run would delete is never inserted and a re-run changes nothing), and with ``delete_missing`` ``WHEN NOT MATCHED BY SOURCE THEN DELETE`` for
    the table's rows of the slice the output no longer has."""

    update: bool = True
    insert: bool = True
    update_condition: str | None = None
    insert_condition: str | None = None
    delete_condition: str | None = None
    delete_missing: bool = False

    @classmethod
    def parse(cls, value: Any, asset: str) -> MergeOptions:
        """From a metadata value (a dict of the fields)."""
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise AssetMetadataError(
                f"asset {asset}: {MERGE_OPTIONS} must be a dict, not {value!r}"
            )
        unknown = sorted(set(value) - set(cls.__dataclass_fields__))
        if unknown:
            raise AssetMetadataError(
                f"asset {asset}: unknown {MERGE_OPTIONS} {unknown}; "
                f"known: {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**dict(value))


@dataclass(frozen=True)
class WriteOptions:
    """The resolved write of one output."""

    mode: WriteMode
    key_columns: tuple[str, ...] = ()
    merge: MergeOptions = field(default_factory=MergeOptions)


@dataclass(frozen=True)
class TableLayout:
    """How a table the first write creates is laid out (ignored once it exists)."""

    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    buckets: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    #: STORED AS of an insert-only table (``orc``, ``parquet``, ``textfile``); None: ORC
    stored_as: str | None = None


def write_options(
    definition: Mapping[str, Any],
    output: Mapping[str, Any],
    default: WriteMode | str,
    asset: str,
) -> WriteOptions:
    """The write an output asks for: output metadata over definition metadata over
    ``default``. A ``merge`` or ``delete`` without ``key_columns`` is refused."""

    def pick(key: str) -> Any:
        if key in output:
            return plain(output[key])
        return plain(definition.get(key))

    text = pick(WRITE_MODE) or default
    try:
        mode = WriteMode(str(text).lower())
    except ValueError:
        raise AssetMetadataError(
            f"asset {asset}: unknown {WRITE_MODE} {text!r}; use one of "
            f"{[m.value for m in WriteMode]}"
        ) from None
    keys = names(pick(KEY_COLUMNS), KEY_COLUMNS, asset)
    if mode in (WriteMode.MERGE, WriteMode.DELETE) and not keys:
        raise AssetMetadataError(
            f"asset {asset}: write_mode {mode.value!r} needs {KEY_COLUMNS} (the columns that "
            f'identify a row), e.g. metadata={{"{KEY_COLUMNS}": ["id"]}}'
        )
    return WriteOptions(mode, keys, MergeOptions.parse(pick(MERGE_OPTIONS), asset))


def table_layout(
    definition: Mapping[str, Any], partition_columns: Sequence[str], asset: str
) -> TableLayout:
    """The layout of a new table: ``partitioned_by`` (default: the ``partition_expr``
    columns), ``clustered_by`` with ``buckets``, ``table_properties``, ``stored_as``."""
    given = definition.get(PARTITIONED_BY)
    partitioned = names(given, PARTITIONED_BY, asset) if given is not None else partition_columns
    clustered = names(definition.get(CLUSTERED_BY), CLUSTERED_BY, asset)
    buckets = definition.get(BUCKETS) or 0
    if not isinstance(buckets, int) or buckets < 0 or bool(clustered) != bool(buckets):
        raise AssetMetadataError(
            f"asset {asset}: {CLUSTERED_BY} and {BUCKETS} go together (columns and a positive "
            f"number of buckets); got {list(clustered)} and {buckets!r}"
        )
    properties = definition.get(TABLE_PROPERTIES) or {}
    if not isinstance(properties, Mapping):
        raise AssetMetadataError(f"asset {asset}: {TABLE_PROPERTIES} must be a dict")
    stored_as = definition.get(STORED_AS)
    if stored_as is not None and not isinstance(stored_as, str):
        raise AssetMetadataError(f"asset {asset}: {STORED_AS} must be a format name")
    return TableLayout(
        tuple(partitioned),
        clustered,
        buckets,
        {str(k): str(v) for k, v in properties.items()},
        stored_as,
    )


def names(value: Any, key: str, asset: str) -> tuple[str, ...]:
    """A metadata value that lists column names (a name or a list of names)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise AssetMetadataError(f"asset {asset}: {key} must be a column name or a list of them")


def plain(value: Any) -> Any:
    """A metadata value as Python data (output metadata arrives wrapped in MetadataValue)."""
    return value.value if isinstance(value, MetadataValue) else value


__all__ = [
    "BUCKETS",
    "CLUSTERED_BY",
    "KEY_COLUMNS",
    "MERGE_OPTIONS",
    "PARTITIONED_BY",
    "PARTITION_EXPR",
    "STORED_AS",
    "TABLE_PROPERTIES",
    "WRITE_MODE",
    "MergeOptions",
    "TableLayout",
    "WriteMode",
    "WriteOptions",
    "table_layout",
    "write_options",
]
