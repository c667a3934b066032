"""The repository carries everything its tests read: a clone of HEAD alone in an empty directory
(nothing beside it) passes the tests that read the repository's data — every test module
that names the fixture or seed directories (the Hive- and Trino-written tables, the seeds'
SQL), without those that need Spark: they read the same files, and a JVM's start cost more than
the rest together. The rest of the suite reads only what its tests write, and CI runs it from a
clean clone anyway (``.ci/run``): re-running all of it here proved nothing more and cost ten
minutes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.slow
def test_a_clone_alone_in_an_empty_directory_passes_its_fast_lane(tmp_path: Path) -> None:
    head = _git("rev-parse", "HEAD")
    clone = tmp_path / "empty" / "acid_platform"
    _git("clone", "--quiet", "--no-checkout", str(REPO), str(clone), cwd=tmp_path)
    _git("checkout", "--quiet", "--detach", head, cwd=clone)
    assert os.listdir(clone.parent) == [clone.name]  # nothing beside it
    # The current environment's packages, this clone's code (PYTHONPATH wins over any install).
    env = {**os.environ, "PYTHONPATH": str(clone)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import acid_platform as a, acid_platform_tests as t\n"
            "print(a.__file__); print(t.__file__)",
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(Path(f).is_relative_to(clone) for f in where.stdout.split()), where.stdout
    readers = data_readers(clone / "acid_platform_tests")
    assert len(readers) >= 5, readers  # the fixture and seed tests are found
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow and not spark",  # the same files read without a JVM's start
            *readers,
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert summary and " passed" in summary[0] and "failed" not in summary[0], summary


#: What a test module names when it reads the repository's own data.
DATA_WORDS = ("fixtures", "seeds", "HIVE_FIXTURES", "copy_nation_table")


def data_readers(tests: Path) -> list[str]:
    """The test modules (paths relative to the clone) whose source names a data directory."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text()
        if any(word in text for word in DATA_WORDS):
            found.append(str(path.relative_to(tests.parent)))
    return found
