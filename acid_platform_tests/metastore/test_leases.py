"""Reader leases: a long read registers its snapshot; a crashed reader's lease expires."""

from __future__ import annotations

import pytest

from acid_platform.errors import NoSuchLockError
from acid_platform.metastore import Metastore

from .conftest import FakeClock


def test_lease_lifecycle(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=100, clock=clock) as ms:
        txn = ms.open_txn()
        snapshot = ms.valid_txns()
        lease = ms.open_read_lease(snapshot, agent_info="spark-job-1")  # ttl = txn timeout
        rows = ms.show_read_leases()
        assert [(r["Lease ID"], r["Valid Txns"], r["Agent Info"]) for r in rows] == [
            (lease, str(snapshot), "spark-job-1")
        ]
        assert rows[0]["Expires At"] == int(clock.now * 1000) + 100_000
        clock.advance(90)
        ms.heartbeat_read_lease(lease)
        clock.advance(90)
        ms.heartbeat_read_lease(lease)  # still alive: heartbeated 90 s ago, ttl 100 s
        ms.close_read_lease(lease)
        ms.close_read_lease(lease)  # closing twice is fine
        with pytest.raises(NoSuchLockError):
            ms.heartbeat_read_lease(lease)
        ms.commit_txn(txn)


def test_expired_lease_is_ignored_and_reaped(url: str, clock: FakeClock) -> None:
    with Metastore(url, clock=clock) as ms:
        lease = ms.open_read_lease(ms.valid_txns(), ttl_s=5)
        clock.advance(6)
        assert ms.show_read_leases() == []
        with pytest.raises(NoSuchLockError, match="expired"):
            ms.heartbeat_read_lease(lease)
        ms.reap_timed_out()
        ms.close_read_lease(lease)


def test_shared_lease_gives_every_caller_the_first_snapshot(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=100, clock=clock) as ms:
        first, snapshot = ms.shared_read_lease("spark scan q1")
        assert snapshot.high_watermark == ms.valid_txns().high_watermark
        ms.commit_txn(ms.open_txn())  # a newer snapshot exists now
        clock.advance(60)
        assert ms.shared_read_lease("spark scan q1") == (first, snapshot)  # and extends it
        clock.advance(60)
        assert ms.shared_read_lease("spark scan q1") == (first, snapshot)
        other, newer = ms.shared_read_lease("spark scan q2")
        assert other != first and newer.high_watermark > snapshot.high_watermark
        assert {r["Agent Info"] for r in ms.show_read_leases()} == {
            "spark scan q1",
            "spark scan q2",
        }
        clock.advance(101)  # expired: the key starts afresh
        again, latest = ms.shared_read_lease("spark scan q1")
        assert again not in (first, other) and latest.high_watermark == newer.high_watermark


def test_lease_input_is_checked(ms: Metastore) -> None:
    with pytest.raises(TypeError):
        ms.open_read_lease("5:9223372036854775807::")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ms.open_read_lease(ms.valid_txns(), ttl_s=0)
