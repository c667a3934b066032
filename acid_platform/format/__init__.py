"""The on-disk truth: Hive ACID v2 names, snapshots, directory selection, ORC event files,
bucketing and merge-on-read. Pure and engine-free; imports nothing above it.

Modules, by concern:

* files — :mod:`.fs` (every byte through ``pyarrow.fs``; ``create_new`` creates a file
  exclusively, never replacing one), :mod:`.storage` (``StorageOptions``: an object store's
  endpoint and credentials, one client per bucket), :mod:`.names` (directory and file names,
  built and parsed);
* the snapshot — :mod:`.id_list`, :mod:`.txn_list` (``ValidTxnList``), :mod:`.write_id_list`
  (``ValidWriteIdList`` and the compactor's and cleaner's lists), :mod:`.txn_write_id_list`,
  :mod:`.snapshot` (what one read sees);
* what exists — :mod:`.listing` (one listing of a partition), :mod:`.acid_state` (Hive's
  ``getAcidState``), :mod:`.file_record` (what commits recorded they wrote; a listing checked
  against it, each difference a ``FileProblem``);
* ORC event files — :mod:`.types` (Hive types and Arrow, the event schema), :mod:`.writer`
  (the one ``EventWriter``), :mod:`.orc_tail` (Hive's footer metadata), :mod:`.orc_footer`
  (CHAR/VARCHAR types, the proleptic Gregorian calendar), :mod:`.orc_timestamps` (pre-1970
  fractions as ORC Java stores them), :mod:`.wide_timestamps` (years 0001..9999, beyond Arrow's
  nanoseconds), :mod:`.utf8` (the UTF-8 check of every write, ``InvalidUtf8Error``),
  :mod:`.bucket_codec` (the ``bucket`` field), :mod:`.reader` and :mod:`.file_reader` (one file,
  stripe by stripe), :mod:`.parallel` (decoding threads);
* streaming files — :mod:`.streaming_file` (a bucket file growing commit by commit, with its
  ``_flush_length`` side file), :mod:`.orc_append`, :mod:`.orc_stats` and :mod:`.protobuf` (its
  intermediate tails), :mod:`.flush_length` (a file read up to its committed length);
* bucketing — :mod:`.bucketing` (hash versions 1 and 2), :mod:`.hive_hash` (one value),
  :mod:`.bucket_columns` (whole columns);
* insert-only tables — :mod:`.plain_files` (plain ORC, Parquet and text files);
* merge-on-read — :mod:`.merge_on_read` (splits per bucket, ``read_split``, ``read_balanced``),
  :mod:`.delete_set` (a bucket's delete events as sorted arrays), :mod:`.delete_merge` (merged
  in key order above ``hive.transactional.events.mem``), :mod:`.row_filter` (deleted rows
  dropped);
* :mod:`.change_events` — a write-id window's inserts and deletes, deletes with their rows.

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
