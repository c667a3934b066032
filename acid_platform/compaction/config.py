"""Compactor settings: Hive's keys and defaults, and the per-table overrides.

The initiator, worker and cleaner read one :class:`CompactorConf`. It is built from Hive's
configuration keys (``hive.compactor.*``) so a Hive user's settings carry over, plus two keys of
this project (``acid.compactor.*``). Tables may override the delta thresholds with
``compactorthreshold.<hive key>`` properties and opt out of automatic compaction with
``no_auto_compaction=true``, as in Hive.

>>> conf = CompactorConf.from_conf({"hive.compactor.delta.num.threshold": "4"})
>>> conf.delta_num_threshold, conf.delta_pct_threshold
(4, 0.1)
>>> conf.delta_num_threshold_for({"compactorthreshold.hive.compactor.delta.num.threshold": "2"})
2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields

from acid_platform.errors import InvalidSettingError
from acid_platform.metastore.clock import TXN_TIMEOUT, parse_duration_s

DELTA_NUM_THRESHOLD = "hive.compactor.delta.num.threshold"
DELTA_PCT_THRESHOLD = "hive.compactor.delta.pct.threshold"
ABORTED_TXN_THRESHOLD = "hive.compactor.abortedtxn.threshold"
FAILED_COMPACTS_THRESHOLD = "hive.compactor.initiator.failed.compacts.threshold"
FAILED_RETRY_TIME = "hive.compactor.initiator.failed.retry.time"
WORKER_TIMEOUT = "hive.compactor.worker.timeout"
WAIT_TIMEOUT = "hive.compactor.wait.timeout"
LARGE_PARTITION_BYTES = "acid.compactor.large.partition.bytes"
STRIPE_SIZE = "acid.compactor.orc.stripe.size"
#: Warehouse setting and table property (the table's wins): name compaction output as Hive 3
#: did (``base_N``, ``delta_x_y``: no ``_v<T>`` suffix, which Hive 2.3/3.x readers cannot parse),
#: written to a hidden staging directory and renamed at commit. Needs atomic rename (not S3).
HIVE3_COMPATIBLE = "acid.compactor.hive3.compatible"
#: ``WITH OVERWRITE TBLPROPERTIES`` keys (and table properties) overriding a compactor setting
#: for one compaction, and entry keys overriding a table property (Hive's prefixes).
COMPACTOR_PROPERTY_PREFIX = "compactor."
TBLPROPS_PREFIX = "tblprops."
#: Prefix of the table properties that override a threshold for one table (Hive's spelling).
THRESHOLD_PREFIX = "compactorthreshold."
#: Table property that keeps the initiator away from a table (manual compaction still works).
NO_AUTO_COMPACTION = "no_auto_compaction"


@dataclass(frozen=True)
class CompactorConf:
    """Thresholds and limits of the compactor (Hive's defaults).

    ``large_partition_bytes``: partitions whose selected files exceed this many bytes are
    rewritten by the worker's large-partition executor (Spark), when one is configured.
    """

    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    aborted_txn_threshold: int = 1000
    failed_compacts_threshold: int = 2
    failed_retry_time_s: float = 7 * 86_400.0
    worker_timeout_s: float = 86_400.0
    #: How long ``COMPACT … AND WAIT`` waits (Hive 4's ``hive.compactor.wait.timeout``, ms).
    wait_timeout_s: float = 300.0
    large_partition_bytes: int = 1 << 30
    stripe_size: int = 64 * 1024 * 1024
    #: ``acid.compactor.hive3.compatible``: Hive 3 output names, staged and renamed at commit.
    hive3_compatible: bool = False

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None = None) -> CompactorConf:
        """Read Hive's keys (unknown keys are ignored; missing ones keep Hive's default)."""
        conf = conf or {}
        values: dict[str, object] = {}
        for key, name, kind in _KEYS:
            if key in conf:
                values[name] = (
                    _parse_bool(key, conf[key]) if kind is bool else _parse(key, conf[key], kind)
                )
        return cls(**values)  # type: ignore[arg-type]

    def for_compaction(
        self, table_properties: Mapping[str, str], entry_properties: Mapping[str, str]
    ) -> tuple[CompactorConf, dict[str, str]]:
        """The settings and table properties one compaction runs with (Hive's
        ``overrideConfProps`` / ``overrideTblProps``): ``compactor.<key>`` of the table's
        properties, then of the queue entry's (``WITH OVERWRITE TBLPROPERTIES``), override the
        compactor setting ``<key>``; the entry's ``tblprops.<key>`` overrides table property
        ``<key>``. Other keys (``compactor.mapreduce.map.memory.mb`` …) have no effect here.

        >>> conf, props = CompactorConf().for_compaction(
        ...     {"orc.compress": "ZLIB"},
        ...     {"compactor.acid.compactor.orc.stripe.size": "1024", "tblprops.orc.compress": "NONE"},
        ... )
        >>> conf.stripe_size, props["orc.compress"]
        (1024, 'NONE')
        """
        settings: dict[str, str] = {}
        for source in (table_properties, entry_properties):
            for key, value in source.items():
                if key.startswith(COMPACTOR_PROPERTY_PREFIX):
                    settings[key[len(COMPACTOR_PROPERTY_PREFIX) :]] = value
        properties = dict(table_properties)
        for key, value in entry_properties.items():
            if key.startswith(TBLPROPS_PREFIX):
                properties[key[len(TBLPROPS_PREFIX) :]] = value
        known = {k: v for k, v in settings.items() if k in COMPACTOR_KEYS}
        if not known:
            return self, properties
        changed = CompactorConf.from_conf(known)
        values = {name: getattr(changed, name) for key, name, _ in _KEYS if key in known}
        return dataclasses.replace(self, **values), properties  # type: ignore[arg-type]

    def hive3_compatible_for(self, table_properties: Mapping[str, str]) -> bool:
        """``acid.compactor.hive3.compatible``: the table's property, else the warehouse's."""
        for key, value in table_properties.items():
            if key.lower() == HIVE3_COMPATIBLE:
                return _parse_bool(key, value)
        return self.hive3_compatible

    def delta_num_threshold_for(self, table_properties: Mapping[str, str]) -> int:
        """``hive.compactor.delta.num.threshold``, or the table's override."""
        key = THRESHOLD_PREFIX + DELTA_NUM_THRESHOLD
        value = table_properties.get(key)
        return self.delta_num_threshold if value is None else int(_parse(key, value, int))

    def delta_pct_threshold_for(self, table_properties: Mapping[str, str]) -> float:
        """``hive.compactor.delta.pct.threshold``, or the table's override."""
        key = THRESHOLD_PREFIX + DELTA_PCT_THRESHOLD
        value = table_properties.get(key)
        return self.delta_pct_threshold if value is None else float(_parse(key, value, float))


