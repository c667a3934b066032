"""The template (issue 28): ``acid new`` to a first successful ``dg launch``, ``dg check defs`` on
the example platform, and the example's code-location load time against a revision before the
template (``--before``, default the commit before the example moved out of the library).

* **new → launch, install excluded**: ``acid new``, a fresh virtual environment that sees this
  one's packages (``acid_platform_tests.venvs``) with the project installed into it
  (``pip install -e '.[dev]'``: only the project itself is built), then ``dg launch`` of the
  example table and its staging asset, with their 22 checks — the time a user waits once the
  dependencies are there. The install is timed apart.
* **install included (cold)**, ``--cold``: ``pip install -e '.[dev]'`` into an empty virtual
  environment, acid_platform from this checkout, everything else from the package index (pip's
  cache as it is), then ``dg launch``: the first hour's wait.
* ``dg check defs`` in the repository root (the example platform), and a fresh process's import
  and build of the example's definitions, now and at ``--before``.

Medians (and ranges) of ``--runs``. Writes ``benchmarks/out/template.md``.

    python -m benchmarks.bench_template [--runs 3] [--cold] [--before REV]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acid_platform_tests.topology import ROOT
from acid_platform_tests.venvs import fresh_venv, run

OUT = Path(__file__).resolve().parent / "out"
BEFORE = "6bcedec"  # main before issue 28: the example was acid_platform.definitions
LAUNCH = ["dg", "launch", "--assets", "staging/raw_orders,sales/orders"]
#: Without the editable install's import hook, so ``PYTHONPATH``'s checkout is what is imported.
PLAIN = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'ditable' not in repr(f)]; "
    "[sys.modules.pop(m) for m in list(sys.modules) if m.startswith('acid_platform')]; "
)
LOAD_NOW = PLAIN + "from acid_platform_example.definitions import build_defs; build_defs()"
LOAD_BEFORE = PLAIN + "import acid_platform.definitions"


def seconds(fn: object) -> float:
    began = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - began


def new_to_launch(tmp: Path, cold: bool) -> dict[str, float]:
    """``acid new``, the install, ``dg launch``: seconds of each."""
    project = tmp / "my-platform"
    acid = str(Path(sys.executable).with_name("acid"))
    spec = f"acid_platform @ file://{ROOT}"
    env = {"DAGSTER_HOME": str(tmp / "home"), "ACID_WAREHOUSE": str(tmp / "wh")}
    (tmp / "home").mkdir()
    out: dict[str, float] = {}
    # cold: acid_platform built from this checkout; warm: the installed one satisfies it
    given = ["--acid-platform", spec] if cold else []
    out["new"] = seconds(
        lambda: subprocess.run(
            [acid, "new", str(project), *given], check=True, stdout=subprocess.DEVNULL
        )
    )
    venv = project / ".venv"

    def install() -> None:
        if cold:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        else:
            fresh_venv(venv)
        run([str(venv / "bin" / "pip"), "install", "-q", "-e", ".[dev]"], project, venv)

    out["install"] = seconds(install)
    out["launch"] = seconds(lambda: run(LAUNCH, project, venv, env))
    out["new_to_launch"] = out["new"] + out["launch"]
    out["with_install"] = out["new"] + out["install"] + out["launch"]
    return out


def check_defs(tmp: Path) -> float:
    env = {"DAGSTER_HOME": str(tmp), "ACID_WAREHOUSE": str(tmp / "wh")}
    return seconds(lambda: run(["dg", "check", "defs"], ROOT, Path(sys.prefix), env))


def load(code: str, path: Path) -> float:
    """A fresh process importing ``code`` with ``path`` first on its path (interpreter start
    subtracted)."""
    env = {"PYTHONPATH": str(path), "ACID_WAREHOUSE": "/tmp/acid-bench-wh"}

    def go(text: str) -> float:
        run_it = [sys.executable, "-c", text]
        return seconds(lambda: subprocess.run(run_it, check=True, env=env, cwd=path))

    return go(code) - go(PLAIN)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f}–{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--before", default=BEFORE)
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            rounds.append(new_to_launch(Path(tmp), cold=False))
    cold: dict[str, float] | None = None
    if args.cold:
        with tempfile.TemporaryDirectory() as tmp:
            cold = new_to_launch(Path(tmp), cold=True)
    checks = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            checks.append(check_defs(Path(tmp)))
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before),
                        args.before], check=True)  # fmt: skip
        try:
            loads_before = [load(LOAD_BEFORE, before) for _ in range(args.runs)]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)])
    loads_now = [load(LOAD_NOW, ROOT) for _ in range(args.runs)]

    def col(key: str) -> list[float]:
        return [r[key] for r in rounds]

    lines = [
        "## The template: `acid new` to a first `dg launch` (issue 28)",
        "",
        f"Medians (ranges) of {args.runs} runs. The launch materializes the example table and its "
        "staging asset with their 22 checks (Dagster's multiprocess executor).",
        "",
        "| | seconds |",
        "|---|---|",
        f"| `acid new` | {spread(col('new'))} |",
        f"| install into a fresh venv that sees the installed packages | {spread(col('install'))} |",
        f"| first `dg launch` | {spread(col('launch'))} |",
        f"| **`acid new` → first successful `dg launch`, install excluded** | {spread(col('new_to_launch'))} |",
        f"| `acid new` → first successful `dg launch`, that install included | {spread(col('with_install'))} |",
    ]
    if cold is not None:
        lines += [
            f"| cold install (empty venv, packages from the index, pip's cache as it was) | {cold['install']:.1f} s |",
            f"| **`acid new` → first successful `dg launch`, cold install included** | {cold['with_install']:.1f} s |",
        ]
    lines += [
        f"| `dg check defs` on the example platform (repository root) | {spread(checks)} |",
        f"| example code-location load (import + build), before (`{args.before}`: `acid_platform.definitions`) | {spread(loads_before)} |",
        f"| example code-location load now (`acid_platform_example`, defs folder + components) | {spread(loads_now)} |",
        "",
    ]
    OUT.mkdir(exist_ok=True)
    (OUT / "template.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
