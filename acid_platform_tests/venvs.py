"""A fresh virtual environment that sees this one's packages: a project installs into it with
``pip install -e`` as into a new one (its own package and entry points), without downloading
what this environment has already."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path


def fresh_venv(where: Path) -> Path:
    """A new virtual environment that also sees this one's packages, with the commands of
    those (``dg``, ``dagster``) as an install there would have written them."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    site = next((where / "lib").glob("python*/site-packages"))
    parent = sysconfig.get_paths()["purelib"]
    (site / "acid_parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    scripts = importlib.metadata.entry_points(group="console_scripts")
    for name in ("dg", "dagster", "dagster-webserver", "dagster-daemon"):
        (entry,) = scripts.select(name=name)
        module, _, function = entry.value.partition(":")
        script = where / "bin" / name
        script.write_text(  # as pip writes it (spawned children import it again)
            f"#!{where / 'bin' / 'python'}\nimport sys\nfrom {module} import {function}\n"
            f"if __name__ == '__main__':\n    sys.exit({function}())\n"
        )
        script.chmod(0o755)
    return where


def run(
    command: list[str], cwd: Path, venv: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` with ``venv`` active; it must succeed."""
    environ = {
        **os.environ,
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        **(env or {}),
    }
    environ.pop("PYTHONPATH", None)
    done = subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done
