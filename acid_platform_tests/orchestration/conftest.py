"""A warehouse resource, the IO manager on it and a Dagster instance, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, instance_for_test

from acid_platform.orchestration import AcidReader, AcidTableIOManager, AcidWarehouseResource
from acid_platform.warehouse import Warehouse


@pytest.fixture
def acid(tmp_path: Path) -> AcidWarehouseResource:
    """The warehouse resource on a fresh warehouse in ``tmp_path / "wh"``."""
    return AcidWarehouseResource(warehouse=str(tmp_path / "wh"))


@pytest.fixture
def resources(acid: AcidWarehouseResource) -> dict[str, object]:
    """``acid``, ``io_manager`` and ``reader`` for ``materialize``."""
    return {
        "acid": acid,
        "io_manager": AcidTableIOManager(acid=acid),
        "reader": AcidReader(acid=acid),
    }


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


@pytest.fixture
def wh(tmp_path: Path, acid: AcidWarehouseResource) -> Iterator[Warehouse]:
    """A session of its own on the same warehouse, to look at what the runs wrote."""
    with Warehouse.open(tmp_path / "wh") as warehouse:
        yield warehouse
