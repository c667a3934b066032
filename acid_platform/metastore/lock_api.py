"""The lock half of :class:`~acid_platform.metastore.Metastore`: requests, waits, and expiry
inside the lock check (Hive's ``lock``/``checkLock``/``unlock``).

A request blocked by a txn (or txn-less lock) silent longer than ``hive.txn.timeout`` reaps
what timed out (:meth:`~acid_platform.metastore.Metastore.reap_timed_out`) and tries again,
so a crashed client never holds a table longer than its time-out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from acid_platform.errors import LockTimeoutError
from acid_platform.metastore import locks
from acid_platform.metastore.compaction_api import MetastorePlumbing
from acid_platform.metastore.model import LockComponent, LockResponse, LockState, TxnType

_POLL_START_S, _POLL_MAX_S = 0.002, 0.02


class LockApi(MetastorePlumbing):
    """Lock requests, all or nothing, queued by lock id (see :mod:`.locks`)."""

    @property
    def _timeout_ms(self) -> int:
        return int(self.txn_timeout_s * 1000)

    def reap_timed_out(self, timeout_s: float | None = None) -> list[int]:
        raise NotImplementedError

    def lock(
        self,
        txn_id: int | None,
        components: Sequence[LockComponent],
        wait_s: float = 0.0,
        *,
        user: str | None = None,
        host: str | None = None,
        agent_info: str | None = None,
    ) -> LockResponse:
        """Request locks, all or nothing. ``txn_id=None`` for a lock outside a transaction
        (it must be heartbeated). With ``wait_s > 0``, wait up to that long for the request to
        be acquired, else remove it and raise :class:`LockTimeoutError`.
        """
        comps = list(components)
        response: LockResponse = self._write(
            lambda c, now: locks.enqueue_and_check(
                self._store,
                c,
                now,
                txn_id,
                comps,
                user=user or self._user,
                host=host or self._host,
                agent_info=agent_info,
            )
        )
        if response.state == LockState.ACQUIRED:
            return response
        response = self._unless_blocked_by_dead(response)
        if response.state == LockState.ACQUIRED or wait_s <= 0:
            return response
        return self._wait(response.lock_id, wait_s)

    def open_txn_and_lock(
        self, components: Sequence[LockComponent], *, agent_info: str | None = None
    ) -> tuple[int, LockResponse]:
        """Open a transaction and request ``components``' locks for it (an autocommit
        statement's), as :meth:`~acid_platform.metastore.Metastore.open_txn` then
        :meth:`lock` without waiting do: its id, and the request (acquired, or waiting for
        :meth:`wait_for_lock` while the caller heartbeats the transaction). On SQLite the
        open and the request are one metastore transaction, one durable commit fewer per
        statement; on PostgreSQL the open stays its one ``CALL``. A failure here aborts the
        transaction."""
        comps = list(components)
        store = self._store

        def request(c: Any, now: int, ids: list[int]) -> LockResponse:
            return locks.enqueue_and_check(
                store,
                c,
                now,
                ids[0],
                comps,
                user=self._user,
                host=self._host,
                agent_info=agent_info,
            )

        # PostgreSQL: the open's one CALL, then the request; elsewhere one database transaction
        then = None if store.dialect == "postgresql" else request
        [txn_id], first = self._open(1, TxnType.DEFAULT, agent_info=agent_info, then=then)
        try:
            if first is None:
                return txn_id, self.lock(txn_id, comps, agent_info=agent_info)
            return txn_id, self._unless_blocked_by_dead(first)
        except BaseException:
            self._abort_quietly(txn_id)
            raise

    def _abort_quietly(self, txn_id: int) -> None:
        with contextlib.suppress(Exception):  # else the time-out reaper aborts it
            self.abort_txns([txn_id])

    def _open(
        self,
        n: int,
        kind: TxnType,
        *,
        agent_info: str | None = None,
        then: Callable[[Any, int, list[int]], Any] | None = None,
    ) -> tuple[list[int], Any]:
        raise NotImplementedError

    def abort_txns(self, txn_ids: Iterable[int]) -> None:
        raise NotImplementedError

    def check_lock(self, lock_id: int) -> LockResponse:
        """Try again to acquire a waiting request (a blocker whose txn has timed out is reaped
        first, as Hive's lock check does)."""
        return self._unless_blocked_by_dead(self._check_lock(lock_id))

    def _check_lock(self, lock_id: int) -> LockResponse:
        return self._write(lambda c, now: locks.check_lock(c, now, lock_id))  # type: ignore[no-any-return]

    def _unless_blocked_by_dead(self, response: LockResponse) -> LockResponse:
        """Expiry inside the metastore (Hive's lock check and housekeeper): a request blocked
        by a txn (or txn-less lock) silent longer than ``hive.txn.timeout`` reaps what timed out
        and tries again, so a crashed client never holds a table longer than its time-out."""
        if response.state == LockState.ACQUIRED:
            return response
        if self._probe(response.lock_id) != locks.EXPIRED:
            return response
        self.reap_timed_out()
        return self._check_lock(response.lock_id)

    def _probe(self, lock_id: int) -> str:
        timeout_ms = self._timeout_ms
        return self._read_at(lambda c, now: locks.probe(c, now, lock_id, timeout_ms))  # type: ignore[no-any-return]

    def wait_for_lock(self, lock_id: int, wait_s: float) -> LockResponse:
        """Wait up to ``wait_s`` for a waiting request to be acquired, as :meth:`lock` does
        (then withdraw it and raise :class:`LockTimeoutError`)."""
        response = self.check_lock(lock_id)
        if response.state == LockState.ACQUIRED:
            return response
        return self._wait(lock_id, max(wait_s, 0.001))

    def unlock(self, lock_id: int) -> None:
        """Release a txn-less lock (:class:`TxnOpenError` for a transaction's lock)."""
        self._write(lambda c, now: locks.unlock(c, lock_id))

    def _wait(self, lock_id: int, wait_s: float) -> LockResponse:
        # Poll with a read-only probe (no write lock, no fsync); run the real check when the
        # probe says the request can go, or now and then to heartbeat the waiting request; a
        # blocker whose txn timed out is reaped at once.
        deadline = time.monotonic() + wait_s
        keepalive = min(self.txn_timeout_s / 4, 10.0)
        last_check = time.monotonic()
        pause = _POLL_START_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_MAX_S)
            state = self._probe(lock_id)
            if state == locks.EXPIRED:
                self.reap_timed_out()
            if state != locks.BLOCKED or time.monotonic() - last_check >= keepalive:
                last_check = time.monotonic()
                if self._check_lock(lock_id).state == LockState.ACQUIRED:
                    return LockResponse(lock_id, LockState.ACQUIRED)
        blocker = self._read(locks.blocker_of, lock_id)
        final = self._write(lambda c, now: locks.cancel_if_waiting(c, now, lock_id))
        if final is not None:
            return final  # type: ignore[no-any-return]
        raise LockTimeoutError(
            f"lock {locks.lock_str(lock_id)} not acquired within {wait_s:g}s"
            + (f" (blocked by lock {blocker})" if blocker else "")
            + "; the request was withdrawn. See show_locks() for who holds it."
        )
