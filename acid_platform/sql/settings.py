"""Which ``SET`` keys mean something here, and what ``SET`` says about the others.

* a key this project reads (:data:`IMPLEMENTED`: ``hive.txn.timeout``, the compactor's keys,
  ``hive.transactional.events.mem``, ``hive.merge.cardinality.check``, ``hive.txn.xlock.*``,
  the ``acid.*`` keys …) takes effect silently;
* a Hive key that has no effect here (:data:`NO_EFFECT`: the lock manager's keys, execution
  engine and dynamic-partition switches …) is accepted with a one-line note naming it, as is a
  key of the maintenance services (``hive.compactor.initiator.on``, ``….worker.threads`` …),
  which they read from their own settings (``acid services --conf``), not from a SQL session;
* any other ``hive.*`` key is kept too, with a warning naming the nearest known key (a typo
  such as ``hive.txn.timout`` would otherwise be ignored without a word).

>>> setting_notes("hive.txn.timeout")
()
>>> setting_notes("hive.support.concurrency")
('hive.support.concurrency has no effect here: acid_platform always runs with transactions and its own lock manager',)
>>> setting_notes("hive.txn.timout")
('warning: hive.txn.timout is not a setting known here; did you mean hive.txn.timeout?',)
"""

from __future__ import annotations

import difflib

from acid_platform.compaction.config import COMPACTOR_KEYS, SERVICE_KEYS
from acid_platform.format.delete_merge import DELETE_EVENTS_CAP_KEY
from acid_platform.metastore.clock import TXN_TIMEOUT
from acid_platform.table.warehouse import DEFAULT_CONF

#: Keys that change what this project does.
IMPLEMENTED: frozenset[str] = frozenset(
    {TXN_TIMEOUT, DELETE_EVENTS_CAP_KEY, *COMPACTOR_KEYS, *DEFAULT_CONF}
)

#: Keys the maintenance services read from their own settings, not from a session.
SERVICE_ONLY: frozenset[str] = frozenset(SERVICE_KEYS) - IMPLEMENTED
_SERVICES = "the maintenance services read it from their own settings (acid services --conf)"
_LOCKS = "acid_platform always runs with transactions and its own lock manager"
_ENGINE = "statements run on this project's own engine"
_DYNAMIC = "dynamic partitions are always allowed (nonstrict)"
#: Hive keys accepted without effect, each with the reason given in the note.
NO_EFFECT: dict[str, str] = {
    "hive.support.concurrency": _LOCKS,
    "hive.txn.manager": _LOCKS,
    "hive.lock.manager": _LOCKS,
    "hive.txn.strict.locking.mode": _LOCKS,
    "hive.lock.numretries": _LOCKS,
    "hive.lock.sleep.between.retries": _LOCKS,
    "hive.txn.heartbeat.threadpool.size": _LOCKS,
    "hive.exec.dynamic.partition": _DYNAMIC,
    "hive.exec.dynamic.partition.mode": _DYNAMIC,
    "hive.exec.max.dynamic.partitions": _DYNAMIC,
    "hive.exec.max.dynamic.partitions.pernode": _DYNAMIC,
    "hive.enforce.bucketing": "bucketing is always enforced",
    "hive.enforce.sorting": "sorted bucketing is not used",
    "hive.execution.engine": _ENGINE,
    "hive.vectorized.execution.enabled": _ENGINE,
    "hive.exec.parallel": _ENGINE,
    "hive.auto.convert.join": _ENGINE,
    "hive.optimize.sort.dynamic.partition": _ENGINE,
    "hive.fetch.task.conversion": _ENGINE,
    "hive.compute.query.using.stats": _ENGINE,
    "hive.stats.autogather": "no table statistics are gathered",
    "hive.mapred.mode": _ENGINE,
    "hive.strict.checks.cartesian.product": _ENGINE,
    "hive.acid.direct.insert.enabled": "writes always go straight to their delta directory",
    "hive.cli.print.header": "headers are always printed",
}


def setting_notes(key: str) -> tuple[str, ...]:
    """What ``SET key=…`` (a hiveconf key) tells the user: nothing for a key this project
    reads or a key outside ``hive.*``, a note for a Hive key without effect here, a warning
    with the nearest known key for any other ``hive.*`` key."""
    if key in IMPLEMENTED or not key.startswith("hive."):
        return ()
    reason = _SERVICES if key in SERVICE_ONLY else NO_EFFECT.get(key)
    if reason is not None:
        return (f"{key} has no effect here: {reason}",)
    near = difflib.get_close_matches(
        key, sorted(IMPLEMENTED | SERVICE_ONLY | NO_EFFECT.keys()), n=1
    )
    hint = f"; did you mean {near[0]}?" if near else ""
    return (f"warning: {key} is not a setting known here{hint}",)


__all__ = ["IMPLEMENTED", "NO_EFFECT", "SERVICE_ONLY", "setting_notes"]
