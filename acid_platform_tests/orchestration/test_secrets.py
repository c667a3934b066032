"""Issue 29, item 5: no secret in any output. The example platform runs on a PostgreSQL
metastore whose URL carries a planted password (given as ``ACID_METASTORE_URL``, an ``EnvVar``);
after a materialization and the error paths that name the metastore, the password is nowhere in
Dagster's storage (run snapshots, event logs, compute logs), in the run's events, in what the
process printed, in the resource's repr or in the errors. A password given in plain text in a
warehouse's config is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance, EnvVar
from sqlalchemy.engine import make_url

from acid_platform.errors import AlreadyExistsError, InvalidSettingError, MetastoreUnavailableError
from acid_platform.metastore.store import open_store
from acid_platform.orchestration import (
    AcidWarehouseResource,
    acid_definitions,
    warehouse_definitions,
)
from acid_platform.orchestration.resources import ObjectStoreConfig
from acid_platform.table.catalog_ops import warehouse_exists
from acid_platform_tests.example import example_defs
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.topology import ROOT

SECRET = "PLANTEDsecret4711"


def files_holding(root: Path, secret: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret in p.read_bytes()]


@pytest.mark.slow
def test_a_planted_password_is_in_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from acid_platform.cli.materialize import materialize_job

    url, cleanup = fresh_namespace("postgresql", tmp_path)
    planted = make_url(url).set(password=SECRET).render_as_string(hide_password=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    try:
        defs = example_defs(monkeypatch, tmp_path / "wh", ACID_METASTORE_URL=planted)
        acid = (defs.resources or {})["acid_warehouse"]
        assert acid.metastore_url == EnvVar("ACID_METASTORE_URL")
        with DagsterInstance.from_config(str(home)) as instance:
            result = materialize_job(defs, instance)
            assert result.success
            events = [repr(e) for e in result.all_events]
        errors: list[str] = []
        with pytest.raises(AlreadyExistsError) as other:
            warehouse_exists(str(tmp_path / "another"), planted)
        errors.append(str(other.value))
        with pytest.raises(MetastoreUnavailableError) as bad_port:
            open_store(planted.replace(f"@{make_url(url).host}", "@localhost:notaport"))
        errors.append(str(bad_port.value))
        shown = [repr(AcidWarehouseResource(warehouse="/w", metastore_url=planted)), *errors]
    finally:
        cleanup()
    printed = capfd.readouterr()
    assert files_holding(home, SECRET.encode()) == []
    assert files_holding(tmp_path / "wh", SECRET.encode()) == []
    assert not [e for e in events if SECRET in e]
    assert SECRET not in printed.out + printed.err
    assert not [s for s in shown if SECRET in s], shown
    assert all("***" in s for s in shown)


def test_a_plain_text_secret_in_a_warehouses_config_is_refused(tmp_path: Path) -> None:
    plain: list[dict[str, Any]] = [
        {"metastore_url": f"postgresql+psycopg://acid:{SECRET}@db:5432/metastore"},
        {"storage": ObjectStoreConfig(access_key="AK", secret_key=SECRET)},
    ]
    for settings in plain:
        resource = AcidWarehouseResource(warehouse=str(tmp_path), **settings)
        with pytest.raises(InvalidSettingError, match="EnvVar") as refused:
            warehouse_definitions(resource)
        assert SECRET not in str(refused.value)
        with pytest.raises(InvalidSettingError):
            acid_definitions(assets=[], warehouse=resource)
        assert SECRET not in repr(resource)
    # a URL without a password (trust, PGPASSWORD, .pgpass) and secrets as EnvVars are fine
    warehouse_definitions(
        AcidWarehouseResource(
            warehouse=str(tmp_path),
            metastore_url="postgresql+psycopg://acid@db:5432/metastore",
            storage=ObjectStoreConfig(secret_key=EnvVar("AWS_SECRET_ACCESS_KEY")),
        )
    )
