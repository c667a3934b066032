"""The example platform (``acid_platform_example``) loaded as its code location loads, on an
environment of the test's own (its components read their settings there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import Definitions

from acid_platform_example.definitions import build_defs

#: The settings the example reads from the environment (cleared before each load).
SETTINGS = (
    "ACID_WAREHOUSE",
    "ACID_METASTORE_URL",
    "ACID_SPARK_MASTER",
    "ACID_CONF",
    "ACID_CLEANER_CRON",
    "ACID_COMPACTION_SENSOR_INTERVAL",
    "ACID_HOUSEKEEPING_SENSOR_INTERVAL",
    "ACID_LANDING",
    "ACID_INGEST_SENSOR_INTERVAL",
    "ACID_CHANGES_SENSOR_INTERVAL",
)


def example_defs(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path | str | None = None, **env: str
) -> Definitions:
    """The example's definitions on ``warehouse`` (without Spark unless ``ACID_SPARK_MASTER``
    says otherwise) and the settings ``env``; the environment stays set for the test (the
    resources read it when they are used)."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    if warehouse is not None:
        monkeypatch.setenv("ACID_WAREHOUSE", str(warehouse))
    env = {"ACID_SPARK_MASTER": "none", **env}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return build_defs()
