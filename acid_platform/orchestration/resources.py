"""Dagster resources: the warehouse of a run, reads under one snapshot, and Spark.

* :class:`AcidWarehouseResource` — the "transaction resource": the warehouse (root URI,
  metastore URL, engine, Hive settings), opened once per step process;
  :meth:`~AcidWarehouseResource.get_warehouse` is the one way to get it, and the resource hands
  out its tables and transactions for assets and ad-hoc work. This package's sensors,
  maintenance jobs and checks open a short-lived one of their own instead, which neither
  creates the warehouse nor starts Spark (:func:`maintenance_warehouse`)::

      @asset
      def restated(acid_warehouse: AcidWarehouseResource) -> None:
          with acid_warehouse.transaction():
              acid_warehouse.table("sales").update({"amount": "amount * 2"}, "ds = '2024-01-01'")

* :class:`AcidReader` — the snapshot-aware "merge" resource, the one way to get a snapshot:
  loads a table or partition under ONE snapshot, lazily, with column projection, as Arrow,
  pandas or a Spark DataFrame::

      @asset
      def report(reader: AcidReader) -> pd.DataFrame:
          with reader.snapshot("sales", "stores") as snap:
              return snap.load("sales", partition={"ds": "2024-01-01"}).to_pandas()

* :func:`spark_resource` — a ``dagster_pyspark.LazyPySparkResource`` whose Python workers run
  this interpreter and import this project (``spark.pyspark.python``,
  ``spark.executorEnv.PYTHONPATH``); it sets no environment variable. Run Spark steps in
  process (``in_process_executor``) so one JVM serves the run.

A resource's warehouse is one session (see :class:`~acid_platform.table.TableWarehouse`): use
it from one thread at a time.

Deprecated, for one release (a ``DeprecationWarning``): ``AcidWarehouseResource.open()`` and
``AcidWarehouseResource.open_warehouse()`` (use ``get_warehouse()``),
``AcidWarehouseResource.snapshot()`` (use ``AcidReader.snapshot()``).
"""

# Pydantic reads these classes' annotations at run time: no postponed evaluation here.

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from dagster import Config, ConfigurableResource, EnvVar, InitResourceContext, ResourceDependency
from pydantic import Field, PrivateAttr
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from acid_platform.compaction import ExecutorRouter, ServiceConf
from acid_platform.errors import InvalidSettingError
from acid_platform.format.storage import StorageOptions
from acid_platform.metastore.store import masked_url
from acid_platform.orchestration.reading import TableRead, TableSnapshot
from acid_platform.runtime import require, spark_executor_env
from acid_platform.table import Table, Transaction
from acid_platform.table.catalog_ops import warehouse_exists
from acid_platform.table.deprecation import deprecated, renamed_argument
from acid_platform.table.warehouse import TableWarehouse
from acid_platform.warehouse import Warehouse

try:
    from dagster_pyspark import LazyPySparkResource
except ImportError:  # the [dagster] extra without [dagster-spark]: no Spark session to hold

    class LazyPySparkResource(ConfigurableResource):  # type: ignore[no-redef]
        """Stands in for ``dagster_pyspark.LazyPySparkResource`` (the ``[dagster-spark]``
        extra), so the ``spark`` field can be declared; there is no Spark to configure."""


#: The directory that holds the ``acid_platform`` package (what Spark's Python workers import).
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


def spark_resource(
    master: str = "local[*]", conf: Mapping[str, str] | None = None
) -> LazyPySparkResource:
    """A ``LazyPySparkResource`` (the session starts on first use) whose Python workers can
    import this project: this interpreter on the driver and executors (``spark.pyspark.python``
    and ``spark.pyspark.driver.python``; PySpark takes its workers' interpreter from
    ``PYSPARK_PYTHON`` only, so :class:`AcidSparkResource` applies the setting to the session
    it hands out), the project on their ``PYTHONPATH``, the memory settings of
    :mod:`acid_platform.runtime` on the executors, the driver on loopback for a local master
    (``spark.driver.host``, ``spark.driver.bindAddress``), the UI off, Hive's ``ALTER TABLE …
    COMPACT`` and ``SHOW COMPACTIONS`` in Spark SQL (the session extension and its jar:
    :func:`~acid_platform.engines.spark.extensions.extension_conf`). ``conf`` adds or
    overrides Spark settings. Sets no environment variable. Needs the ``[dagster-spark]``
    extra."""
    require("dagster_pyspark", "dagster-spark", "spark_resource()")
    path = os.pathsep.join(
        dict.fromkeys([PROJECT_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(":"))])
    )
    settings = {
        "spark.master": master,
        "spark.app.name": "acid_platform",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": path,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        **spark_executor_env(),
    }
    from acid_platform.engines.spark.extensions import extension_conf

    if master.startswith("local"):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    settings |= dict(conf or {})
    return AcidSparkResource(spark_config=settings | extension_conf(settings))


