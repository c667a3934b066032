"""The platform's topology, the one description both ``docker-compose.yml`` (checked by
``test_compose``) and the native run on 127.0.0.1 (``test_native_topology``) are held to: the
services, the ports each listens on, the command each runs, and the environment of the services
that run the project's code (``acid_platform_example.definitions`` and the Dagster instance of
``docker/dagster.yaml`` read it).

A :class:`Placement` says where the services are: compose's (:data:`COMPOSE`: each service at its
own hostname, the ports of :data:`SERVICES`, PostgreSQL's databases named as here) or a native
one (every service on 127.0.0.1, free ports, databases of their own). The commands and the
environment are computed from a placement, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from acid_platform_tests.pg_server import free_port

ROOT = Path(__file__).resolve().parents[1]
#: Where every service listens in a native placement.
LOOPBACK = "127.0.0.1"
#: The workspace of the webserver and the daemon: the code server's address, from
#: :data:`CODE_ENV`.
WORKSPACE = "docker/workspace.yaml"


@dataclass(frozen=True)
class Service:
    """One service: its ports by role, those compose publishes on 127.0.0.1 (by role: the
    variable that sets the host port, and its default), its command (``{host}``,
    ``{spark_master}`` and ``{<role>}`` filled in from a placement), whether it runs the
    project's code (the warehouse and :data:`PLATFORM_ENV`), and the address it binds in compose
    (its hostname unless said)."""

    ports: Mapping[str, int] = field(default_factory=dict)
    published: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    platform: bool = False
    compose_bind: str | None = None


SERVICES: dict[str, Service] = {
    # published on 55432 by default: a PostgreSQL of the developer's own keeps 5432
    "postgres": Service(ports={"sql": 5432}, published={"sql": ("ACID_PG_HOST_PORT", 55432)}),
    "spark-master": Service(
        ports={"rpc": 7077, "webui": 8080},
        published={
            "rpc": ("ACID_SPARK_MASTER_HOST_PORT", 7077),
            "webui": ("ACID_SPARK_UI_HOST_PORT", 8080),
        },
        command=(
            "spark-class",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "{host}",
            "--port",
            "{rpc}",
            "--webui-port",
            "{webui}",
        ),
    ),
    "spark-worker": Service(
        ports={"webui": 8081},
        published={"webui": ("ACID_SPARK_WORKER_UI_HOST_PORT", 8081)},
        command=(
            "spark-class",
            "org.apache.spark.deploy.worker.Worker",
            "{spark_master}",
            "--host",
            "{host}",
            "--webui-port",
            "{webui}",
        ),
        platform=True,
    ),
    # the code-location server (Dagster's Docker deployment): serves the platform over gRPC to
    # the webserver and the daemon (docker/workspace.yaml); runs, and their Spark drivers, start
    # in it (the default run launcher)
    "dagster-code": Service(
        ports={"grpc": 4000},
        command=(
            "dagster",
            "code-server",
            "start",
            "-h",
            "{host}",
            "-p",
            "{grpc}",
            "-m",
            "acid_platform_example.definitions",
            "--location-name",
            "acid_platform",
        ),
        platform=True,
        compose_bind="0.0.0.0",  # noqa: S104 - inside its container, on compose's network
    ),
    "dagster-webserver": Service(
        ports={"http": 3000},
        published={"http": ("ACID_WEBSERVER_HOST_PORT", 3000)},
        command=("dagster-webserver", "-h", "{host}", "-p", "{http}", "-w", WORKSPACE),
        platform=True,
        compose_bind="0.0.0.0",  # noqa: S104 - inside its container; published on 127.0.0.1
    ),
    "dagster-daemon": Service(command=("dagster-daemon", "run", "-w", WORKSPACE), platform=True),
    # an S3-compatible object store (MinIO in compose; the tests run moto's server natively,
    # acid_platform_tests/s3_server.py) for a warehouse on S3 (docs/storage.md)
    "s3": Service(
        ports={"api": 9000},
        published={"api": ("ACID_S3_HOST_PORT", 9000)},
        command=("server", "/data", "--address", ":{api}"),
    ),
}
#: Services that run the project's code (they mount the warehouse and read PLATFORM_ENV).
PLATFORM_SERVICES = tuple(name for name, s in SERVICES.items() if s.platform)
#: What the example platform and the Dagster instance read from the environment.
PLATFORM_ENV = (
    "DAGSTER_HOME",
    "ACID_WAREHOUSE",
    "ACID_METASTORE_URL",
    "ACID_SPARK_MASTER",
    "ACID_LANDING",
)
#: Where docker/workspace.yaml finds the code-location server.
CODE_ENV = ("DAGSTER_CODE_HOST", "DAGSTER_CODE_PORT")
#: PostgreSQL's password, for the metastore (libpq reads it: ACID_METASTORE_URL holds none).
PASSWORD_ENV = "PGPASSWORD"
#: What the PostgreSQL block of dagster.yaml reads (docker/dagster.yaml has it uncommented).
DAGSTER_PG_ENV = (
    "DAGSTER_PG_HOST",
    "DAGSTER_PG_PORT",
    "DAGSTER_PG_USER",
    "DAGSTER_PG_PASSWORD",
    "DAGSTER_PG_DB",
)
#: The databases of the one PostgreSQL server: the ACID metastore and Dagster's storage.
METASTORE_DB = "metastore"
DAGSTER_DB = "dagster"


@dataclass(frozen=True)
class Placement:
    """Where the services of :data:`SERVICES` are: the host each is reached at, its ports by
    role, PostgreSQL's account and the name of each of its databases."""

    hosts: Mapping[str, str]
    ports: Mapping[str, Mapping[str, int]]
    pg_user: str
    pg_password: str
    databases: Mapping[str, str] = field(
        default_factory=lambda: {METASTORE_DB: METASTORE_DB, DAGSTER_DB: DAGSTER_DB}
    )

    def port(self, service: str, role: str) -> int:
        return self.ports[service][role]

    @property
    def spark_master(self) -> str:
        return f"spark://{self.hosts['spark-master']}:{self.port('spark-master', 'rpc')}"

    @property
    def metastore_url(self) -> str:
        """The ACID metastore's SQLAlchemy URL, without the password (:data:`PASSWORD_ENV`)."""
        return self.database_url(METASTORE_DB, with_password=False)

    def database_url(self, database: str, with_password: bool = True) -> str:
        """The SQLAlchemy URL of PostgreSQL's ``database`` (:data:`METASTORE_DB` or
        :data:`DAGSTER_DB`)."""
        return URL.create(
            "postgresql+psycopg",
            username=self.pg_user,
            password=(self.pg_password or None) if with_password else None,
            host=self.hosts["postgres"],
            port=self.port("postgres", "sql"),
            database=self.databases[database],
        ).render_as_string(hide_password=False)

    def command(self, service: str, bind: str | None = None) -> list[str]:
        """The service's argv, listening on ``bind`` (default: its host)."""
        values = {
            "host": bind or self.hosts[service],
            "spark_master": self.spark_master,
            **{role: str(port) for role, port in self.ports.get(service, {}).items()},
        }
        return [word.format(**values) for word in SERVICES[service].command]

    def dagster_pg_env(self) -> dict[str, str]:
        """:data:`DAGSTER_PG_ENV`: Dagster's storage database (``docker/dagster.yaml``)."""
        return {
            "DAGSTER_PG_HOST": self.hosts["postgres"],
            "DAGSTER_PG_PORT": str(self.port("postgres", "sql")),
            "DAGSTER_PG_USER": self.pg_user,
            "DAGSTER_PG_PASSWORD": self.pg_password,
            "DAGSTER_PG_DB": self.databases[DAGSTER_DB],
        }

    def platform_env(self, home: str, warehouse: str, landing: str) -> dict[str, str]:
        """The environment of a platform service: :data:`PLATFORM_ENV`,
        :data:`DAGSTER_PG_ENV`, :data:`CODE_ENV` and :data:`PASSWORD_ENV` (``DAGSTER_HOME`` =
        ``home``, ``ACID_WAREHOUSE`` = ``warehouse``, ``ACID_LANDING`` = ``landing``)."""
        return platform_env(
            home,
            warehouse,
            self.metastore_url,
            self.spark_master,
            ACID_LANDING=landing,
            DAGSTER_CODE_HOST=self.hosts["dagster-code"],
            DAGSTER_CODE_PORT=str(self.port("dagster-code", "grpc")),
            **{PASSWORD_ENV: self.pg_password},
            **self.dagster_pg_env(),
        )


