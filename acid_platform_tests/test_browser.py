"""The UI tests' browser: Debian's chromium, headless, through Playwright — and without one, a
failure that says how to get it (never a skip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform_tests import browser
from acid_platform_tests.browser import ChromiumMissing, chromium_executable, headless_chromium


def test_chromium_renders_a_page() -> None:
    with headless_chromium() as chromium:
        page = chromium.new_page()
        page.set_content("<p id='x'>acid</p>")
        assert page.inner_text("#x") == "acid"


def test_without_chromium_the_ui_tests_fail_saying_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ACID_CHROMIUM", raising=False)
    monkeypatch.setattr(browser, "DEBIAN_CHROMIUM", str(tmp_path / "chromium"))
    with pytest.raises(ChromiumMissing, match="apt-get install chromium"):
        chromium_executable()
    monkeypatch.setenv("ACID_CHROMIUM", str(tmp_path / "missing"))
    with pytest.raises(ChromiumMissing):
        chromium_executable()