class AcidSparkResource(LazyPySparkResource):
    """The resource :func:`spark_resource` makes: a ``LazyPySparkResource`` whose session's
    Python workers run the interpreter its settings name (``spark.pyspark.python``, applied to
    the session's ``SparkContext`` as ``wh.register_spark`` does) — not the ``python3`` of the
    ``PATH`` that PySpark picks when ``PYSPARK_PYTHON`` is unset."""

    @property
    def spark_session(self) -> Any:
        from acid_platform.engines.spark.python_workers import use_driver_python

        session = super().spark_session
        use_driver_python(session)  # once per SparkContext
        return session


class ObjectStoreConfig(Config):
    def __repr_args__(self) -> Any:
        """The fields, the secrets masked (a repr lands in logs and error messages)."""
        for name, value in super().__repr_args__():
            secret = (
                name in ("secret_key", "session_token") and value and not isinstance(value, EnvVar)
            )
            yield name, "***" if secret else value

    """An object store's endpoint and credentials (see
    :class:`~acid_platform.format.storage.StorageOptions`); unset values come from the AWS
    environment variables. Give secrets as ``EnvVar("AWS_SECRET_ACCESS_KEY")``."""

    endpoint: str | None = Field(default=None, description="e.g. http://127.0.0.1:9000")
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    profile: str | None = Field(default=None, description="A profile of ~/.aws/credentials.")
    path_style: bool | None = Field(default=None, description="Path-style requests (MinIO, …).")

    def options(self) -> StorageOptions:
        env = StorageOptions.from_env()
        given = {k: v for k, v in self.model_dump().items() if v is not None}
        return replace(env, **given)


