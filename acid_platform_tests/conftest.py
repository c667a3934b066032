"""Fixtures every package of the tests may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform_tests.helpers import HIVE_FIXTURES


@pytest.fixture(scope="session")
def hive_fixtures() -> Path:
    """The Hive- and Trino-written tables in ``acid_platform_tests/fixtures/hive_written``."""
    assert HIVE_FIXTURES.is_dir(), f"fixtures missing at {HIVE_FIXTURES}"
    return HIVE_FIXTURES
