"""``fsck``: what a table's files are against what its commits recorded, and the repair.

:func:`fsck_table` reads the table's directories under one snapshot (held as a reader lease)
and lists every :class:`~acid_platform.format.file_record.FileProblem` a read would raise: a
committed file or directory missing, a stray one (a copied ``bucket_00001`` or
``bucket_00000_1``, a copied directory), a file whose size changed. With ``repair``:

* a stray or resized file (or stray directory) is moved into ``<table>/_fsck_quarantine/<ts>/``
  (a hidden directory: no reader, compactor or cleaner looks there), never deleted;
* the record of what is missing (and of what was moved away) is forgotten: the loss is
  acknowledged, and the table reads again — what remains of it. A missing compacted base whose
  input deltas are still there reads from those deltas again, losing nothing.

Tables written by Hive (no record) have nothing to check.

>>> import tempfile
>>> from acid_platform import Warehouse
>>> wh = Warehouse.open(tempfile.mkdtemp())
>>> t = wh.create_table("t", [("id", "int")])
>>> _ = t.insert([{"id": 1}])
>>> fsck_table(wh, "t").ok
True
>>> wh.close()
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from acid_platform.format.acid_state import list_partition_dirs, record_problems
from acid_platform.format.file_record import MISSING, FileProblem, TableRecord
from acid_platform.format.fs import Location, join, parent, resolve
from acid_platform.table.statement import read_snapshot
from acid_platform.table.verify import Finding

if TYPE_CHECKING:
    from acid_platform.format import Snapshot
    from acid_platform.metastore import TableSpec
    from acid_platform.table.warehouse import TableWarehouse

QUARANTINE = "_fsck_quarantine"
#: The name of the asset check answered by :func:`fsck_findings`.
FILE_CHECK = "files_match_record"


@dataclass(frozen=True)
class FsckReport:
    """One table's check: the problems found and, with repair, what was done to each."""

    table: str
    problems: tuple[FileProblem, ...] = ()
    repaired: tuple[str, ...] = ()
    remaining: tuple[FileProblem, ...] = ()

    @property
    def ok(self) -> bool:
        """Nothing left that a read would fail on."""
        return not (self.remaining if self.repaired else self.problems)


def fsck_table(warehouse: TableWarehouse, name: str, *, repair: bool = False) -> FsckReport:
    """Check table ``name`` against its record; with ``repair`` fix what was found (see
    module docs) and check again."""
    spec = warehouse.table(name).spec
    location = resolve(spec.location, warehouse.filesystem_for(spec.location))
    problems = _problems(warehouse, spec, location)
    if not repair or not problems:
        return FsckReport(spec.full_name, tuple(problems))
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    # what is missing first: a forgotten compacted base may make its input deltas current
    # again, and they must not be taken for strays
    done = [_repair(warehouse, spec, location, p, stamp) for p in problems if p.kind == MISSING]
    rest = _problems(warehouse, spec, location) if done else problems
    done += [_repair(warehouse, spec, location, p, stamp) for p in rest if p.kind != MISSING]
    return FsckReport(
        spec.full_name, tuple(problems), tuple(done), tuple(_problems(warehouse, spec, location))
    )


def fsck_findings(warehouse: TableWarehouse, name: str) -> list[Finding]:
    """:func:`fsck_table` as the one :class:`~.verify.Finding` of :data:`FILE_CHECK`."""
    report = fsck_table(warehouse, name)
    shown = [f"{p.kind}: {p.path}" for p in report.problems[:20]]
    return [
        Finding(
            FILE_CHECK,
            report.ok,
            "every file a read lists is the one its commit recorded"
            if report.ok
            else f"{len(report.problems)} file(s) differ from their record: "
            + "; ".join(shown)
            + " (repair: acid fsck --repair)",
            {"problems": len(report.problems)},
        )
    ]


def _problems(warehouse: TableWarehouse, spec: TableSpec, location: Location) -> list[FileProblem]:
    fs = location.filesystem
    if fs.get_file_info(location.path).type == pafs.FileType.NotFound:
        return [FileProblem(MISSING, location.path, "the table directory is missing")]
    with read_snapshot(warehouse, [spec]) as snapshots:
        snapshot: Snapshot = snapshots[spec.full_name]
        record = snapshot.files or TableRecord({})
        listed = dict(list_partition_dirs(location.path, list(spec.partition_column_names), fs))
        for part in record.partitions:
            listed.setdefault(part, join(location.path, part) if part else location.path)
        record.load(listed)  # every partition's record, in one query
        out: list[FileProblem] = []
        for part, path in sorted(listed.items()):
            recorded = record.partition(part)
            if recorded is not None:
                out += record_problems(
                    path,
                    snapshot.write_ids,
                    snapshot.valid_txns,
                    recorded,
                    filesystem=fs,
                    insert_only=spec.is_insert_only,
                )
    return out


def _repair(
    warehouse: TableWarehouse, spec: TableSpec, location: Location, problem: FileProblem, stamp: str
) -> str:
    fs, root = location.filesystem, location.path.rstrip("/")
    rel = problem.path[len(root) + 1 :] if problem.path.startswith(root + "/") else ""
    if not rel:
        return f"{problem.path}: left as it is (the table directory itself; drop the table)"
    partition, directory, file = _split(spec, rel)
    if problem.kind != MISSING:
        target = join(root, QUARANTINE, stamp, rel)
        fs.create_dir(parent(target), recursive=True)
        fs.move(problem.path, target)
        action = f"moved to {target}"
    else:
        action = "forgot its record (the loss is acknowledged)"
    warehouse.metastore.forget_recorded(spec.db, spec.name, partition, [directory], file)
    return f"{problem.path}: {action}"


def _split(spec: TableSpec, rel: str) -> tuple[str, str, str | None]:
    """``(partition, directory, file or None)`` of a path relative to the table directory."""
    parts = rel.split("/")
    depth = len(spec.partition_column_names)
    partition = "/".join(parts[:depth])
    rest = parts[depth:]
    return partition, rest[0], (rest[1] if len(rest) > 1 else None)


__all__ = ["FILE_CHECK", "QUARANTINE", "FsckReport", "fsck_findings", "fsck_table"]
