"""The examples in the package's docstrings run, and give what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import acid_platform

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(acid_platform.__path__, "acid_platform.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
