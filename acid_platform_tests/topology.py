"""The platform's topology, shared by ``docker-compose.yml`` (checked by ``test_compose``) and the
tests that run it natively on 127.0.0.1: the services, their ports, and the environment the
Dagster processes read (``acid_platform.definitions`` and ``dagster.yaml``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Service -> the ports it listens on (compose publishes each on 127.0.0.1 under the same number).
SERVICES: dict[str, tuple[int, ...]] = {
    "postgres": (5432,),
    "spark-master": (7077, 8080),
    "spark-worker": (8081,),
    "dagster-webserver": (3000,),
    "dagster-daemon": (),
}
#: Services that run the project's code (they mount the warehouse and read PLATFORM_ENV).
PLATFORM_SERVICES = ("spark-worker", "dagster-webserver", "dagster-daemon")
#: What the example platform and the Dagster instance read from the environment.
PLATFORM_ENV = ("DAGSTER_HOME", "ACID_WAREHOUSE", "ACID_METASTORE_URL", "ACID_SPARK_MASTER")
#: What the PostgreSQL block of dagster.yaml reads (docker/dagster.yaml has it uncommented).
DAGSTER_PG_ENV = ("DAGSTER_PG_HOST", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")
#: The databases of the one PostgreSQL server: the ACID metastore and Dagster's storage.
METASTORE_DB = "metastore"
DAGSTER_DB = "dagster"


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
