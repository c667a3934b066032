"""Listing a partition directory for :mod:`.acid_state`: one recursive listing through
``pyarrow.fs``, grouped into base/delta directories (their direct files, with ``_metadata_acid``
read where present) and original files. The values it produces — :class:`AcidFile`,
:class:`AcidDir`, :class:`OriginalFile` — are what a snapshot is made of.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from acid_platform.errors import AcidFormatError, InvalidNameError
from acid_platform.format.fs import basename, join
from acid_platform.format.names import (
    FLUSH_LENGTH_SUFFIX,
    METADATA_ACID_FILE,
    ParsedBase,
    ParsedDelta,
    is_hidden,
    looks_like_acid_dir_name,
    parse_acid_dir_name,
    parse_bucket_file_name,
    parse_original_file_name,
)

_RAW = "raw"
_COMPACTED = "compacted"


@dataclass(frozen=True)
class AcidFile:
    """A bucket file inside a base or delta directory.

    ``flush_length_path`` is the ``_flush_length`` side file of a streaming delta, when there is
    one; its last 8-byte big-endian long is the committed length of the file. In a raw directory
    (LOAD DATA) the files have original names (``000000_0``) and ``bucket_id`` comes from them.
    """

    path: str
    size: int
    bucket_id: int
    attempt_id: int | None = None
    flush_length_path: str | None = None

    @property
    def name(self) -> str:
        """The file name."""
        return basename(self.path)


@dataclass(frozen=True)
class AcidDir:
    """A base, delta or delete delta directory and its bucket files (sorted by path).

    ``is_compacted``: written by a compactor (a ``_v`` suffix, or ``_metadata_acid`` saying
    ``compacted``). ``is_raw``: the files have no ACID columns (LOAD DATA into a ``base_N`` or
    ``delta_N_N``); their rows get synthetic ROW__IDs.
    """

    path: str
    parsed: ParsedBase | ParsedDelta
    files: tuple[AcidFile, ...] = ()
    is_raw: bool = False
    is_compacted: bool = False

    @property
    def name(self) -> str:
        """The directory name."""
        return basename(self.path)

    @property
    def is_base(self) -> bool:
        """A ``base_…`` directory."""
        return isinstance(self.parsed, ParsedBase)

    @property
    def is_delete(self) -> bool:
        """A ``delete_delta_…`` directory."""
        return isinstance(self.parsed, ParsedDelta) and self.parsed.is_delete

    @property
    def write_id(self) -> int:
        """The write id of a base (``base_<write_id>``)."""
        if not isinstance(self.parsed, ParsedBase):
            raise TypeError(f"{self.path} is a delta; it has min/max write ids, not a write id")
        return self.parsed.write_id

    @property
    def min_write_id(self) -> int:
        """Lowest write id covered; 0 for a base (a base holds everything up to its id)."""
        return 0 if isinstance(self.parsed, ParsedBase) else self.parsed.min_write_id

    @property
    def max_write_id(self) -> int:
        """Highest write id covered (a base's write id)."""
        if isinstance(self.parsed, ParsedBase):
            return self.parsed.write_id
        return self.parsed.max_write_id

    @property
    def statement_id(self) -> int:
        """Statement id of a delta; -1 when the name has none (and for a base)."""
        return -1 if isinstance(self.parsed, ParsedBase) else self.parsed.statement_id

    @property
    def visibility_txn_id(self) -> int:
        """The ``_v`` txn id; 0 when there is no suffix."""
        return self.parsed.visibility_txn_id


@dataclass(frozen=True)
class OriginalFile:
    """A file written before the table became transactional (or by a non-ACID writer).

    ``bucket_id`` is the number before the first ``_`` of a Hive original name (``000001_0``,
    ``000002_0_copy_1``) and -1 for any other name (``random``), as Hive's ``parseBucketId``
    answers; Hive and Trino refuse to give such a file synthetic ROW__IDs, so a reader should too.
    """

    path: str
    size: int
    bucket_id: int

    @property
    def name(self) -> str:
        """The file name."""
        return basename(self.path)


@dataclass
class DirListing:
    """One base/delta directory as listed: its direct files (name -> size)."""

    name: str
    path: str
    parsed: ParsedBase | ParsedDelta
    files: dict[str, int] = field(default_factory=dict)


@dataclass
class PartitionListing:
    """One partition directory as listed: its base/delta directories and original files."""

    acid_dirs: dict[str, DirListing] = field(default_factory=dict)
    original_files: list[OriginalFile] = field(default_factory=list)


def list_partition(fs: pafs.FileSystem, root: str) -> PartitionListing:
    """One recursive listing, grouped by top-level child.

    Anything under a hidden component (``_tmp…``, ``.hive-staging…``) is skipped; inside a
    base/delta only its direct files count (sub-directories are not part of the snapshot); every
    other file, at any depth, is an original file.
    """
    listing = PartitionListing()
    root = root.rstrip("/") or "/"
    prefix = root if root.endswith("/") else root + "/"
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if not info.path.startswith(prefix):
            raise AcidFormatError(f"listing of {root} returned {info.path}, outside it")
        parts = info.path[len(prefix) :].split("/")
        if any(is_hidden(p) for p in parts[:-1]):
            continue
        top, is_file = parts[0], info.type == pafs.FileType.File
        if looks_like_acid_dir_name(top) and (len(parts) > 1 or not is_file):
            entry = listing.acid_dirs.get(top) or _new_dir_listing(listing, root, top)
            if len(parts) == 2 and is_file:
                entry.files[parts[1]] = info.size or 0
        elif is_file and not is_hidden(parts[-1]):
            original = parse_original_file_name(parts[-1])
            bucket_id = -1 if original is None else original.bucket_id
            listing.original_files.append(OriginalFile(info.path, info.size or 0, bucket_id))
    return listing


def _new_dir_listing(listing: PartitionListing, root: str, name: str) -> DirListing:
    path = join(root, name)
    parsed = parse_acid_dir_name(name)
    if parsed is None:
        raise InvalidNameError(
            f"{path}: the directory name looks like a base/delta but does not parse "
            "(Hive and Trino fail on it as well); move it out of the table directory"
        )
    entry = DirListing(name, path, parsed)
    listing.acid_dirs[name] = entry
    return entry


class AcidDirBuilder:
    """Turns a listed directory into an :class:`AcidDir`, reading ``_metadata_acid`` if present."""

    def __init__(self, fs: pafs.FileSystem, *, insert_only: bool = False) -> None:
        self._fs = fs
        self._insert_only = insert_only

    def build(self, entry: DirListing) -> AcidDir:
        parsed = entry.parsed
        data_format = (
            self._read_data_format(join(entry.path, METADATA_ACID_FILE))
            if METADATA_ACID_FILE in entry.files
            else None
        )
        is_compacted = parsed.visibility_txn_id > 0 or data_format == _COMPACTED
        if self._insert_only:  # an insert-only table: plain data files, whatever their names
            return AcidDir(entry.path, parsed, _plain_files(entry), False, is_compacted)
        is_raw = not is_compacted and _may_be_raw(parsed) and _is_raw(data_format, entry.files)
        files = _raw_files(entry) if is_raw else _bucket_files(entry)
        return AcidDir(entry.path, parsed, files, is_raw, is_compacted)

    def _read_data_format(self, path: str) -> str:
        try:
            with self._fs.open_input_stream(path) as stream:
                metadata = json.loads(stream.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            raise AcidFormatError(f"cannot read {path}: {e}") from e
        if not isinstance(metadata, dict) or metadata.get("thisFileVersion") != "0":
            raise AcidFormatError(f"{path}: unexpected ACID metadata version in {metadata!r}")
        data_format = metadata.get("dataFormat")
        if not isinstance(data_format, str) or data_format.lower() not in (_RAW, _COMPACTED):
            raise AcidFormatError(f"{path}: unexpected ACID dataFormat {data_format!r}")
        return data_format.lower()


def _may_be_raw(parsed: ParsedBase | ParsedDelta) -> bool:
    # Only LOAD DATA writes raw files, into base_N or delta_N_N; never into delete deltas.
    if isinstance(parsed, ParsedBase):
        return True
    return not parsed.is_delete and parsed.min_write_id == parsed.max_write_id


def _is_raw(data_format: str | None, files: dict[str, int]) -> bool:
    if data_format is not None:
        return data_format == _RAW
    # No marker: Hive looks at the schema of one original-named file. ACID writers only ever
    # write bucket_N files, so original-named files and no bucket file mean LOAD DATA output.
    has_original = any(parse_original_file_name(n) is not None for n in files)
    has_bucket = any(parse_bucket_file_name(n) is not None for n in files)
    return has_original and not has_bucket


def _bucket_files(entry: DirListing) -> tuple[AcidFile, ...]:
    honours_side_files = (
        isinstance(entry.parsed, ParsedDelta) and entry.parsed.may_contain_side_file
    )
    files = []
    for name, size in entry.files.items():
        bucket = parse_bucket_file_name(name)
        if bucket is None:
            continue
        side_file = name + FLUSH_LENGTH_SUFFIX
        flush_length_path = (
            join(entry.path, side_file) if honours_side_files and side_file in entry.files else None
        )
        files.append(
            AcidFile(join(entry.path, name), size, bucket[0], bucket[1], flush_length_path)
        )
    return tuple(sorted(files, key=lambda f: f.path))


def _raw_files(entry: DirListing) -> tuple[AcidFile, ...]:
    files = []
    for name, size in entry.files.items():
        original = parse_original_file_name(name)
        if original is not None:
            files.append(AcidFile(join(entry.path, name), size, original.bucket_id))
    return tuple(sorted(files, key=lambda f: f.path))


def _plain_files(entry: DirListing) -> tuple[AcidFile, ...]:
    """Every data file of an insert-only table's directory (hidden names and side files
    aside); the bucket is the number a Hive task name (``000001_0``) starts with, else 0."""
    files = []
    for name, size in entry.files.items():
        if is_hidden(name) or name.endswith(FLUSH_LENGTH_SUFFIX):
            continue
        original = parse_original_file_name(name)
        bucket = original.bucket_id if original is not None else 0
        files.append(AcidFile(join(entry.path, name), size, bucket))
    return tuple(sorted(files, key=lambda f: f.path))
