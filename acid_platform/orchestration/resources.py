"""Dagster resources: the warehouse of a run, reads under one snapshot, and Spark.

* :class:`AcidWarehouseResource` — the "transaction resource": the warehouse (root URI,
  metastore URL, engine, Hive settings), opened once per step process, handing out the
  warehouse, its tables, transactions and snapshots for assets and ad-hoc work; maintenance
  jobs and sensors open a short-lived one with :meth:`~AcidWarehouseResource.open_warehouse`::

      @asset
      def restated(acid_warehouse: AcidWarehouseResource) -> None:
          with acid_warehouse.transaction():
              acid_warehouse.table("sales").update({"amount": "amount * 2"}, "ds = '2024-01-01'")

* :class:`AcidReader` — the snapshot-aware "merge" resource: loads a table or partition under
  ONE snapshot, lazily, with column projection, as Arrow, pandas or a Spark DataFrame::

      @asset
      def report(reader: AcidReader) -> pd.DataFrame:
          with reader.snapshot("sales", "stores") as snap:
              return snap.load("sales", partition={"ds": "2024-01-01"}).to_pandas()

* :func:`spark_resource` — a ``dagster_pyspark.LazyPySparkResource`` whose Python workers run
  this interpreter and import this project (``spark.pyspark.python``,
  ``spark.executorEnv.PYTHONPATH``). Run Spark steps in process (``in_process_executor``) so one
  JVM serves the run.

A resource's warehouse is one session (see :class:`~acid_platform.table.TableWarehouse`): use
it from one thread at a time.
"""

# Pydantic reads these classes' annotations at run time: no postponed evaluation here.

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
from acid_platform.table import Table, TableWarehouse, Transaction
from acid_platform.table.catalog_ops import warehouse_exists
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
    import this project: this interpreter on the driver and executors, the project on their
    ``PYTHONPATH``, the memory settings of :mod:`acid_platform.runtime` on the executors, the
    driver on loopback for a local master, the UI off. ``conf`` adds or overrides Spark
    settings. Sets ``PYSPARK_PYTHON`` (this interpreter) in this process's environment where
    unset: Spark starts the data source's planning workers with it. Needs the
    ``[dagster-spark]`` extra."""
    require("dagster_pyspark", "dagster-spark", "spark_resource()")
    # Spark starts the data source's planning workers with PYSPARK_PYTHON, not the conf.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
    if master.startswith("local"):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    return LazyPySparkResource(spark_config=settings | dict(conf or {}))


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
        """This process's warehouse session (opened on first use, Spark registered for engine
        ``spark``; closed with the step's resources)."""
        if self._warehouse is None:
            wh = self.open(create=self.create)
            if self.engine == "spark":
                wh.register_spark(self.spark_session())
            self._warehouse = wh
        return self._warehouse

    def exists(self) -> bool:
        """Whether the warehouse exists yet (the first write creates it; until then the
        maintenance has nothing to do and skips its ticks)."""
        return warehouse_exists(self.warehouse, self.metastore_url)

    @contextmanager
    def open_warehouse(self) -> Iterator[Warehouse]:
        """A warehouse of its own (it must exist; no Spark), closed at the end: for sensors
        and maintenance jobs."""
        wh = self.open(create=False)
        try:
            yield wh
        finally:
            wh.close()

    def open(self, *, create: bool) -> Warehouse:
        """A new warehouse session on these settings (the caller closes it)."""
        return Warehouse.open(
            self.warehouse,
            self.metastore_url,
            conf=self.conf,
            create=create,
            txn_timeout_s=self.service_conf.txn_timeout_s,
            storage=None if self.storage is None else self.storage.options(),
        )

    def spark_session(self) -> Any:
        """The Spark session: ``spark``'s, else the active one, else a new
        :func:`spark_resource` session on ``spark_master`` (default ``local[*]``)."""
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
        """ONE snapshot of ``tables`` (a reader lease until closed or until the step ends)."""
        snap = TableSnapshot(self.get_warehouse(), tables)
        self._snapshots.append(snap)
        return snap

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
        """ONE snapshot of ``tables``; ``.load(table, columns=…, partition=…, filter=…)``."""
        return self.acid_warehouse.snapshot(*tables)

    def load(
        self,
        table: str,
        columns: list[str] | None = None,
        partition: Mapping[str, Any] | str | None = None,
        filter: str | None = None,  # noqa: A002 - the table API's word
    ) -> TableRead:
        """A lazy read of one table (or one partition of it) in a snapshot of its own."""
        return self.snapshot(table).load(table, columns, partition, filter)

    def load_spark(
        self,
        table: str,
        columns: list[str] | None = None,
        partition: Mapping[str, Any] | str | None = None,
        filter: str | None = None,  # noqa: A002
    ) -> Any:
        """:meth:`load` as a Spark DataFrame on the warehouse resource's Spark session."""
        return self.load(table, columns, partition, filter).to_spark(
            self.acid_warehouse.spark_session()
        )


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
    "AcidWarehouseResource",
    "keyed_name",
    "no_warehouse_yet",
    "refuse_plain_secrets",
    "warehouse_resource",
    "spark_resource",
]