class AcidWarehouseResource(ConfigurableResource):
    """A warehouse of Hive ACID tables: where it is, its metastore, the engine, the settings
    (see module docs).

    ``conf`` holds Hive settings (``hive.txn.timeout``, ``hive.compactor.*``,
    ``acid.compactor.large.partition.bytes``): the metastore heartbeats and times out on
    ``hive.txn.timeout``, the compactor reads its thresholds there. With ``engine="spark"``,
    Spark is the warehouse's native engine and partitions larger than
    ``acid.compactor.large.partition.bytes`` are compacted on Spark.

    >>> AcidWarehouseResource(warehouse="/tmp/wh").engine
    'embedded'
    """

    warehouse: str = Field(description="Warehouse root: a local path or a URI (s3://…).")
    metastore_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the metastore; default: SQLite inside a local warehouse.",
    )
    engine: Literal["embedded", "spark"] = Field(
        default="embedded",
        description="Where rows are computed: embedded (DuckDB) or Spark (the warehouse is "
        "registered on the session of `spark`: DataFrames written by executors, large "
        "partitions compacted there).",
    )
    conf: dict[str, str] = Field(
        default_factory=dict,
        description="Hive settings (hive.txn.timeout, hive.compactor.*; what SQL `SET` sets).",
    )
    spark: LazyPySparkResource | None = Field(
        default=None,
        description="The Spark session (default: the active one, else spark_resource() on "
        "`spark_master`).",
    )
    spark_master: str | None = Field(
        default=None, description="With no `spark` and no active session: the master to use."
    )
    create: bool = Field(
        default=True, description="get_warehouse() creates the warehouse if it does not exist."
    )
    storage: ObjectStoreConfig | None = Field(
        default=None,
        description="For a warehouse on S3: endpoint, region, credentials, path style "
        "(default: the AWS environment variables).",
    )

    _warehouse: Warehouse | None = PrivateAttr(default=None)
    _snapshots: list[TableSnapshot] = PrivateAttr(default_factory=list)

    def __repr_args__(self) -> Any:
        """The fields, with the metastore URL's password and the object store's secrets
        masked: a repr lands in logs and error messages."""
        for name, value in super().__repr_args__():
            if name == "metastore_url" and isinstance(value, str) and not isinstance(value, EnvVar):
                yield name, masked_url(value)
            else:
                yield name, value

    @property
    def service_conf(self) -> ServiceConf:
        """The maintenance settings in ``conf`` (``hive.txn.timeout``, intervals)."""
        return ServiceConf.from_conf(self.conf)

    def get_warehouse(self) -> Warehouse:
        """The warehouse: this process's session of it, the one way to get it from the
        resources (opened on first use — created first if missing and ``create`` —, registered
        on :meth:`spark_session` with ``wh.register_spark`` for engine ``spark``; closed with
        the step's resources)."""
        if self._warehouse is None:
            wh = _open_session(self, create=self.create)
            try:
                if self.engine == "spark":
                    wh.register_spark(self.spark_session())
            except BaseException:
                wh.close()
                raise
            self._warehouse = wh
        return self._warehouse

    def exists(self) -> bool:
        """Whether the warehouse exists yet (the first write creates it; until then the
        maintenance has nothing to do and skips its ticks)."""
        return warehouse_exists(self.warehouse, self.metastore_url)

    def open_warehouse(self) -> AbstractContextManager[Warehouse]:
        """Deprecated: use :meth:`get_warehouse`. A warehouse of its own (it must exist; no
        Spark), closed at the end (:func:`maintenance_warehouse`)."""
        deprecated("AcidWarehouseResource.open_warehouse()", "get_warehouse()")
        return maintenance_warehouse(self)

    def open(self, *, create: bool) -> Warehouse:
        """Deprecated: use :meth:`get_warehouse`. A new warehouse session on these settings
        (the caller closes it)."""
        deprecated("AcidWarehouseResource.open()", "get_warehouse()")
        return _open_session(self, create=create)

    def spark_session(self) -> Any:
        """The Spark session: ``spark``'s, else the active one, else a new
        :func:`spark_resource` session on ``spark_master`` (default ``local[*]``)."""
        if self.spark is not None:
            return self.spark.spark_session
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        return spark_resource(self.spark_master or "local[*]").spark_session

    def compaction_executor(self, wh: TableWarehouse) -> ExecutorRouter | None:
        """What rewrites partitions: ``None`` (embedded) or, with ``engine="spark"``, a router
        sending large partitions to Spark."""
        if self.engine != "spark":
            return None
        from acid_platform.engines.spark.compaction import compaction_router

        return compaction_router(self.spark_session(), wh.conf)

    def table(self, name: str) -> Table:
        """The table ``name`` (``db.table`` or ``table`` in ``default``)."""
        return self.get_warehouse().table(name)

    def transaction(self) -> Transaction:
        """A multi-statement transaction of the warehouse session: ``with
        acid_warehouse.transaction(): …`` commits at the end and aborts on an exception."""
        return self.get_warehouse().transaction()

    def snapshot(self, *tables: str) -> TableSnapshot:
        """Deprecated: use :meth:`AcidReader.snapshot`. ONE snapshot of ``tables`` (a reader
        lease until closed or until the step ends)."""
        deprecated("AcidWarehouseResource.snapshot()", "AcidReader.snapshot()")
        return self.hold(TableSnapshot(self.get_warehouse(), tables))

    def hold(self, snapshot: TableSnapshot) -> TableSnapshot:
        """Close ``snapshot`` (release its reader lease) when this resource closes, when the
        step ends, and return it: what keeps the snapshots of :meth:`AcidReader.snapshot` and of
        the IO manager's loads for as long as the step may read them."""
        self._snapshots.append(snapshot)
        return snapshot

    def sql(self, text: str) -> Any:
        """Run HiveQL in the warehouse session (``acid_warehouse.sql("SHOW TRANSACTIONS")``)."""
        return self.get_warehouse().sql(text)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self.close()

    def close(self) -> None:
        """Release the snapshots handed out and close the warehouse session."""
        snapshots, self._snapshots = self._snapshots, []
        for snap in snapshots:
            snap.close()
        if self._warehouse is not None:
            wh, self._warehouse = self._warehouse, None
            wh.close()


