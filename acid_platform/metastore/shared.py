"""One metastore client per process, URL and time-out, for code that runs where no caller hands
it one — Spark's Python workers (reused between tasks) and Mutation API coordinators on a
worker — so each task does not open a connection pool of its own. The clients are closed (their
pools disposed) when the process exits, or by :func:`close_shared_metastores`."""

from __future__ import annotations

import atexit
import threading

from acid_platform.metastore.metastore import Metastore

_lock = threading.Lock()
_clients: dict[tuple[str, float], Metastore] = {}


def shared_metastore(url: str, txn_timeout_s: float) -> Metastore:
    """This process's client of ``url`` (opened on first use; closed at exit)."""
    key = (url, float(txn_timeout_s))
    with _lock:
        client = _clients.get(key)
        if client is None:
            if not _clients:
                atexit.register(close_shared_metastores)
            client = _clients[key] = Metastore(url, txn_timeout_s=txn_timeout_s)
        return client


def close_shared_metastores() -> None:
    """Close every shared client (the next :func:`shared_metastore` opens a new one)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
        atexit.unregister(close_shared_metastores)
    for client in clients:
        client.close()


__all__ = ["close_shared_metastores", "shared_metastore"]
