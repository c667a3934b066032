"""Load landing files into an ACID table, each exactly once.

:func:`load_files` reads the files not yet committed into the table, fits them to it, and
INSERTs all their rows in ONE statement (one transaction, one delta) with each file's identity
recorded as a source of that transaction (:meth:`~acid_platform.table.Table.insert` with
``sources``). The identities become durable exactly when the rows do, so:

* a re-run (the same files, unchanged) finds them committed and loads nothing;
* a file that does not parse, or does not fit the table, fails the load before any
  transaction opens: nothing is written, nothing recorded;
* of two loads of the same file at once, one commits its rows; the other's commit finds the
  file committed and is aborted (nothing it wrote is visible), and it loads the files still
  missing, if any (up to ``attempts`` times).

>>> # result = load_files(wh, "sales.returns", ["/landing/2024-01-01.csv"])
>>> # result.rows, result.txn_id, [s.key for s in result.skipped]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from acid_platform.compaction.hooks import checkpoint
from acid_platform.errors import DuplicateSourceError, SchemaMismatchError
from acid_platform.metastore.model import CommittedSource
from acid_platform.streaming.landing.landing import LandingFile, stat_landing
from acid_platform.streaming.landing.readers import FileFormat, check_columns, read_landing
from acid_platform.table import Table, TableWarehouse
from acid_platform.table.schema import conform
from acid_platform.table.statement import StatementMetrics


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_files` did: the files it loaded (in one statement, ``metrics``) and
    those it skipped because they were committed into the table already."""

    table: str
    loaded: tuple[LandingFile, ...]
    skipped: tuple[CommittedSource, ...]
    metrics: StatementMetrics | None

    @property
    def rows(self) -> int:
        """Rows inserted (0 when nothing was loaded)."""
        return self.metrics.rows_inserted if self.metrics else 0

    @property
    def txn_id(self) -> int | None:
        """The transaction that loaded the files, or — when all were skipped — the one that
        had (the first's)."""
        if self.metrics is not None:
            return self.metrics.txn_id
        return self.skipped[0].txn_id if self.skipped else None

    @property
    def write_id(self) -> int | None:
        """The write id the rows were written with (as :attr:`txn_id`)."""
        if self.metrics is not None:
            return self.metrics.write_id
        return self.skipped[0].write_id if self.skipped else None

    @property
    def is_noop(self) -> bool:
        """Nothing was loaded: every file was committed already."""
        return not self.loaded

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "table": self.table,
            "skipped": self.is_noop,
            "rows": self.rows,
            "txn_id": self.txn_id,
            "write_id": self.write_id,
            "loaded": [f.uri for f in self.loaded],
            "already_committed": [
                {"source": s.key, "txn_id": s.txn_id, "write_id": s.write_id} for s in self.skipped
            ],
            "dirs_written": list(self.metrics.dirs_written) if self.metrics else [],
        }


def load_files(
    warehouse: TableWarehouse,
    table: str,
    files: Sequence[str | os.PathLike[str] | LandingFile],
    *,
    fmt: FileFormat | str | None = None,
    attempts: int = 3,
) -> LoadResult:
    """Load ``files`` (URIs or paths, looked at now, or :class:`LandingFile` identities) into
    ``table`` exactly once (see module docs). ``fmt``: the files' format, else each file's
    suffix says. Raises :class:`~acid_platform.errors.LandingFileError` (missing, unreadable or
    unparseable file) or :class:`~acid_platform.errors.SchemaMismatchError` with nothing
    written."""
    target = warehouse.table(table)
    pending = [f if isinstance(f, LandingFile) else stat_landing(f) for f in files]
    pending = list({f.key: f for f in pending}.values())  # the same file named twice: once
    skipped: list[CommittedSource] = []
    rows: dict[str, pa.Table] = {}
    for attempt in range(max(attempts, 1)):
        done = {s.key: s for s in target.committed_sources([f.key for f in pending])}
        skipped += [done[f.key] for f in pending if f.key in done]
        pending = [f for f in pending if f.key not in done]
        if not pending:
            return LoadResult(target.name, (), tuple(skipped), None)
        for f in pending:
            if f.key not in rows:
                rows[f.key] = fitted(target, f, fmt)
        checkpoint("ingest.files_read")
        data = pa.concat_tables([rows[f.key] for f in pending])
        try:
            metrics = target.insert(data, sources=[f.source for f in pending])
        except DuplicateSourceError:
            # A concurrent load committed some of the files first: this transaction is aborted
            # (nothing visible); load what is still missing.
            if warehouse.in_transaction or attempt + 1 >= attempts:
                raise
            continue
        return LoadResult(target.name, tuple(pending), tuple(skipped), metrics)
    raise AssertionError("unreachable")  # pragma: no cover


def ensure_table(
    warehouse: TableWarehouse,
    table: str,
    columns: Mapping[str, str],
    partition_columns: Mapping[str, str] | None = None,
) -> Table:
    """``table``, created with ``columns`` and ``partition_columns`` (name: Hive type) — and
    its database — if it does not exist (concurrent creators create it once)."""
    if not warehouse.table_exists(table):
        db = table.rpartition(".")[0]
        if db and not warehouse.database_exists(db):
            warehouse.create_database(db, if_not_exists=True)
        warehouse.create_table(
            table,
            list(columns.items()),
            partition_columns=list((partition_columns or {}).items()),
            if_not_exists=True,
        )
    return warehouse.table(table)


def fitted(table: Table, file: LandingFile, fmt: FileFormat | str | None) -> pa.Table:
    """The rows of ``file`` in ``table``'s schema (see :mod:`.readers`)."""
    schema = table.schema
    data = read_landing(file, schema, fmt)
    check_columns(file, table.name, data, schema)
    try:
        return conform(table.name, data, schema, fill_missing=False)
    except SchemaMismatchError as exc:
        raise type(exc)(
            f"landing file {file.uri} does not fit table {table.name}: {exc}; nothing was written"
        ) from exc


__all__ = ["LoadResult", "ensure_table", "fitted", "load_files"]
