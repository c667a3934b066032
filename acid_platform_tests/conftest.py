"""Shared test fixtures: paths to the Hive-written fixture tables."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HIVE_FIXTURES = REPO.parent / "shared" / "fixtures" / "hive_written"


@pytest.fixture(scope="session")
def hive_fixtures() -> Path:
    """The `shared/fixtures/hive_written` tree (CI clones the repo with shared/ beside it)."""
    assert HIVE_FIXTURES.is_dir(), (
        f"fixtures missing at {HIVE_FIXTURES}: shared/ must sit beside the repo"
    )
    return HIVE_FIXTURES
