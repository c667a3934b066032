"""Taking a read snapshot outside any transaction, registered with the cleaner as a reader lease.

The lease goes first, on a snapshot no newer than the one read with: between the two calls the
cleaner may run, and only a registered lease holds it back. :class:`~.statement.ReadLease`
(scans of the table API, SQL) and the Spark reader take their snapshots here; each keeps its
lease alive its own way (a heartbeat thread; Spark tasks) and closes it when done.
"""

from __future__ import annotations

from collections.abc import Sequence

from acid_platform.format import Snapshot
from acid_platform.metastore import Metastore
from acid_platform.metastore.model import TableSpec


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


__all__ = ["take_snapshot"]
