"""Taking a read snapshot outside any transaction, registered with the cleaner as a reader lease.

The lease goes first, on a snapshot no newer than the one read with: between the two calls the
cleaner may run, and only a registered lease holds it back. :class:`ReadLease` (scans of the
table API, SQL, the Dagster readers) and the Spark reader take their snapshots here; each keeps
its lease alive its own way (a heartbeat thread; Spark tasks) and closes it when done.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from acid_platform.format import Snapshot
from acid_platform.metastore import Metastore
from acid_platform.metastore.model import TableSpec
from acid_platform.table.transaction import Heartbeat, conf_bool


class LeaseHost(Protocol):
    """What a reader lease needs of the warehouse session that takes it (a ``TableWarehouse``
    is one)."""

    @property
    def metastore(self) -> Metastore: ...

    @property
    def conf(self) -> Mapping[str, str]: ...


def take_snapshot(
    metastore: Metastore, specs: Sequence[TableSpec], *, lease: bool, agent: str = "scan"
) -> tuple[dict[str, Snapshot], int | None]:
    """One snapshot of ``specs`` (table name -> :class:`Snapshot`) and, with ``lease``, the id of
    the reader lease registered for it (``agent`` names the reader in ``SHOW`` output)."""
    lease_id = None
    if lease:
        names = ", ".join(s.full_name for s in specs)
        lease_id = metastore.open_read_lease(
            metastore.valid_txns(), agent_info=f"{agent} {names}"[:128]
        )
    valid_txns = metastore.valid_txns()
    snapshots = {
        s.full_name: Snapshot(
            valid_txns,
            metastore.valid_write_ids(None, s.db, s.name, valid_txns=valid_txns),
            metastore.recorded_files(s.db, s.name),
        )
        for s in specs
    }
    return snapshots, lease_id


class ReadLease:
    """A snapshot outside any transaction, held as a reader lease until closed.

    The snapshot is taken by :func:`take_snapshot` (lease first), and the lease heartbeated
    while open. Use :func:`~.statement.read_snapshot`, or this class directly where the lease
    must outlive a ``with`` block (a lazy scan).
    """

    def __init__(self, warehouse: LeaseHost, specs: Sequence[TableSpec]) -> None:
        ms = warehouse.metastore
        self._metastore = ms
        self._beat: Heartbeat | None = None
        self.snapshots, self._lease = take_snapshot(ms, specs, lease=lease_enabled(warehouse))
        if self._lease is not None:
            lease_id = self._lease
            self._beat = Heartbeat(lambda: ms.heartbeat_read_lease(lease_id), ms.txn_timeout_s / 2)
            self._beat.start()

    def close(self) -> None:
        """Release the lease (idempotent)."""
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
        if self._lease is not None:
            lease, self._lease = self._lease, None
            self._metastore.close_read_lease(lease)

    def __enter__(self) -> dict[str, Snapshot]:
        return self.snapshots

    def __exit__(self, *exc: object) -> None:
        self.close()


def lease_enabled(warehouse: LeaseHost) -> bool:
    """Whether scans register reader leases (``acid.scan.read.lease``; never on a read-only
    metastore, where no cleaner can run through this warehouse)."""
    return conf_bool(warehouse.conf, "acid.scan.read.lease") and not warehouse.metastore.read_only


__all__ = ["LeaseHost", "ReadLease", "lease_enabled", "take_snapshot"]
