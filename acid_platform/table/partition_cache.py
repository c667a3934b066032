"""The partitions a warehouse session knows exist (:class:`KnownPartitions`): a write
registers a partition in the catalog only when it is new, asking the metastore only about the
partitions it writes into that the session has not seen yet — never for the table's whole
partition list (a one-partition INSERT into a table of 100,000 partitions asks about one)."""

from __future__ import annotations

from collections.abc import Sequence

from acid_platform.metastore import Metastore, TableSpec


class KnownPartitions:
    """The partitions a warehouse session knows exist, per table (saves catalog lookups)."""

    def __init__(self, metastore: Metastore) -> None:
        self._metastore = metastore
        self._known: dict[str, set[str]] = {}

    def unknown(self, spec: TableSpec, names: Sequence[str]) -> list[str]:
        """Those of partition ``names`` of ``spec`` not registered, as far as the session
        knows: the names it has not seen yet are looked up (one query per 500), and those
        found remembered."""
        known = self._known.setdefault(spec.full_name, set())
        asked = [name for name in dict.fromkeys(names) if name and name not in known]
        if not asked:
            return []
        known.update(self._metastore.existing_partitions(spec.db, spec.name, asked))
        return [name for name in asked if name not in known]

    def add(self, spec: TableSpec, names: Sequence[str]) -> None:
        """Remember ``names`` as registered partitions of ``spec``."""
        self._known.setdefault(spec.full_name, set()).update(names)

    def forget(self, table: str, partitions: Sequence[str] | None = None) -> None:
        """Drop what is known of ``table`` (``db.table``), e.g. after DROP TABLE; or only of
        its ``partitions`` (a rolled-back write unregistered them)."""
        if partitions is None:
            self._known.pop(table, None)
            return
        self._known.get(table, set()).difference_update(partitions)


__all__ = ["KnownPartitions"]
