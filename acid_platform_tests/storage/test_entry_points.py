"""One configuration of a warehouse on S3 through every entry point: the CLI (from the AWS
environment), the Dagster resource (``ObjectStoreConfig``), and Python (``StorageOptions``)."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from dagster import DagsterInstance, asset, materialize

from acid_platform import StorageOptions, Warehouse
from acid_platform.orchestration import AcidWarehouseResource
from acid_platform.orchestration.resources import ObjectStoreConfig
from acid_platform_tests.s3_server import S3Server


def _env(s3: S3Server) -> dict[str, str]:
    o = s3.options()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return env | {
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_ACCESS_KEY_ID": o.access_key or "",
        "AWS_SECRET_ACCESS_KEY": o.secret_key or "",
        "AWS_REGION": "us-east-1",
        "ACID_S3_PATH_STYLE": "true",
    }


def test_the_cli_reaches_an_s3_warehouse_from_the_aws_environment(
    s3: S3Server, tmp_path: Path
) -> None:
    root = f"s3://{s3.new_bucket()}/wh"
    url = f"sqlite:///{tmp_path / 'ms.db'}"
    script = (
        "CREATE TABLE t (id int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true');"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b');"
        "UPDATE t SET v = 'c' WHERE id = 2;"
        "SELECT id, v FROM t ORDER BY id;"
    )
    for args in (
        ["init", root, "--metastore-url", url],
        ["sql", "-w", root, "--metastore-url", url, "-e", script],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "acid_platform.cli", *args],
            env=_env(s3),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    with Warehouse.open(root, url, storage=s3.options()) as wh:
        assert sorted(wh.table("t").scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "c"},
        ]


def test_the_environment_gives_the_same_options(s3: S3Server) -> None:
    got = StorageOptions.from_env(_env(s3))
    assert got.endpoint == s3.endpoint and got.path_style is True
    assert got.access_key == s3.options().access_key
    assert "acid-test-secret" not in repr(got)  # never printed


def test_the_dagster_resource_writes_an_s3_warehouse(
    s3: S3Server, tmp_path: Path, monkeypatch: object
) -> None:
    root = f"s3://{s3.new_bucket()}/wh"
    url = f"sqlite:///{tmp_path / 'ms.db'}"
    o = s3.options()
    resource = AcidWarehouseResource(
        warehouse=root,
        metastore_url=url,
        storage=ObjectStoreConfig(
            endpoint=s3.endpoint,
            region="us-east-1",
            access_key=o.access_key,
            secret_key=o.secret_key,
            path_style=True,
        ),
    )

    @asset
    def events(acid_warehouse: AcidWarehouseResource) -> None:
        wh = acid_warehouse.get_warehouse()
        t = wh.create_table("events", [("id", "int")], if_not_exists=True)
        t.insert(pa.table({"id": pa.array([1, 2, 3], pa.int32())}))

    with DagsterInstance.ephemeral() as instance:
        result = materialize([events], resources={"acid_warehouse": resource}, instance=instance)
    assert result.success
    with Warehouse.open(root, url, storage=s3.options()) as wh:
        assert sorted(r["id"] for r in wh.table("events").scan().to_arrow().to_pylist()) == [
            1,
            2,
            3,
        ]