#: docker-compose.yml's placement: each service at its hostname, the ports of SERVICES.
COMPOSE = Placement(
    hosts={name: name for name in SERVICES},
    ports={name: dict(s.ports) for name, s in SERVICES.items()},
    pg_user="acid",
    pg_password="acid",
)


def native_placement(metastore_url: str, dagster_url: str) -> Placement:
    """Every service on 127.0.0.1 on free ports, but PostgreSQL: the server of the two database
    URLs (the metastore's and Dagster's storage's, same server and account)."""
    metastore, dagster = make_url(metastore_url), make_url(dagster_url)
    assert (metastore.host, metastore.port, metastore.username) == (
        dagster.host,
        dagster.port,
        dagster.username,
    ), "one PostgreSQL server holds both databases"
    ports = {name: {role: free_port() for role in s.ports} for name, s in SERVICES.items()}
    ports["postgres"] = {"sql": metastore.port or SERVICES["postgres"].ports["sql"]}
    return Placement(
        hosts={name: LOOPBACK for name in SERVICES} | {"postgres": metastore.host or LOOPBACK},
        ports=ports,
        pg_user=metastore.username or "postgres",
        pg_password=metastore.password or "",
        databases={METASTORE_DB: str(metastore.database), DAGSTER_DB: str(dagster.database)},
    )


#: Where the compose services keep the Dagster instance, the warehouse and landing volumes.
COMPOSE_HOME = "/opt/dagster/home"
COMPOSE_WAREHOUSE = "/warehouse"
COMPOSE_LANDING = "/landing"


def platform_env(
    home: Path | str,
    warehouse: Path | str,
    metastore_url: str | None = None,
    spark_master: str = "none",
    **extra: str,
) -> dict[str, str]:
    """The environment of a native platform process (``dagster dev``, webserver, daemon)."""
    env = {
        "DAGSTER_HOME": str(home),
        "ACID_WAREHOUSE": str(warehouse),
        "ACID_SPARK_MASTER": spark_master,
    }
    if metastore_url:
        env["ACID_METASTORE_URL"] = metastore_url
    return env | extra
