"""Property test: the lock queue agrees with a pure-Python model of Hive 4's rules."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_platform.metastore import LockComponent, LockType, Metastore
from acid_platform_tests.helpers import reset_store

from .conftest import FakeClock

TYPES = list(LockType)
SCOPES: list[tuple[str, str | None, str | None]] = [
    ("d1", None, None),
    ("d1", "t1", None),
    ("d1", "t1", "p=1"),
    ("d1", "t1", "p=2"),
    ("d1", "t2", None),
    ("d2", "t1", "p=1"),
]


@dataclass(frozen=True)
class Req:
    owner: int  # 0 = no txn, 1..2 = txn number
    comps: tuple[tuple[LockType, int], ...]  # (type, scope index)


Scope = tuple[str, str | None, str | None]


def overlaps(a: Scope, b: Scope) -> bool:
    if a[0] != b[0]:
        return False
    if a[1] is None or b[1] is None:
        return True
    if a[1] != b[1]:
        return False
    return a[2] is None or b[2] is None or a[2] == b[2]


def conflicts(req: LockType, rs: Scope, ex: LockType, es: Scope) -> bool:
    """Hive 4 CheckLockFunction, written independently of the SQL."""
    r, w, x, e = (
        LockType.SHARED_READ,
        LockType.SHARED_WRITE,
        LockType.EXCL_WRITE,
        LockType.EXCLUSIVE,
    )
    if req == r:
        return ex == e and not (es[1] is not None and rs[1] is None)
    if req == e:
        return not (es[1] is None and ex == r and rs[1] is not None)
    if req == w:
        return ex in (x, e)
    return ex != r  # EXCL_WRITE


STRENGTH = {t: i for i, t in enumerate(TYPES)}  # SHARED_READ < SHARED_WRITE < EXCL_WRITE < ...


def covers(held: Scope, want: Scope) -> bool:
    """``held`` is ``want`` or an object containing it."""
    if held[0] != want[0]:
        return False
    if held[1] is None:
        return True
    return held[1] == want[1] and (held[2] is None or held[2] == want[2])


def expected_states(reqs: list[Req]) -> list[str]:
    out: list[str] = []
    for i, req in enumerate(reqs):
        blocked = False
        held = [
            (et, esi)
            for j, earlier in enumerate(reqs[:i])
            if req.owner and earlier.owner == req.owner and out[j] == "acquired"
            for et, esi in earlier.comps
        ]
        for earlier in reqs[:i]:
            if req.owner and earlier.owner == req.owner:
                continue  # locks of one txn never block each other
            for rt, rsi in req.comps:
                if any(
                    STRENGTH[ht] >= STRENGTH[rt] and covers(SCOPES[hsi], SCOPES[rsi])
                    for ht, hsi in held
                ):
                    continue  # the txn already holds it: it never waits for it again
                for et, esi in earlier.comps:
                    if overlaps(SCOPES[rsi], SCOPES[esi]) and conflicts(
                        rt, SCOPES[rsi], et, SCOPES[esi]
                    ):
                        blocked = True
        out.append("waiting" if blocked else "acquired")
    return out


requests = st.lists(
    st.builds(
        Req,
        owner=st.integers(0, 2),
        comps=st.lists(
            st.tuples(st.sampled_from(TYPES), st.integers(0, len(SCOPES) - 1)),
            min_size=1,
            max_size=2,
        ).map(tuple),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(reqs=requests)
def test_lock_states_match_the_model(url: str, reqs: list[Req]) -> None:
    reset_store(url)
    with Metastore(url, clock=FakeClock()) as ms:
        txns = {1: ms.open_txn(), 2: ms.open_txn()}
        got = []
        for req in reqs:
            comps = [LockComponent(t, *SCOPES[s]) for t, s in req.comps]
            got.append(ms.lock(txns.get(req.owner), comps).state.value)
        assert got == expected_states(reqs)
        # checking again changes nothing while no one releases
        rows = {r["Lock ID"].split(".")[0]: r["State"] for r in ms.show_locks()}
        assert [rows[str(i + 1)].lower() for i in range(len(reqs))] == got
