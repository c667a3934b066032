"""Options of the ``acid`` Spark data source, and the per-process handles they open.

The data source runs its code in Python processes that Spark starts (a planning worker beside the
driver JVM, Python workers beside each executor), never in the user's driver process. Everything
such a process needs therefore travels as data source options, plain strings: which warehouse,
which metastore, which table and — for reads inside a transaction — which snapshot.
:func:`~acid_platform.engines.spark.register` bakes a warehouse's values in as defaults; options
given to a read or write override them.

=====================  ======================================================================
option                 meaning
=====================  ======================================================================
``path`` / ``table``   the table, ``db.table`` or ``table`` (in ``default``); ``load("db.t")``;
                       or its directory inside the warehouse, ``load("/wh/db.db/t")``
``warehouse``          warehouse root (local path or URI)
``metastore_url``      SQLAlchemy URL of the metastore (default: SQLite in the warehouse)
``txn_timeout_s``      the metastore's ``hive.txn.timeout`` (for heartbeats and leases)
``storage``            an object store's endpoint and credentials (JSON of ``StorageOptions``)
``conf``               session settings as JSON (``hive.txn.xlock.write``, …)
``with_row_id``        ``true``: add Hive's ``row__id`` struct as the first column
``snapshot``           read: pin the table's snapshot, a ValidWriteIdList string
                       (``db.t:7:9223372036854775807::``); repeatable reads, time travel
``as_of_write_id``     read: pin the table as of this write id (the committed writes up to it)
``valid_txns``         read under this ValidTxnList (with ``valid_write_ids``; no new snapshot)
``valid_write_ids``    the table's ValidWriteIdList for that snapshot (same as ``snapshot``)
``query_scope``        read, set by ``register``: with the SQL execution id, names the snapshot
                       the scans of one query share (default: one per planned relation)
``pushdown``           read, internal: ``true`` lets Spark push filters into the reader of a
                       pinned snapshot; only for a relation scanned once, by one query
                       (``SparkEngine``'s statements)
``transaction``        set by the session catalog from the session setting
                       ``spark.acid.transaction``: the shared ``wh.transaction()`` its reads
                       and writes join (:class:`~acid_platform.table.transaction.SharedTransaction`)
``metrics_path``       write: store the committed write's metrics (JSON) at this path
``grouped_by_bucket``  write: ``true`` promises each bucket's rows sit in one Spark partition
``read_changes``       read: ``true`` reads the change feed (``readStream`` needs it)
``starting_write_id``  change feed: read the write ids after this one (default 0: all);
                       ``latest``: from the newest final write id when the stream starts
``ending_write_id``    batch change feed: up to this write id (default: the newest final one)
``key``                change feed: columns (comma-separated) pairing updates
``max_write_ids_per_   streaming change feed: at most this many write ids per micro-batch (a
trigger``              backlog is read in bounded batches; default: everything final)
=====================  ======================================================================
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acid_platform.errors import InvalidChangeRangeError, InvalidNameError, NoSuchObjectError
from acid_platform.format.fs import Location, resolve
from acid_platform.format.storage import StorageBinding, StorageOptions, bind
from acid_platform.metastore import Metastore
from acid_platform.metastore.metastore import METASTORE_FILE
from acid_platform.metastore.model import TableSpec
from acid_platform.metastore.names import split_table_name
from acid_platform.metastore.shared import shared_metastore
from acid_platform.table.transaction import SharedTransaction

if TYPE_CHECKING:
    from acid_platform.table.statement import StatementHost

DEFAULT_TXN_TIMEOUT_S = 300.0
#: The option of a Spark SQL DELETE / UPDATE / MERGE's write (its value: the command; see
#: :mod:`.row_level`).
ROW_LEVEL = "_row_level"
#: The session setting that carries the warehouse's open ``wh.transaction()`` (set by
#: ``SparkEngine.share_transaction``; :file:`jvm/AcidCatalog.java` turns it into the option
#: ``transaction`` of every read and write of the session's acid tables).
TRANSACTION_CONF = "spark.acid.transaction"

_TRUE = ("true", "1", "yes", "on")
_lock = threading.Lock()
_locations: dict[str, Location] = {}


@dataclass(frozen=True)
class SourceOptions:
    """The parsed options of one read or write (see the module table)."""

    warehouse: str
    metastore_url: str
    table: str
    txn_timeout_s: float = DEFAULT_TXN_TIMEOUT_S
    conf: Mapping[str, str] = field(default_factory=dict)
    with_row_id: bool = False
    valid_txns: str | None = None
    valid_write_ids: str | None = None
    as_of_write_id: int | None = None
    pushdown: bool = False
    query_scope: str | None = None
    metrics_path: str | None = None
    #: the shared multi-statement transaction the read or write joins
    transaction: SharedTransaction | None = None
    grouped_by_bucket: bool = False
    read_changes: bool = False
    #: an int as text, or ``latest``
    starting_write_id: str = "0"
    ending_write_id: int | None = None
    key: tuple[str, ...] = ()
    #: streaming change feed: the most write ids one micro-batch reads (``None``: no cap)
    max_write_ids_per_trigger: int | None = None
    #: ``checkpointlocation`` / ``queryname`` as Spark passes them to a streaming sink
    checkpoint_location: str | None = None
    query_name: str | None = None
    #: an object store's options: unpickled in a task's process, they are registered there
    storage: StorageBinding | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], defaults: Mapping[str, str]) -> SourceOptions:
        """Options over defaults (keys case-insensitive, as Spark passes them)."""
        merged = {k.lower(): v for k, v in defaults.items()}
        merged.update({k.lower(): v for k, v in options.items()})
        warehouse = merged.get("warehouse")
        if not warehouse:
            raise InvalidNameError(
                "acid data source: no warehouse; call wh.register_spark(spark) or pass "
                ".option('warehouse', <root>)"
            )
        table = merged.get("table") or merged.get("path")
        if not table:
            raise InvalidNameError(
                "acid data source: no table; use .load('db.table') / .save('db.table') or "
                ".option('table', 'db.table')"
            )
        storage = None
        if "://" in warehouse and merged.get("storage"):  # reach the store as the driver does
            storage = bind(warehouse, StorageOptions.from_json(merged["storage"]))
        url = merged.get("metastore_url") or _sqlite_url(warehouse)
        timeout_s = float(merged.get("txn_timeout_s") or DEFAULT_TXN_TIMEOUT_S)
        if is_path(table):
            table = table_of_path(table, warehouse, open_metastore(url, timeout_s))
        conf = dict(defaults_conf(defaults)) | dict(json.loads(merged.get("conf") or "{}"))
        return cls(
            warehouse=warehouse,
            metastore_url=url,
            table=qualified_name(table),
            txn_timeout_s=timeout_s,
            conf=conf,
            with_row_id=_flag(merged.get("with_row_id")),
            valid_txns=merged.get("valid_txns") or None,
            valid_write_ids=merged.get("valid_write_ids") or merged.get("snapshot") or None,
            as_of_write_id=_int_or_none(_write_id_option(merged, "as_of_write_id")),
            pushdown=_flag(merged.get("pushdown")),
            query_scope=merged.get("query_scope") or None,
            metrics_path=merged.get("metrics_path") or None,
            transaction=(
                SharedTransaction.from_text(merged["transaction"])
                if merged.get("transaction")
                else None
            ),
            grouped_by_bucket=_flag(merged.get("grouped_by_bucket")),
            read_changes=_flag(merged.get("read_changes")),
            starting_write_id=_write_id_option(merged, "starting_write_id", "latest") or "0",
            ending_write_id=_int_or_none(_write_id_option(merged, "ending_write_id")),
            key=tuple(k.strip().lower() for k in (merged.get("key") or "").split(",") if k.strip()),
            max_write_ids_per_trigger=_positive_or_none(merged, "max_write_ids_per_trigger"),
            checkpoint_location=merged.get("checkpointlocation") or None,
            query_name=merged.get("queryname") or None,
            storage=storage,
        )

    @property
    def pinned(self) -> bool:
        """Whether the read's snapshot is given by the options — or by the shared transaction
        it joins (else: each query's latest)."""
        return (
            bool(self.valid_write_ids)
            or self.as_of_write_id is not None
            or self.transaction is not None
        )

    @property
    def db_and_table(self) -> tuple[str, str]:
        """``(database, table)``."""
        db, _, name = self.table.partition(".")
        return db, name

    def metastore(self) -> Metastore:
        """The metastore (one per process and URL, reused across tasks)."""
        return open_metastore(self.metastore_url, self.txn_timeout_s)

    def spec(self) -> TableSpec:
        """The table's catalog entry."""
        db, name = self.db_and_table
        return self.metastore().get_table(db, name)

    def conf_bool(self, key: str, default: bool = True) -> bool:
        """A boolean session setting."""
        value = self.conf.get(key)
        return default if value is None else str(value).strip().lower() in _TRUE


def warehouse_options(warehouse: StatementHost) -> dict[str, str]:
    """The data source options that name ``warehouse`` (with an object store's
    :class:`~acid_platform.format.storage.StorageOptions`: executors get them with the plan)."""
    options = {
        "warehouse": warehouse.root,
        "metastore_url": warehouse.metastore.url,
        "txn_timeout_s": str(warehouse.metastore.txn_timeout_s),
        "conf": json.dumps(dict(warehouse.conf)),
    }
    if warehouse.storage is not None:
        options["storage"] = warehouse.storage.to_json()
    return options


def qualified_name(name: str) -> str:
    """``db.table`` for ``table`` or ``db.table`` (lower-cased, validated)."""
    db, table = split_table_name(name.strip().strip("`"))
    return f"{db}.{table}"


def table_of_path(path: str, warehouse: str, metastore: Metastore) -> str:
    """``db.table`` of a table directory given as a path (``load('/wh/db.db/t')``): it must lie
    inside the warehouse and be an ACID table's location."""
    root = _normalize(warehouse)
    target = _normalize(path)
    if target != root and not target.startswith(root.rstrip("/") + "/"):
        raise InvalidNameError(f"path {path} is outside the warehouse {warehouse}")
    rel = target[len(root) :].strip("/").split("/")
    if len(rel) == 1 and rel[0]:
        db, name = "default", rel[0]
    elif len(rel) == 2 and rel[0].endswith(".db"):
        db, name = rel[0][: -len(".db")], rel[1]
    else:
        raise NoSuchObjectError(
            f"{path} is not an ACID table of the warehouse (tables live at <warehouse>/<table> "
            "and <warehouse>/<db>.db/<table>)"
        )
    try:
        spec = metastore.get_table(db, name)
    except (NoSuchObjectError, InvalidNameError) as exc:
        raise NoSuchObjectError(f"{path} is not an ACID table of the warehouse: {exc}") from exc
    if _normalize(spec.location) != target:
        raise NoSuchObjectError(
            f"{path} is not an ACID table of the warehouse ({spec.full_name} lives at "
            f"{spec.location})"
        )
    return spec.full_name


def is_path(name: str) -> bool:
    """Whether a ``load()`` / ``save()`` argument is a path rather than a table name."""
    return "/" in name or "\\" in name


def _normalize(location: str) -> str:
    if location.startswith("file://"):
        location = location[len("file://") :]
    if "://" in location:
        scheme, _, rest = location.partition("://")
        return f"{scheme}://{posixpath.normpath(rest)}"
    return os.path.normpath(os.path.abspath(location))


def open_metastore(url: str, txn_timeout_s: float = DEFAULT_TXN_TIMEOUT_S) -> Metastore:
    """This process's shared :class:`Metastore` for ``url`` (Python workers are reused between
    tasks; closed when the worker exits: :func:`~acid_platform.metastore.shared.shared_metastore`)."""
    return shared_metastore(url, txn_timeout_s)


def table_location(location: str) -> Location:
    """The table directory as a file system + path (resolved once per process and location)."""
    with _lock:
        loc = _locations.get(location)
    if loc is None:
        loc = resolve(location)
        with _lock:
            _locations[location] = loc
    return loc


def defaults_conf(defaults: Mapping[str, str]) -> dict[str, Any]:
    """The ``conf`` JSON of a defaults mapping, parsed."""
    text = next((v for k, v in defaults.items() if k.lower() == "conf"), None)
    return dict(json.loads(text)) if text else {}


def _sqlite_url(warehouse: str) -> str:
    if "://" in warehouse and not warehouse.startswith("file://"):
        raise InvalidNameError(
            f"warehouse {warehouse}: a remote warehouse needs the metastore_url option"
        )
    path = warehouse[len("file://") :] if warehouse.startswith("file://") else warehouse
    return f"sqlite:///{os.path.join(os.path.abspath(path), METASTORE_FILE)}"


def _write_id_option(merged: Mapping[str, str], name: str, word: str = "") -> str | None:
    """A write id option: a whole number >= 0 (or ``word``), as text; ``None`` if unset."""
    text = (merged.get(name) or "").strip().lower()
    if not text:
        return None
    if text.isdigit() or (word and text == word):
        return text
    allowed = f" or {word!r}" if word else ""
    raise InvalidChangeRangeError(
        f"acid data source: option {name}={text!r}: a write id (>= 0){allowed}"
    )


def _positive_or_none(merged: Mapping[str, str], name: str) -> int | None:
    """A count option: a whole number >= 1; ``None`` if unset."""
    text = (merged.get(name) or "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InvalidChangeRangeError(f"acid data source: option {name}={text!r}: a number >= 1")
    return int(text)


def _int_or_none(text: str | None) -> int | None:
    return None if text is None else int(text)


def _flag(value: str | None) -> bool:
    return value is not None and str(value).strip().lower() in _TRUE