INITIATOR_ON = "hive.compactor.initiator.on"
WORKER_THREADS = "hive.compactor.worker.threads"
CHECK_INTERVAL = "hive.compactor.check.interval"
CLEANER_INTERVAL = "hive.compactor.cleaner.run.interval"
WORKER_SLEEP = "hive.compactor.worker.sleep.time"


@dataclass(frozen=True)
class ServiceConf:
    """How often the maintenance services run (``acid services``, the Dagster maintenance).

    Hive's keys: ``hive.compactor.initiator.on`` (Hive defaults to off in a metastore that is
    not the leader; a service started to maintain the warehouse defaults to on),
    ``hive.compactor.worker.threads`` (1 here), ``hive.compactor.check.interval`` (300 s, the
    initiator's period), ``hive.compactor.cleaner.run.interval`` (5 s),
    ``hive.compactor.worker.sleep.time`` (how long an idle worker waits before looking at the
    queue again; 10.8 s) and ``hive.txn.timeout`` (300 s: the housekeeper aborts transactions
    silent that long and runs every half of it, at most every 60 s).

    >>> ServiceConf.from_conf({"hive.txn.timeout": "2s"}).housekeeping_interval_s
    1.0
    """

    initiator_on: bool = True
    worker_threads: int = 1
    check_interval_s: float = 300.0
    cleaner_interval_s: float = 5.0
    worker_sleep_s: float = 10.8
    txn_timeout_s: float = 300.0

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None = None) -> ServiceConf:
        """Read Hive's keys (unknown keys are ignored; missing ones keep the defaults)."""
        conf = conf or {}
        values: dict[str, object] = {}
        for key, name, kind in _SERVICE_KEYS:
            if key in conf:
                values[name] = (
                    _parse_bool(key, conf[key]) if kind is bool else _parse(key, conf[key], kind)
                )
        made = cls(**values)  # type: ignore[arg-type]
        if made.txn_timeout_s <= 0:
            raise InvalidSettingError(f"{TXN_TIMEOUT}={conf.get(TXN_TIMEOUT)!r} must be positive")
        return made

    @property
    def housekeeping_interval_s(self) -> float:
        """How often the time-out reaper runs: half ``hive.txn.timeout``, at most 60 s."""
        return min(self.txn_timeout_s / 2, 60.0)


