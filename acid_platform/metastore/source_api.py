"""The sources half of :class:`~acid_platform.metastore.Metastore`: record what a transaction
loads, and ask what is committed into a table (see :mod:`.sources`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acid_platform.metastore import sources, txns
from acid_platform.metastore.compaction_api import MetastorePlumbing
from acid_platform.metastore.model import CommittedSource, Source


class SourceApi(MetastorePlumbing):
    """Sources loaded by transactions, committed into their table exactly once."""

    def record_source(self, txn_id: int, db: str, table: str, source: Source) -> None:
        """Record that open txn ``txn_id`` loads ``source`` into ``db.table``: committed into
        the table when the txn commits, forgotten when it aborts. Raises
        :class:`~acid_platform.errors.DuplicateSourceError` when the source is committed into
        the table already (or recorded in the txn already); the commit raises it (and aborts
        the txn) when a concurrent txn committed it first."""
        self.record_sources(txn_id, db, table, [source])

    def record_sources(self, txn_id: int, db: str, table: str, loaded: Sequence[Source]) -> None:
        """:meth:`record_source` of several sources at once (all or none recorded)."""
        for source in loaded:
            if not isinstance(source, Source):
                raise TypeError(f"record_sources takes Sources, not {type(source).__name__}")
        batch = list(loaded)

        def work(c: Any, now: int) -> None:
            txns.require_open(c, txn_id)
            sources.record(c, txn_id, db, table, batch)

        if batch:
            self._write(work)

    def committed_sources(
        self, db: str, table: str, keys: Iterable[str] | None = None
    ) -> list[CommittedSource]:
        """The sources committed into ``db.table`` (only those among ``keys``, if given), in
        commit order."""
        wanted = None if keys is None else list(keys)
        return self._read(sources.committed, db, table, wanted)  # type: ignore[no-any-return]

    def committed_source(self, db: str, table: str, key: str) -> CommittedSource | None:
        """Source ``key`` as committed into ``db.table``, or ``None`` if it is not."""
        found = self.committed_sources(db, table, [key])
        return found[0] if found else None


__all__ = ["SourceApi"]
