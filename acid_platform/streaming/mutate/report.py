"""What a coordinator tells the client: the files it wrote and what they change.

A :class:`MutationReport` travels from a worker back to the client (pickled, or as JSON from a
Spark task). The client records the write components and creates the partitions it lists before
committing (unless the coordinator did so itself, ``recorded``), and refuses to commit files of
the transaction that no report names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from acid_platform.table.event_layout import FileInfo


@dataclass(frozen=True)
class MutationReport:
    """One coordinator's work on one table."""

    table: str
    txn_id: int
    write_id: int
    files: tuple[FileInfo, ...] = ()
    #: (partition name, operation) pairs written; ``""`` names an unpartitioned table.
    components: tuple[tuple[str, str], ...] = ()
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    groups: int = 0
    #: Whether the coordinator recorded the components in the metastore itself (dynamic
    #: partition creation).
    recorded: bool = False
    #: Who wrote: ``host:pid`` of the coordinator's process.
    writer: str = ""

    @property
    def partitions(self) -> list[str]:
        """The partitions written, sorted."""
        return sorted({p for p, _ in self.components})

    def to_json(self) -> str:
        """The report as JSON text (:meth:`from_json` reads it back)."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> MutationReport:
        """The report :meth:`to_json` wrote."""
        raw = json.loads(text)
        return cls(
            table=raw["table"],
            txn_id=int(raw["txn_id"]),
            write_id=int(raw["write_id"]),
            files=tuple(FileInfo(**f) for f in raw["files"]),
            components=tuple((str(p), str(op)) for p, op in raw["components"]),
            rows_inserted=int(raw["rows_inserted"]),
            rows_updated=int(raw["rows_updated"]),
            rows_deleted=int(raw["rows_deleted"]),
            groups=int(raw["groups"]),
            recorded=bool(raw["recorded"]),
            writer=str(raw.get("writer", "")),
        )


def merge_reports(reports: Iterable[MutationReport]) -> dict[str, list[MutationReport]]:
    """Reports by table name, in the order given."""
    out: dict[str, list[MutationReport]] = {}
    for report in reports:
        out.setdefault(report.table, []).append(report)
    return out


def total(reports: Sequence[MutationReport], field: str) -> int:
    """The sum of one count (``rows_inserted``, …) over ``reports``."""
    return sum(int(getattr(r, field)) for r in reports)


__all__ = ["MutationReport", "merge_reports", "total"]