def auto_compaction_disabled(table_properties: Mapping[str, str]) -> bool:
    """Whether ``no_auto_compaction`` (any case, as Hive reads it) is ``true``."""
    for key, value in table_properties.items():
        if key.lower() == NO_AUTO_COMPACTION:
            return value.strip().lower() == "true"
    return False


_SECONDS = "seconds"
_MILLIS = (
    "milliseconds"  # a time value whose bare number means milliseconds (Hive's *.run.interval)
)
_KEYS: tuple[tuple[str, str, object], ...] = (
    (DELTA_NUM_THRESHOLD, "delta_num_threshold", int),
    (DELTA_PCT_THRESHOLD, "delta_pct_threshold", float),
    (ABORTED_TXN_THRESHOLD, "aborted_txn_threshold", int),
    (FAILED_COMPACTS_THRESHOLD, "failed_compacts_threshold", int),
    (FAILED_RETRY_TIME, "failed_retry_time_s", _SECONDS),
    (WORKER_TIMEOUT, "worker_timeout_s", _SECONDS),
    (WAIT_TIMEOUT, "wait_timeout_s", _MILLIS),
    (LARGE_PARTITION_BYTES, "large_partition_bytes", int),
    (STRIPE_SIZE, "stripe_size", int),
    (HIVE3_COMPATIBLE, "hive3_compatible", bool),
)
assert {name for _, name, _ in _KEYS} == {f.name for f in fields(CompactorConf)}
_SERVICE_KEYS: tuple[tuple[str, str, object], ...] = (
    (INITIATOR_ON, "initiator_on", bool),
    (WORKER_THREADS, "worker_threads", int),
    (CHECK_INTERVAL, "check_interval_s", _SECONDS),
    (CLEANER_INTERVAL, "cleaner_interval_s", _MILLIS),
    (WORKER_SLEEP, "worker_sleep_s", _MILLIS),
    (TXN_TIMEOUT, "txn_timeout_s", _SECONDS),
)
assert {name for _, name, _ in _SERVICE_KEYS} == {f.name for f in fields(ServiceConf)}
#: The keys :class:`CompactorConf` reads (a warehouse's ``conf``, which ``SET`` changes).
COMPACTOR_KEYS: tuple[str, ...] = tuple(key for key, _, _ in _KEYS)
#: The keys :class:`ServiceConf` reads (the maintenance services' own settings).
SERVICE_KEYS: tuple[str, ...] = tuple(key for key, _, _ in _SERVICE_KEYS)


def _parse(key: str, text: str, kind: object) -> int | float:
    if kind in (_SECONDS, _MILLIS):
        return parse_duration_s(key, text, "s" if kind == _SECONDS else "ms")
    raw = str(text).strip().lower()
    try:
        value: int | float = kind(raw)  # type: ignore[operator]
    except ValueError:
        raise InvalidSettingError(f"{key}={text!r} is not a valid value") from None
    if value < 0:
        raise InvalidSettingError(f"{key}={text!r} must not be negative")
    return value


def _parse_bool(key: str, text: str) -> bool:
    raw = str(text).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidSettingError(f"{key}={text!r} is not true or false")
    return raw == "true"
