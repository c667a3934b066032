"""The allocator settings of processes that opt in (:func:`acid_platform.runtime.tune_memory`:
the ``acid`` program, the code locations, the Spark sessions the project starts) — and none for
a process that merely imports the package:

* pyarrow's allocator keeps freed pages for reuse: the next stripe of a scan reuses them instead
  of faulting in and zeroing fresh pages;
* numpy no longer asks for transparent huge pages for its large arrays.

A user's own MIMALLOC_PURGE_DELAY or NUMPY_MADVISE_HUGEPAGE wins."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession

# Ten rounds of allocating and freeing 64 MB through pyarrow's default pool; prints the setting
# and the minor page faults of the rounds after the first.
ROUNDS = """
import os, resource
from acid_platform.runtime import tune_memory; tune_memory()  # first, as the CLI and code locations do
import numpy as np, pyarrow as pa, pyarrow.compute as pc
a = pa.array(np.arange(8_000_000))
pc.add(a, 1)  # the first round allocates
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    out = pc.add(a, 1)
    del out
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(os.environ["MIMALLOC_PURGE_DELAY"], after - before)
"""


def _rounds(**env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS], env={**base, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    setting, faults = out.stdout.split()
    return setting, int(faults)


def test_freed_pages_are_reused_not_faulted_in_again() -> None:
    setting, faults = _rounds()
    assert setting == "-1"
    assert faults < 32  # 640 MB allocated in all: the first round's pages, reused


def test_the_users_setting_wins_and_is_what_pyarrow_obeys() -> None:
    setting, faults = _rounds(MIMALLOC_PURGE_DELAY="0")  # give pages back at once
    assert setting == "0"
    # every round faults its 64 MB in again: at least 32 faults a round (2 MB huge pages)
    assert faults >= 10 * 32 * 0.9


# A 64 MiB numpy array, touched; prints the setting and the kB of the array's memory in
# transparent huge pages (from /proc/self/smaps).
HUGE = """
import os, re
from acid_platform.runtime import tune_memory; tune_memory()  # first, as the CLI and code locations do
import numpy as np
a = np.ones(8 << 20)
start = a.__array_interface__["data"][0]
end = start + a.nbytes
huge, inside = 0, False
for line in open("/proc/self/smaps"):  # the array's mappings (madvise may have split them)
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
    if m:
        inside = int(m.group(1), 16) < end and start < int(m.group(2), 16)
    elif inside and line.startswith("AnonHugePages:"):
        huge += int(line.split()[1])
print(os.environ["NUMPY_MADVISE_HUGEPAGE"], huge)
"""


def _huge(**env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run(
        [sys.executable, "-c", HUGE], env={**base, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    setting, huge_kb = out.stdout.split()
    return setting, int(huge_kb)


def _thp_mode() -> str:
    """The kernel's transparent huge page mode: always, madvise or never."""
    text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    found = re.search(r"\[(\w+)\]", text)
    assert found is not None, text
    return found.group(1)


def test_numpy_asks_for_no_huge_pages() -> None:
    setting, huge_kb = _huge()
    assert setting == "0"
    if _thp_mode() == "madvise":  # huge pages only where asked for: none here
        assert huge_kb == 0


def test_the_users_huge_page_setting_wins() -> None:
    setting, huge_kb = _huge(NUMPY_MADVISE_HUGEPAGE="1")
    assert setting == "1"
    if _thp_mode() == "madvise":  # asked for, and given for most of the 64 MiB
        assert huge_kb >= 32 << 10


def test_spark_python_workers_get_them(spark: SparkSession) -> None:
    """The test session, like every session the project starts, passes them to its executors
    (``spark.executorEnv.*``), whatever the driver process's own environment holds."""
    names = ("MIMALLOC_PURGE_DELAY", "NUMPY_MADVISE_HUGEPAGE")
    got = (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda _: [__import__("os").environ.get(n) for n in names])
        .collect()
    )
    assert got == [["-1", "0"]]


# --------------------------------------------------------------------------- issue 30, item 2

NAMES = ("MIMALLOC_PURGE_DELAY", "NUMPY_MADVISE_HUGEPAGE")


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter whose environment has neither setting."""
    env = {k: v for k, v in os.environ.items() if k not in NAMES}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_importing_the_package_changes_nothing_in_the_process() -> None:
    code = (
        "import os, logging, json\n"
        "before = dict(os.environ); handlers = list(logging.getLogger().handlers)\n"
        "import acid_platform\n"
        "from acid_platform import Warehouse, StorageOptions\n"
        "import acid_platform.format, acid_platform.metastore, acid_platform.table\n"
        "import acid_platform.compaction, acid_platform.sql, acid_platform.streaming\n"
        "import acid_platform.cli\n"
        "changed = {k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)}\n"
        "print(json.dumps([sorted(changed), logging.getLogger().handlers == handlers]))\n"
    )
    assert _python(code) == "[[], true]"


def test_the_acid_program_opts_in_before_pyarrow_loads() -> None:
    code = (
        "import os, sys\n"
        "from acid_platform.cli import run\n"
        "assert 'pyarrow' not in sys.modules\n"
        "sys.argv = ['acid', '--version']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        f"print([os.environ.get(n) for n in {NAMES!r}])\n"
    )
    assert _python(code).splitlines()[-1] == "['-1', '0']"


def test_the_code_locations_opt_in() -> None:
    code = (
        f"import os\nimport acid_platform_example\nprint([os.environ.get(n) for n in {NAMES!r}])\n"
    )
    assert _python(code) == "['-1', '0']"
    template = Path(__file__).parents[1] / "acid_platform/cli/template/src/__PKG__/__init__.py.tmpl"
    assert "tune_memory()" in template.read_text()


def test_a_users_setting_wins_over_tune_memory() -> None:
    from acid_platform.runtime import MEMORY_SETTINGS, spark_executor_env, tune_memory

    env = {"MIMALLOC_PURGE_DELAY": "250"}
    assert tune_memory(env) == {"NUMPY_MADVISE_HUGEPAGE": "0"}
    assert env == {"MIMALLOC_PURGE_DELAY": "250", "NUMPY_MADVISE_HUGEPAGE": "0"}
    assert spark_executor_env({}) == {
        f"spark.executorEnv.{k}": v for k, v in MEMORY_SETTINGS.items()
    }
