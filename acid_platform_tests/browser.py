"""Headless Chromium for the UI tests: Debian's ``chromium`` package (``scripts/test`` installs
it when it is missing and it can), driven by Playwright for Python — never a browser Playwright
downloads (no ``playwright install``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

#: Where Debian's package puts it; ``ACID_CHROMIUM`` names another.
DEBIAN_CHROMIUM = "/usr/bin/chromium"
MISSING = (
    "Debian's chromium is not installed: `apt-get install chromium` (bash scripts/test and "
    ".ci/run install it when run as root), or set ACID_CHROMIUM to a Chromium executable"
)


class ChromiumMissing(AssertionError):
    """No Chromium to run: the UI tests fail (never skip) and say how to get one."""


def chromium_executable() -> str:
    """The Chromium the tests drive (:class:`ChromiumMissing` when there is none)."""
    for candidate in (os.environ.get("ACID_CHROMIUM"), shutil.which("chromium"), DEBIAN_CHROMIUM):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ChromiumMissing(MISSING)


@contextmanager
def headless_chromium() -> Iterator[Browser]:
    """A headless Chromium (without its sandbox as root, where it refuses to start with one)."""
    executable = chromium_executable()
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


__all__ = ["DEBIAN_CHROMIUM", "ChromiumMissing", "chromium_executable", "headless_chromium"]
