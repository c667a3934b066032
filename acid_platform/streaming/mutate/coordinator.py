"""``MutatorCoordinator``: applies one table's inserts, updates and deletes on a worker.

>>> # table = AcidTable.decode(text)              # the handle the client gave out
>>> # with MutatorCoordinator(table) as coordinator:
>>> #     coordinator.insert(["2024-01-01"], resolver.attach_bucket_id(new_row))
>>> #     coordinator.update(["2024-01-01"], {**changed_row, "row__id": old_row_id})
>>> #     coordinator.delete(["2024-01-01"], {"row__id": row_id})
>>> #     # or a prepared Arrow batch at once: coordinator.mutate(batch)
>>> # report = coordinator.report                 # send it back to the client

Records are mappings of column -> value with the ROW__ID under ``row__id`` (a
:class:`~.validators.RecordIdentifier`, a tuple or the dict a scan ``with_row_id`` returns). For
an insert only the ROW__ID's bucket counts (stamp it with
:class:`~.buckets.BucketIdResolver`; an insert without one is stamped here); a delete needs
nothing but the ROW__ID. ``partition_values`` are the partition column values in order (``[]``
for an unpartitioned table). :meth:`MutatorCoordinator.mutate` takes a whole prepared batch: an
Arrow table with a :data:`MUTATION` column (``insert`` / ``update`` / ``delete``, or ``I`` /
``U`` / ``D``), ``row__id``, the data columns and the partition columns.

Each record is checked before it is accepted (see :mod:`.validators`); one writer
(:class:`~.group_files.GroupFiles`) serves the current (partition, bucket) group and is closed
when the next group starts. Any failure aborts the coordinator: the files it wrote are removed
and it accepts nothing more; the transaction should then be aborted (or the coordinator's whole
input given to a new one). Files go straight to their final place; they stay invisible until the
client commits the transaction.

With the table's ``create_partitions``, the coordinator creates each partition it writes in the
metastore and records what it writes there before writing it; otherwise it only reports them
(:class:`~.report.MutationReport`) and the client does it at commit.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import (
    BucketIdError,
    InvalidPartitionError,
    MutationError,
    SchemaMismatchError,
)
from acid_platform.format import ROW_ID_COLUMN, resolve
from acid_platform.format.bucket_codec import decode_bucket_ids
from acid_platform.format.parallel import run_parallel
from acid_platform.format.utf8 import carries_text, find_invalid_text_value, utf8_error
from acid_platform.metastore import Metastore
from acid_platform.metastore.shared import shared_metastore
from acid_platform.streaming.mutate.batches import (
    MUTATION,
    group_runs,
    mutation_codes,
    row_id_arrays,
)
from acid_platform.streaming.mutate.buckets import BucketIdResolver
from acid_platform.streaming.mutate.group_files import CreatedDirs, GroupFiles
from acid_platform.streaming.mutate.report import MutationReport
from acid_platform.streaming.mutate.table import AcidTable, Mutation
from acid_platform.streaming.mutate.validators import (
    GroupingValidator,
    RecordIdentifier,
    SequenceValidator,
)
from acid_platform.table.event_layout import EventLayout, FileInfo
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.schema import conform, data_schema, to_arrow

#: Records the per-record calls buffer before they are turned into Arrow and written.
PENDING_RECORDS = 4_096
#: Groups whose files are finished together, in parallel, once this many are done with.
FINISH_GROUPS = 8

_BY_CODE = (Mutation.INSERT, Mutation.UPDATE, Mutation.DELETE)


class MutatorCoordinator:
    """Writes one table's mutations for one transaction (see module docs)."""

    def __init__(
        self,
        table: AcidTable,
        *,
        bucket_resolver: BucketIdResolver | None = None,
        filesystem: pafs.FileSystem | None = None,
    ) -> None:
        if table.write_id is None:
            raise MutationError(f"table {table.name} is a source of the transaction, not a sink")
        self.table = table
        self.write_id: int = table.write_id
        spec = table.spec
        self._location = resolve(spec.location, filesystem)
        self._layout = EventLayout.of(spec, self._location.filesystem)
        self._resolver = bucket_resolver or BucketIdResolver(spec)
        self._data_schema = data_schema(spec)
        self._partition_columns = list(spec.partition_column_names)
        self._grouping = GroupingValidator()
        self._sequence = SequenceValidator()
        self._group: GroupFiles | None = None
        #: Groups done with whose files are still to be finished (see ``_finish_groups``).
        self._finishing: list[GroupFiles] = []
        self._pending: list[tuple[Mutation, Mapping[str, Any], RecordIdentifier]] = []
        #: Records given one by one so far (the first pending one's position, for errors).
        self._records = 0
        self._files: list[FileInfo] = []
        self._dirs = CreatedDirs(self._layout)
        self._components: dict[tuple[str, str], None] = {}
        self._partitions_created: set[str] = set()
        self._counts = dict.fromkeys(Mutation, 0)
        self.state = "open"
        self.report: MutationReport | None = None

    # ------------------------------------------------------------------ per record
    def insert(self, partition_values: Sequence[Any], record: Mapping[str, Any]) -> None:
        """Insert ``record`` (its ROW__ID names only the bucket) into the partition."""
        self._record(Mutation.INSERT, partition_values, record)

    def update(self, partition_values: Sequence[Any], record: Mapping[str, Any]) -> None:
        """Replace the row ``record["row__id"]`` names with ``record``'s values."""
        self._record(Mutation.UPDATE, partition_values, record)

    def delete(self, partition_values: Sequence[Any], record: Mapping[str, Any]) -> None:
        """Delete the row ``record["row__id"]`` names (the other values are ignored)."""
        self._record(Mutation.DELETE, partition_values, record)

    def _record(
        self, mutation: Mutation, partition_values: Sequence[Any], record: Mapping[str, Any]
    ) -> None:
        self._check_open()
        try:
            partition = self._partition_name(partition_values)
            raw = record.get(ROW_ID_COLUMN)
            if raw is None and mutation is Mutation.INSERT:
                record = self._resolver.attach_bucket_id(record)
                raw = record[ROW_ID_COLUMN]
            if raw is None:
                raise MutationError(f"table {self.table.name}: a {mutation.value} needs a ROW__ID")
            row_id = RecordIdentifier.of(raw)
            bucket = row_id.bucket
            if mutation is not Mutation.DELETE and self._resolver.bucketed:
                computed = self._resolver.compute_bucket_id(record)
                if computed != bucket:
                    raise self._bucket_error(computed, row_id, partition)
            if self._grouping.enter(partition, bucket):
                self._switch_group(partition, bucket)
            if mutation is not Mutation.INSERT:
                self._sequence.check(row_id)
            self._note(partition, mutation)
            self._pending.append((mutation, record, row_id))
            self._records += 1
            if len(self._pending) >= PENDING_RECORDS:
                self._flush_pending()
        except BaseException:
            self.abort()
            raise

    # ------------------------------------------------------------------ batches
    def mutate(self, changes: Any) -> None:
        """Apply a prepared batch (see module docs): checked run by run, each (partition,
        bucket) run written by its group's writer."""
        self._check_open()
        try:
            self._flush_pending()
            table = to_arrow(changes, "mutation batch")
            if table.num_rows:
                self._mutate(table)
        except BaseException:
            self.abort()
            raise

    def _mutate(self, table: pa.Table) -> None:
        codes = mutation_codes(table)
        owid, bprop, rowid = row_id_arrays(table)
        buckets = decode_bucket_ids(bprop)
        checked = codes != 2
        if self._resolver.bucketed and checked.any():
            computed = self._resolver.compute_bucket_ids(table)
            wrong = np.flatnonzero(checked & (computed != buckets))
            if len(wrong):
                i = int(wrong[0])
                raise self._bucket_error(
                    int(computed[i]),
                    RecordIdentifier(int(owid[i]), int(bprop[i]), int(rowid[i])),
                    "",
                )
        present = {c.lower(): c for c in table.column_names}
        data_cols = [present[c] for c in self._data_schema.names if c in present]
        data = conform(self.table.name, table.select(data_cols), self._data_schema)
        for start, stop, partition, bucket in group_runs(self.table.spec, table, buckets):
            if self._grouping.enter(partition, bucket):
                self._switch_group(partition, bucket)
            run = codes[start:stop]
            keyed = np.flatnonzero(run != 0) + start
            self._sequence.check_run(owid[keyed], bprop[keyed], rowid[keyed])
            for code, mutation in enumerate(_BY_CODE):
                pick = np.flatnonzero(run == code) + start
                if len(pick):
                    self._note(partition, mutation)
                    self._write(mutation, data.take(pick), owid[pick], bprop[pick], rowid[pick])

    # ------------------------------------------------------------------ end
    def close(self) -> MutationReport:
        """Finish every file and return the :class:`MutationReport` for the client."""
        if self.report is not None:
            return self.report
        self._check_open()
        try:
            self._flush_pending()
            self._close_group()
            self._finish_groups()
        except BaseException:
            self.abort()
            raise
        self.state = "closed"
        self.report = MutationReport(
            table=self.table.name,
            txn_id=self.table.txn_id,
            write_id=self.write_id,
            files=tuple(self._files),
            components=tuple(self._components),
            rows_inserted=self._counts[Mutation.INSERT],
            rows_updated=self._counts[Mutation.UPDATE],
            rows_deleted=self._counts[Mutation.DELETE],
            groups=self._grouping.groups,
            recorded=self.table.create_partitions,
            writer=f"{socket.gethostname()}:{os.getpid()}",
        )
        return self.report

    def abort(self) -> None:
        """Remove every file written and accept nothing more (idempotent)."""
        if self.state == "aborted":
            return
        self.state = "aborted"
        self._pending.clear()
        for group in [*self._finishing, *([self._group] if self._group is not None else [])]:
            group.abort()
        self._finishing.clear()
        self._group = None
        fs = self._location.filesystem
        for info in self._files:
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(info.path)
        self._files.clear()

    def __enter__(self) -> MutatorCoordinator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self.state == "open":
            self.close()
        elif self.state == "open":
            self.abort()

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self.state != "open":
            raise MutationError(
                f"coordinator of {self.table.name} (txn {self.table.txn_id}) is {self.state}"
            )

    def _partition_name(self, values: Sequence[Any]) -> str:
        values = list(values or [])
        if len(values) != len(self._partition_columns):
            raise InvalidPartitionError(
                f"table {self.table.name}: {len(values)} partition values {values} for partition "
                f"columns {self._partition_columns}"
            )
        return make_partition_name(self._partition_columns, values) if values else ""

    def _switch_group(self, partition: str, bucket: int) -> None:
        self._flush_pending()
        self._close_group()
        self._sequence.reset()
        self._group = GroupFiles(
            self._layout, self._location.path, partition, bucket, self.write_id, self._dirs
        )

    def _close_group(self) -> None:
        if self._group is not None:
            self._finishing.append(self._group)
            self._group = None
            if len(self._finishing) >= FINISH_GROUPS:
                self._finish_groups()

    def _finish_groups(self) -> None:
        """Finish the files of the groups done with, several at once."""
        tasks = [task for group in self._finishing for task in group.finish()]
        self._files.extend(run_parallel(tasks))
        self._finishing.clear()

    def _note(self, partition: str, mutation: Mutation) -> None:
        """Remember (and with ``create_partitions`` record, before writing) a component."""
        key = (partition, mutation.value)
        if key in self._components:
            return
        if self.table.create_partitions:
            ms = _metastore(self.table)
            spec = self.table.spec
            if partition and partition not in self._partitions_created:
                ms.add_partition(spec.db, spec.name, partition, if_not_exists=True)
                self._partitions_created.add(partition)
            ms.add_write_components(
                self.table.txn_id, spec.db, spec.name, [partition or None], mutation.value
            )
        self._components[key] = None

    def _write(
        self,
        mutation: Mutation,
        rows: pa.Table,
        owid: np.ndarray,
        bprop: np.ndarray,
        rowid: np.ndarray,
    ) -> None:
        group = self._group
        assert group is not None
        statement = mutation.statement
        if mutation is not Mutation.INSERT:
            group.add_deletes(statement, owid, bprop, rowid)
        if mutation is not Mutation.DELETE:
            group.add_rows(statement, rows)
        self._counts[mutation] += len(owid)

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            rows = pa.Table.from_pylist([dict(r) for _, r, _ in pending], schema=self._data_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError) as exc:
            raise self._not_utf8(pending) or SchemaMismatchError(
                f"table {self.table.name}: a record does not fit the table's columns: {exc}"
            ) from exc
        codes = np.array([m.statement for m, _, _ in pending])
        ids = np.array([tuple(i) for _, _, i in pending], dtype=np.int64).reshape(-1, 3)
        bprop = ids[:, 1].astype(np.int32)
        for code, mutation in enumerate(_BY_CODE):
            pick = np.flatnonzero(codes == code)
            if len(pick):
                self._write(mutation, rows.take(pick), ids[pick, 0], bprop[pick], ids[pick, 2])

    def _not_utf8(
        self, pending: list[tuple[Mutation, Mapping[str, Any], RecordIdentifier]]
    ) -> SchemaMismatchError | None:
        """The error naming the first record whose text for a string column is not UTF-8
        (bytes, or a ``str`` with lone surrogates), if any: its position among the records
        this coordinator was given, its ROW__ID and the column."""
        text_columns = [f.name for f in self._data_schema if carries_text(f.type)]
        first = self._records - len(pending)
        for j, (mutation, record, row_id) in enumerate(pending):
            for column in text_columns:
                value = record.get(column)
                found = find_invalid_text_value(value)
                if isinstance(value, bytes | bytearray):
                    try:
                        bytes(value).decode("utf-8")
                    except UnicodeDecodeError:
                        found = ("", bytes(value))
                if found is not None:
                    where = f"table {self.table.name}: {mutation.value} record ROW__ID {row_id}, "
                    return utf8_error(
                        where, column + found[0], first + j, found[1], self.table.name
                    )
        return None

    def _bucket_error(
        self, computed: int, row_id: RecordIdentifier, partition: str
    ) -> BucketIdError:
        where = f" in partition {partition!r}" if partition else ""
        return BucketIdError(
            f"table {self.table.name}: record with ROW__ID {row_id}{where} names bucket "
            f"{row_id.bucket}, but its bucketing columns {list(self.table.spec.bucket_columns)} "
            f"hash to bucket {computed}; stamp inserts with BucketIdResolver and never update a "
            "bucketing column"
        )


def _metastore(table: AcidTable) -> Metastore:
    """This process's shared metastore client of the table's URL (workers create partitions
    through it; closed when the process exits)."""
    return shared_metastore(table.metastore_url, table.txn_timeout_s)


__all__ = ["MUTATION", "PENDING_RECORDS", "MutatorCoordinator"]
