"""The catalog half of :class:`~acid_platform.metastore.Metastore`: databases, tables and
partitions (see :mod:`.catalog`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from acid_platform.metastore import catalog
from acid_platform.metastore.compaction_api import MetastorePlumbing
from acid_platform.metastore.model import Database, TableSpec


class CatalogApi(MetastorePlumbing):
    """Databases, tables and partitions, on :class:`~acid_platform.metastore.Metastore`."""

    def create_database(
        self, name: str, location: str | None = None, if_not_exists: bool = False
    ) -> None:
        """Create a database (:class:`AlreadyExistsError` unless ``if_not_exists``)."""
        self._write(lambda c, now: catalog.create_database(c, now, name, location, if_not_exists))

    def get_database(self, name: str) -> Database:
        return self._read(catalog.get_database, name)  # type: ignore[no-any-return]

    def drop_database(self, name: str, *, if_exists: bool = False, cascade: bool = False) -> None:
        """Drop a database; it must be empty unless ``cascade`` (then its tables go too)."""
        self._write(lambda c, now: catalog.drop_database(c, name, if_exists, cascade))

    def list_databases(self) -> list[str]:
        return self._read(catalog.list_databases)  # type: ignore[no-any-return]

    def create_table(self, spec: TableSpec, if_not_exists: bool = False) -> None:
        """Create a table (its first write id will be 1)."""
        if not isinstance(spec, TableSpec):
            raise TypeError(f"create_table takes a TableSpec, not {type(spec).__name__}")
        self._write(lambda c, now: catalog.create_table(c, now, spec, if_not_exists))

    def get_table(self, db: str, table: str) -> TableSpec:
        """The table's spec (:class:`NoSuchObjectError` if absent)."""
        return self._read(catalog.get_table, db, table)  # type: ignore[no-any-return]

    def alter_table_properties(
        self,
        db: str,
        table: str,
        set: Mapping[str, str] | None = None,  # noqa: A002
        unset: Iterable[str] = (),
    ) -> TableSpec:
        """Set/unset table properties (e.g. ``no_auto_compaction``); returns the new spec."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: catalog.alter_table_properties(c, db, table, set or {}, list(unset))
        )

    def set_table_location(self, db: str, table: str, location: str) -> TableSpec:
        """Change the table's location (metadata only, as Hive); returns the new spec."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: catalog.set_table_location(c, db, table, location)
        )

    def drop_table(self, db: str, table: str, *, if_exists: bool = False) -> None:
        """Drop a table and all its txn, write id and compaction metadata."""
        self._write(lambda c, now: catalog.drop_table(c, db, table, if_exists))

    def list_tables(self, db: str) -> list[str]:
        return self._read(catalog.list_tables, db)  # type: ignore[no-any-return]

    def add_partition(
        self, db: str, table: str, partition_name: str, *, if_not_exists: bool = False
    ) -> bool:
        """Register a partition by Hive's escaped name ``k1=v1/k2=v2``; False if it existed
        (with ``if_not_exists``)."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: catalog.add_partition(c, now, db, table, partition_name, if_not_exists)
        )

    def add_partitions(self, db: str, table: str, partition_names: Sequence[str]) -> list[str]:
        """Register those of ``partition_names`` that are new, in one metastore transaction
        (one existence query per 500 names, one multi-row INSERT); returns those registered."""
        names = list(partition_names)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: catalog.add_partitions(c, now, db, table, names)
        )

    def existing_partitions(self, db: str, table: str, partition_names: Sequence[str]) -> list[str]:
        """Those of ``partition_names`` that are registered (one query per 500 names)."""
        names = list(partition_names)
        return self._read(catalog.existing_partitions, db, table, names)  # type: ignore[no-any-return]

    def drop_partition(
        self, db: str, table: str, partition_name: str, *, if_exists: bool = False
    ) -> None:
        self._write(lambda c, now: catalog.drop_partition(c, db, table, partition_name, if_exists))

    def drop_partitions_left_by(
        self, txn_id: int, db: str, table: str, partition_names: Sequence[str]
    ) -> list[str]:
        """Once ``txn_id`` aborted, unregister the partitions it registered that nothing else
        wrote into (a rolled-back INSERT leaves no partition behind); returns those dropped."""
        names = list(partition_names)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: catalog.drop_partitions_left_by(c, txn_id, db, table, names)
        )

    def list_partitions(self, db: str, table: str) -> list[str]:
        return self._read(catalog.list_partitions, db, table)  # type: ignore[no-any-return]


__all__ = ["CatalogApi"]
