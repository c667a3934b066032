"""Metastore time: every time the metastore stores or compares comes from the database.

Transaction starts and heartbeats, lock heartbeats, time-outs, reader leases and the
compaction queue's times are all compared across clients, so they must come from one clock.
As Hive's TxnHandler does (``getDbTime``), the metastore takes them from the database server
(PostgreSQL/MySQL: the server's clock; SQLite: the one host's clock, read by SQLite itself),
never from a client's own wall clock: a client 600 s behind would otherwise open reader leases
that are already expired, or heartbeat transactions the reaper thinks dead.

:class:`DatabaseClock` asks the server once, then carries that time forward on this process's
monotonic clock (which no wall-clock change moves) and asks again every ``resync_s``, so a
unit of work costs no extra round trip. :class:`InjectedClock` replaces the database's clock
(tests move time with it; every client of one database must then share it).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.engine import Connection

from acid_platform.errors import InvalidSettingError

#: Hive's transaction time-out setting (seconds unless it carries a unit).
TXN_TIMEOUT = "hive.txn.timeout"

_NOW_MS_SQL = {
    "postgresql": "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    "mysql": "SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
    "mariadb": "SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
    "sqlite": "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
}


class TimeSource(Protocol):
    """Where the metastore's "now" (epoch milliseconds) comes from, inside a unit of work."""

    def now_ms(self, conn: Connection) -> int: ...


class DatabaseClock:
    """The database server's clock (see the module docs)."""

    def __init__(self, dialect: str, resync_s: float = 10.0) -> None:
        try:
            self._sql = text(_NOW_MS_SQL[dialect])
        except KeyError:
            raise ValueError(f"no server clock known for database {dialect!r}") from None
        self.resync_s = resync_s
        self._lock = threading.Lock()
        self._synced: tuple[int, float] | None = None  # (server ms, local monotonic s)

    def now_ms(self, conn: Connection) -> int:
        with self._lock:
            synced = self._synced
        mono = time.monotonic()
        if synced is None or mono - synced[1] >= self.resync_s:
            server_ms = int(conn.execute(self._sql).scalar_one())
            mono = time.monotonic()
            synced = (server_ms, mono)
            with self._lock:
                self._synced = synced
        return synced[0] + int((mono - synced[1]) * 1000)


class InjectedClock:
    """A clock given by the caller (seconds since the epoch), replacing the database's."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock

    def now_ms(self, conn: Connection) -> int:
        return int(self.clock() * 1000)


def time_source(dialect: str, clock: Callable[[], float] | TimeSource | None) -> TimeSource:
    """The database's clock, or the one injected (a callable or a :class:`TimeSource`)."""
    if clock is None:
        return DatabaseClock(dialect)
    if hasattr(clock, "now_ms"):
        return clock  # type: ignore[return-value]
    return InjectedClock(clock)  # type: ignore[arg-type]


# Hive's time values carry a unit ("86400s", "7d"); a bare number is in ``default_unit``.
_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86_400.0}


def parse_duration_s(key: str, value: str, default_unit: str = "s") -> float:
    """A Hive time setting in seconds (``300``, ``300s``, ``5m``, ``1d``, ``500ms``);
    :class:`~acid_platform.errors.InvalidSettingError` (a ``ValueError``) naming ``key`` if it
    is not one or is negative."""
    raw = str(value).strip().lower()
    match = re.fullmatch(r"([0-9.eE+-]+)\s*([a-z]*)", raw)
    try:
        if match is None:
            raise ValueError(raw)
        seconds = float(match.group(1)) * _UNITS[match.group(2) or default_unit]
    except (ValueError, KeyError):
        raise InvalidSettingError(
            f"{key}={value!r} is not a valid time value (e.g. 300s, 5m)"
        ) from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise InvalidSettingError(f"{key}={value!r} must not be negative")
    return seconds