class AcidReader(ConfigurableResource):
    """Loads tables under one snapshot (see module docs)."""

    acid_warehouse: ResourceDependency[AcidWarehouseResource]

    def snapshot(self, *tables: str) -> TableSnapshot:
        """ONE snapshot of ``tables`` (a reader lease until closed or until the step ends), the
        one way to get a snapshot from the resources; ``.load(table, columns=…, partition=…,
        where=…)``."""
        resource = self.acid_warehouse
        return resource.hold(TableSnapshot(resource.get_warehouse(), tables))

    def load(
        self,
        table: str,
        columns: list[str] | None = None,
        partition: Mapping[str, Any] | str | None = None,
        where: str | None = None,
        *,
        filter: str | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> TableRead:
        """A lazy read of one table (or one partition of it) in a snapshot of its own; ``where``
        is a Hive predicate (``filter=`` is its deprecated alias)."""
        where = renamed_argument(where, filter, "filter=", "where=")
        return self.snapshot(table).load(table, columns, partition, where)

    def load_spark(
        self,
        table: str,
        columns: list[str] | None = None,
        partition: Mapping[str, Any] | str | None = None,
        where: str | None = None,
        *,
        filter: str | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> Any:
        """:meth:`load` as a Spark DataFrame on the warehouse resource's Spark session."""
        where = renamed_argument(where, filter, "filter=", "where=")
        return self.load(table, columns, partition, where).to_spark(
            self.acid_warehouse.spark_session()
        )


def _open_session(resource: AcidWarehouseResource, *, create: bool) -> Warehouse:
    """A new warehouse session on ``resource``'s settings (the caller closes it)."""
    return Warehouse.open(
        resource.warehouse,
        resource.metastore_url,
        conf=resource.conf,
        create=create,
        txn_timeout_s=resource.service_conf.txn_timeout_s,
        storage=None if resource.storage is None else resource.storage.options(),
    )


@contextmanager
def maintenance_warehouse(resource: AcidWarehouseResource) -> Iterator[Warehouse]:
    """A warehouse session of its own on ``resource``'s settings, closed at the end: for this
    package's sensors, maintenance jobs and checks, which must neither create the warehouse (it
    must exist) nor start Spark (none is registered). Assets and ops use
    ``resource.get_warehouse()``."""
    wh = _open_session(resource, create=False)
    try:
        yield wh
    finally:
        wh.close()


#: The resource key of a code location's (first) warehouse. Another warehouse of the same code
#: location is bound under a key of its own; its jobs, sensors and schedules are named after it
#: (:func:`keyed_name`).
DEFAULT_RESOURCE_KEY = "acid_warehouse"


def keyed_name(base: str, resource_key: str) -> str:
    """The name of a job, sensor or schedule of the warehouse under ``resource_key``: ``base``
    for :data:`DEFAULT_RESOURCE_KEY`, else ``base__<resource_key>``.

    >>> keyed_name("acid_compaction", "acid_warehouse"), keyed_name("acid_compaction", "lake2")
    ('acid_compaction', 'acid_compaction__lake2')
    """
    return base if resource_key == DEFAULT_RESOURCE_KEY else f"{base}__{resource_key}"


def warehouse_resource(context: Any, resource_key: str) -> AcidWarehouseResource:
    """The warehouse resource bound under ``resource_key`` in an op's, sensor's, schedule's or
    check's ``context`` (they declare it in ``required_resource_keys``). Sensor and schedule
    functions also take ``**_``: called directly (``sensor(context)``, as tests do), Dagster
    passes their required resources as keyword arguments too."""
    resource = getattr(context.resources, resource_key)
    if not isinstance(resource, AcidWarehouseResource):
        raise TypeError(
            f"resource {resource_key!r} is a {type(resource).__name__}, not an "
            "AcidWarehouseResource"
        )
    return resource


def refuse_plain_secrets(resource: AcidWarehouseResource) -> None:
    """:class:`~acid_platform.errors.InvalidSettingError` when the resource's config holds a
    secret as plain text — a password in the metastore URL, an object-store secret key or
    session token — instead of an ``EnvVar``: Dagster keeps resource config in its run storage
    and shows it in the UI."""
    url = resource.metastore_url
    if isinstance(url, str) and not isinstance(url, EnvVar) and _has_password(url):
        raise InvalidSettingError(
            f"metastore_url {masked_url(url)} holds a password in plain text: give the URL as "
            'EnvVar("ACID_METASTORE_URL") (or the password in PGPASSWORD or ~/.pgpass), so it '
            "stays out of Dagster's run storage and UI"
        )
    store = resource.storage
    for name in ("secret_key", "session_token"):
        value = getattr(store, name, None) if store is not None else None
        if value and not isinstance(value, EnvVar):
            raise InvalidSettingError(
                f"storage.{name} is given in plain text: give it as "
                'EnvVar("AWS_SECRET_ACCESS_KEY") (or leave it to the AWS environment)'
            )


def _has_password(url: str) -> bool:
    try:
        return make_url(url).password is not None
    except (ArgumentError, ValueError):
        return "@" in url.partition("://")[2].split("/", 1)[0]


def no_warehouse_yet(resource: AcidWarehouseResource) -> str:
    """The skip reason of a maintenance tick before the warehouse exists."""
    return f"no warehouse at {resource.warehouse} yet (the first write creates it)"


__all__ = [
    "DEFAULT_RESOURCE_KEY",
    "PROJECT_ROOT",
    "AcidReader",
    "AcidSparkResource",
    "AcidWarehouseResource",
    "keyed_name",
    "maintenance_warehouse",
    "no_warehouse_yet",
    "refuse_plain_secrets",
    "warehouse_resource",
    "spark_resource",
]
