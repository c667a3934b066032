"""What committed writes recorded they wrote, and how a listing is checked against it.

At commit a writer records in the metastore each base/delta directory it wrote and each bucket
file in it, with its size and row count. A :class:`TableRecord` is that record for one table;
:mod:`.acid_state` checks a partition's listing against its :class:`PartitionRecord`:

* the directories the snapshot should read are chosen from the record (plus the directories of
  write ids nobody recorded: Hive's, or older than the record), and each must be on disk;
* each chosen directory on disk that is recorded must hold exactly its recorded bucket files, of
  their recorded sizes;
* a chosen directory on disk that is not recorded while any of its write ids is recorded
  anywhere in the table is a stray copy: a directory copied in from another table or another
  incarnation of this one, or restored from the wrong backup. Only write ids that no write of
  this table recorded (Hive's, or older than the record) may be read from unrecorded
  directories, so a copy claiming write ids this table's writers wrote is never read, in a
  recorded partition or in any other.

A streaming transaction batch writes one ``delta_<min>_<max>`` for all its transactions, and its
bucket files grow commit by commit (each commit appends a tail and a new ``_flush_length``). Each
commit records the files it wrote with their committed length, and the directory's own row with
size :data:`GROWING` (-1): such a directory is *growing*. A recorded file there must be at least
as long as the longest length recorded (readers read only the committed prefix; later commits
and the final tail only add bytes), and a file nobody recorded is allowed only while it has a
side file (a bucket the batch opened and has committed nothing into yet); anything else is a
difference as in any directory.

A difference is a :class:`FileProblem`; readers, the compactor and the cleaner raise the first
one as a typed error naming the file, ``acid fsck`` reports them all. Write ids that no one
recorded (tables written by Hive) are read as before.

>>> record = TableRecord.of([("", "delta_0000001_0000001_0000", "bucket_00000", 10, 2)])
>>> sorted(record.partition("").dirs["delta_0000001_0000001_0000"].files.items())
[('bucket_00000', 10)]
>>> record.partition("p=1").dirs   # nothing recorded there; the table's write ids still are
{}
>>> record.partition("").covers("base_0000002"), record.partition("p=1").covers("delta_0000002_0000002")
(True, False)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from acid_platform.errors import (
    FileRecordError,
    FileSizeMismatchError,
    MissingFileError,
    UnexpectedFileError,
)
from acid_platform.format.names import ParsedBase, ParsedDelta, parse_acid_dir_name

MISSING, UNEXPECTED, SIZE = "missing", "unexpected", "size"
#: The size recorded on a directory's own row when its files grow across commits (streaming).
GROWING = -1


@dataclass(frozen=True)
class RecordedDir:
    """One recorded base/delta directory: its bucket files (name -> size and rows). In a
    ``growing`` (streaming) directory the sizes are committed lengths, the least a file has."""

    name: str
    files: Mapping[str, int]
    rows: Mapping[str, int] = field(default_factory=dict)
    growing: bool = False


@dataclass(frozen=True)
class PartitionRecord:
    """The recorded directories of one partition (``""`` for an unpartitioned table), and the
    write-id ranges recorded anywhere in the table (``table_ranges``)."""

    dirs: Mapping[str, RecordedDir]
    table_ranges: tuple[tuple[int, int], ...] = ()
    #: Directories recorded as growing somewhere in the table (a streaming batch's).
    table_growing: frozenset[str] = frozenset()

    def covers(self, dir_name: str) -> bool:
        """Whether an unrecorded directory named ``dir_name`` claims a write id that a write of
        this table recorded (in this partition or another): a stray copy, not a write of
        Hive's, whose write ids nobody recorded. A streaming batch's directory in a partition
        it has committed nothing into yet is not one: the batch records it as growing where it
        has."""
        if dir_name in self.table_growing:
            return False
        low, high = _range(dir_name)
        ranges = [*self.table_ranges, *(_range(name) for name in self.dirs)]
        return any(low <= r_high and r_low <= high for r_low, r_high in ranges if r_low <= r_high)


#: ``(partition, directory, file, size, rows)``: one recorded row (``file`` empty: the directory's own).
RecordRow = tuple[str, str, str, int, int]


class LazyPartitions(Mapping[str, "PartitionRecord"]):
    """The recorded partitions of a table, by name, each partition's rows fetched when first
    asked for (:meth:`load` fetches many in one call): a statement that reads 2 partitions of a
    2,000-partition table fetches the record of those 2, not of all of them."""

    def __init__(
        self, names: Iterable[str], fetch: Callable[[Sequence[str]], Iterable[RecordRow]]
    ) -> None:
        self._names = frozenset(names)
        self._fetch = fetch
        self._loaded: dict[str, PartitionRecord] = {}
        self._lock = threading.Lock()

    def load(self, names: Iterable[str]) -> None:
        """Fetch the record of those of ``names`` that are recorded and not fetched yet."""
        with self._lock:
            wanted = sorted({n for n in names if n in self._names and n not in self._loaded})
            if not wanted:
                return
            fetched = TableRecord.of(self._fetch(wanted)).partitions
            for name in wanted:
                self._loaded[name] = fetched.get(name) or PartitionRecord({})

    def __getitem__(self, name: str) -> PartitionRecord:
        if name not in self._names:
            raise KeyError(name)
        self.load([name])
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names))

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True)
class TableRecord:
    """What committed writes recorded for one table, by partition name.

    Loaded whole (:meth:`of`), or lazily (:meth:`lazy`): then ``directories`` names every
    recorded directory of the table (name -> growing) and ``partitions`` fetches a partition's
    rows when asked for it (:meth:`load` fetches many at once)."""

    partitions: Mapping[str, PartitionRecord]
    #: every directory recorded in the table (name -> recorded as growing), for a lazy record
    directories: Mapping[str, bool] | None = None

    @classmethod
    def lazy(
        cls,
        partitions: Iterable[str],
        directories: Mapping[str, bool],
        fetch: Callable[[Sequence[str]], Iterable[RecordRow]],
    ) -> TableRecord:
        """A record of recorded ``partitions`` (names) and ``directories`` (name -> growing
        anywhere) whose rows ``fetch(names)`` returns, partition by partition, when needed."""
        return cls(LazyPartitions(partitions, fetch), dict(directories))

    def load(self, names: Iterable[str]) -> None:
        """Fetch the record of partitions ``names`` now, in one call (a lazy record; a whole
        one has them all)."""
        if isinstance(self.partitions, LazyPartitions):
            self.partitions.load(names)

    @classmethod
    def of(cls, rows: Iterable[RecordRow]) -> TableRecord:
        """From ``(partition, directory, file, size, rows)`` rows; ``file`` is ``""`` for the
        row of the directory itself."""
        files: dict[str, dict[str, dict[str, tuple[int, int]]]] = {}
        growing: set[tuple[str, str]] = set()
        for partition, directory, name, size, count in rows:
            entry = files.setdefault(partition, {}).setdefault(directory, {})
            if not name:
                if int(size) == GROWING:
                    growing.add((partition, directory))
            elif name not in entry or int(size) > entry[name][0]:
                # a growing file is recorded by each commit: the last (longest) counts
                entry[name] = (int(size), int(count))
        return cls(
            {
                part: PartitionRecord(
                    {
                        d: RecordedDir(
                            d,
                            {n: s for n, (s, _) in fs.items()},
                            {n: r for n, (_, r) in fs.items()},
                            (part, d) in growing,
                        )
                        for d, fs in dirs.items()
                    }
                )
                for part, dirs in files.items()
            }
        )

    def partition(self, name: str) -> PartitionRecord | None:
        """The record of partition ``name`` with the table's recorded write-id ranges (empty
        where nothing was recorded there); ``None`` for a table with no record at all (one
        written by Hive: nothing to check)."""
        if self.is_empty:
            return None
        found = self.partitions.get(name) or PartitionRecord({})
        return PartitionRecord(found.dirs, self.ranges, self.growing)

    @cached_property
    def growing(self) -> frozenset[str]:
        """The directories recorded as growing (streaming) in any partition."""
        if self.directories is not None:
            return frozenset(d for d, growing in self.directories.items() if growing)
        return frozenset(
            d.name for p in self.partitions.values() for d in p.dirs.values() if d.growing
        )

    @cached_property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        """The write-id ranges of every recorded directory of the table (a base: ``0..N``)."""
        if self.directories is not None:
            return tuple(sorted({_range(d) for d in self.directories}))
        return tuple(sorted({_range(d) for p in self.partitions.values() for d in p.dirs}))

    @property
    def is_empty(self) -> bool:
        return not self.partitions


@dataclass(frozen=True)
class FileProblem:
    """One difference between the disk and the record: ``kind`` is ``missing``, ``unexpected``
    or ``size``; ``path`` the file or directory."""

    kind: str
    path: str
    detail: str

    def error(self) -> FileRecordError:
        """The typed error a reader raises for it."""
        cls = {MISSING: MissingFileError, UNEXPECTED: UnexpectedFileError}.get(
            self.kind, FileSizeMismatchError
        )
        return cls(f"{self.path}: {self.detail}", self.path)


def compare_files(
    dir_path: str,
    actual: Mapping[str, int],
    recorded: RecordedDir,
    open_files: Iterable[str] = (),
) -> list[FileProblem]:
    """The differences between one directory's bucket files on disk (name -> size) and its
    record; ``open_files`` are those with a ``_flush_length`` side file (still written)."""
    out = []
    for name, size in sorted(recorded.files.items()):
        path = f"{dir_path}/{name}"
        if name not in actual:
            out.append(FileProblem(MISSING, path, "committed file is missing"))
        elif recorded.growing and actual[name] < size:
            out.append(
                FileProblem(
                    SIZE,
                    path,
                    f"streamed file has {actual[name]} bytes, {size} were committed (truncated)",
                )
            )
        elif not recorded.growing and actual[name] != size:
            out.append(
                FileProblem(
                    SIZE,
                    path,
                    f"committed file has {actual[name]} bytes, {size} were written "
                    "(truncated or replaced)",
                )
            )
    allowed = set(open_files) if recorded.growing else set()
    for name in sorted(set(actual) - set(recorded.files) - allowed):
        out.append(
            FileProblem(UNEXPECTED, f"{dir_path}/{name}", "no committed write wrote this file")
        )
    return out


def _range(dir_name: str) -> tuple[int, int]:
    parsed = parse_acid_dir_name(dir_name)
    if isinstance(parsed, ParsedDelta):
        return parsed.min_write_id, parsed.max_write_id
    if isinstance(parsed, ParsedBase):
        return 0, parsed.write_id
    return 0, -1


__all__ = [
    "GROWING",
    "MISSING",
    "LazyPartitions",
    "RecordRow",
    "SIZE",
    "UNEXPECTED",
    "FileProblem",
    "PartitionRecord",
    "RecordedDir",
    "TableRecord",
    "compare_files",
]
