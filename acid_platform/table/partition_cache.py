"""The partitions a warehouse session knows exist (:class:`KnownPartitions`): a write
registers a partition in the catalog only when it is new to the session, without asking the
metastore each time."""

from __future__ import annotations

from collections.abc import Sequence

from acid_platform.metastore import Metastore, TableSpec


class KnownPartitions:
    """The partitions a warehouse session knows exist, per table (saves catalog lookups)."""

    def __init__(self, metastore: Metastore) -> None:
        self._metastore = metastore
        self._known: dict[str, set[str]] = {}

    def of(self, spec: TableSpec) -> set[str]:
        """The known partition names of ``spec`` (loaded from the catalog on first use)."""
        known = self._known.get(spec.full_name)
        if known is None:
            listed = self._metastore.list_partitions(spec.db, spec.name)
            known = self._known[spec.full_name] = set(listed)
        return known

    def forget(self, table: str, partitions: Sequence[str] | None = None) -> None:
        """Drop what is known of ``table`` (``db.table``), e.g. after DROP TABLE; or only of
        its ``partitions`` (a rolled-back write unregistered them)."""
        if partitions is None:
            self._known.pop(table, None)
            return
        self._known.get(table, set()).difference_update(partitions)


__all__ = ["KnownPartitions"]
