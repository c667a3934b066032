"""The on-disk truth: Hive ACID v2 names, snapshots, directory selection, ORC event files,
bucketing and merge-on-read. Pure and engine-free; imports nothing above it.

>>> from acid_platform.format import ValidWriteIdList, encode_bucket
>>> str(ValidWriteIdList.parse("db.t:11:4:4,6,10:2,8"))
'db.t:11:4:4,6,10:2,8'
>>> encode_bucket(1)
536936448
"""

from acid_platform.format.acid_state import (
    AcidDir,
    AcidFile,
    AcidState,
    OriginalFile,
    acid_state,
    list_partition_dirs,
)
from acid_platform.format.bucket_codec import (
    MAX_BUCKET_ID,
    MAX_STATEMENT_ID,
    bucket_codec_version,
    decode_bucket,
    encode_bucket,
)
from acid_platform.format.bucketing import bucket_for, bucket_hash, bucket_ids, murmur3_32
from acid_platform.format.delete_merge import load_delete_set
from acid_platform.format.delete_set import DeleteLookup, DeleteSet
from acid_platform.format.flush_length import read_flush_length
from acid_platform.format.fs import Location, resolve
from acid_platform.format.id_list import RangeResponse
from acid_platform.format.merge_on_read import (
    DataFileRef,
    ReadSplit,
    ReadStats,
    output_schema,
    pin_flush_lengths,
    plan_splits,
    read_acid,
    read_balanced,
    read_split,
    row_schema_of,
    wide_columns_of_splits,
)
from acid_platform.format.names import (
    FLUSH_LENGTH_SUFFIX,
    METADATA_ACID_FILE,
    ORC_ACID_VERSION_FILE,
    OriginalFileName,
    ParsedBase,
    ParsedDelta,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delta_dir_name,
    flush_length_file_name,
    is_hidden,
    parse_acid_dir_name,
    parse_bucket_file_name,
    parse_original_file_name,
)
from acid_platform.format.reader import EventKey, OrcDataFile
from acid_platform.format.snapshot import Snapshot
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.txn_write_id_list import ValidTxnWriteIdList
from acid_platform.format.types import (
    ROW_ID_COLUMN,
    ROW_ID_FIELDS,
    ROW_ID_TYPE,
    event_schema,
    row_id_text,
    row_schema,
    to_arrow_type,
    to_hive_type,
)
from acid_platform.format.write_id_list import (
    CleanerWriteIdList,
    ValidCompactorWriteIdList,
    ValidWriteIdList,
)
from acid_platform.format.writer import (
    DEFAULT_COMPRESSION,
    ORC_COMPRESS_PROPERTY,
    EventWriter,
    WrittenFile,
    compression_of,
    delete_events,
    insert_events,
    sort_events,
    write_acid_version_file,
)

__all__ = [
    "row_schema_of",
    "wide_columns_of_splits",
    "DEFAULT_COMPRESSION",
    "FLUSH_LENGTH_SUFFIX",
    "MAX_BUCKET_ID",
    "MAX_STATEMENT_ID",
    "METADATA_ACID_FILE",
    "ORC_ACID_VERSION_FILE",
    "ORC_COMPRESS_PROPERTY",
    "ROW_ID_COLUMN",
    "ROW_ID_FIELDS",
    "ROW_ID_TYPE",
    "AcidDir",
    "AcidFile",
    "AcidState",
    "CleanerWriteIdList",
    "DataFileRef",
    "DeleteLookup",
    "DeleteSet",
    "EventKey",
    "EventWriter",
    "Location",
    "OrcDataFile",
    "OriginalFile",
    "OriginalFileName",
    "ParsedBase",
    "ParsedDelta",
    "RangeResponse",
    "ReadSplit",
    "ReadStats",
    "Snapshot",
    "ValidCompactorWriteIdList",
    "ValidTxnList",
    "ValidTxnWriteIdList",
    "ValidWriteIdList",
    "WrittenFile",
    "acid_state",
    "base_dir_name",
    "bucket_codec_version",
    "bucket_file_name",
    "bucket_for",
    "bucket_hash",
    "bucket_ids",
    "compression_of",
    "decode_bucket",
    "delete_delta_dir_name",
    "delete_events",
    "delta_dir_name",
    "encode_bucket",
    "event_schema",
    "flush_length_file_name",
    "insert_events",
    "is_hidden",
    "list_partition_dirs",
    "load_delete_set",
    "murmur3_32",
    "output_schema",
    "parse_acid_dir_name",
    "parse_bucket_file_name",
    "parse_original_file_name",
    "pin_flush_lengths",
    "plan_splits",
    "read_acid",
    "read_flush_length",
    "read_balanced",
    "read_split",
    "resolve",
    "row_id_text",
    "row_schema",
    "sort_events",
    "to_arrow_type",
    "to_hive_type",
    "write_acid_version_file",
]
