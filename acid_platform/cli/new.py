"""``acid new PATH``: a new platform project of your own, in Dagster's ``dg`` layout.

Why a command of ours and not ``create-dagster project``: create-dagster writes an empty
project, and a platform needs the warehouse, a table and the tests to be there and to agree
with each other; ``acid new`` writes that project (it is ``dg``-compatible: ``[tool.dg]``,
``src/<pkg>/defs/`` autoloaded by ``load_from_defs_folder``), so every ``dg`` command works in
it from the first minute. What it writes (``acid_platform/cli/template/``, its Python files as
``*.py.tmpl``):

* ``pyproject.toml`` (``[tool.dg]``; dependencies on acid_platform and Dagster, ``dev`` extra
  with ``dg``, the webserver and pytest), ``README.md``, ``workspace.yaml``, ``dagster.yaml``,
  ``docker-compose.yml``, ``Dockerfile``, ``.gitignore``;
* ``src/<pkg>/definitions.py`` (the defs folder, plus the checks of every ACID table asset);
* ``src/<pkg>/defs/warehouse/defs.yaml`` (the warehouse component), ``defs/staging.py`` (a
  Python asset written by the ACID IO manager) and ``defs/orders/defs.yaml`` (a table
  component MERGEd from it);
* ``tests/test_platform.py``: the definitions load, the assets materialize, the checks pass.
"""

from __future__ import annotations

import importlib.resources
import keyword
import re
from pathlib import Path
from typing import Annotated

import typer

from acid_platform.cli.commands import app
from acid_platform.errors import InvalidNameError

#: Placeholders of the template's files and paths.
PKG, NAME, REQUIREMENT = "__PKG__", "__NAME__", "__ACID_REQUIREMENT__"
#: Renamed as written (a dotfile is not package data everywhere).
RENAMED = {"gitignore": ".gitignore"}
#: The template's Python files end in this (they are not modules of acid_platform).
SUFFIX = ".tmpl"


def package_name(name: str) -> str:
    """The Python package of a project called ``name`` (``my-platform`` -> ``my_platform``).

    >>> package_name("My-Platform 2")
    'my_platform_2'
    """
    pkg = re.sub(r"\W+", "_", name.strip().lower()).strip("_")
    if not pkg or pkg[0].isdigit() or keyword.iskeyword(pkg) or pkg.startswith("acid_platform"):
        raise InvalidNameError(
            f"{name!r} does not make a Python package name (letters, digits and _, not starting "
            "with a digit, not a keyword, not acid_platform)"
        )
    return pkg


def acid_requirement() -> str:
    """What the new project depends on: this acid_platform's minor version, with the Dagster
    platform and the PostgreSQL metastore driver (its docker-compose.yml shares one)."""
    from importlib.metadata import version

    major, minor, *_ = version("acid_platform").split(".")
    return f"acid_platform[dagster,postgres]>={major}.{minor},<{major}.{int(minor) + 1}"


def write_project(path: Path, name: str | None = None, requirement: str | None = None) -> Path:
    """Write a new project into ``path`` (absent or empty); returns its package directory."""
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} is not empty: acid new writes into a new directory")
    name = name or path.resolve().name
    pkg = package_name(name)
    values = {PKG: pkg, NAME: name, REQUIREMENT: requirement or acid_requirement()}
    template = importlib.resources.files("acid_platform.cli") / "template"
    with importlib.resources.as_file(template) as root:
        for source in sorted(root.rglob("*")):
            if source.is_dir() or "__pycache__" in source.parts:
                continue
            relative = source.relative_to(root)
            parts = [RENAMED.get(p, p).replace(PKG, pkg) for p in relative.parts]
            parts[-1] = parts[-1].removesuffix(SUFFIX)
            target = path.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text()
            for placeholder, value in values.items():
                text = text.replace(placeholder, value)
            target.write_text(text)
    return path / "src" / pkg


@app.command("new", short_help="Write a new platform project (a dg project).")
def new_command(
    path: Annotated[
        Path,
        typer.Argument(metavar="PATH", help="The new project's directory (absent or empty)."),
    ],
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="Project name (default: the directory's)."),
    ] = None,
    requirement: Annotated[
        str | None,
        typer.Option(
            "--acid-platform",
            metavar="REQUIREMENT",
            help="The acid_platform requirement written into pyproject.toml (default: this "
            "version's minor series; e.g. a path or URL to install from).",
        ),
    ] = None,
) -> None:
    """Make a new platform project of your own (a dg project: warehouse, one table, tests)."""
    from rich.markup import escape

    from acid_platform.cli.output import err, out

    try:
        package = write_project(path, name, requirement)
    except (FileExistsError, InvalidNameError) as exc:
        err.print(f"[red]acid new: {escape(str(exc))}[/]")
        raise typer.Exit(2) from exc
    shown = escape(str(path))
    out.print(f"a new platform in {shown} (package {escape(package.name)}); next:")
    out.print(f"  cd {shown}")
    out.print(escape("  python -m venv .venv && .venv/bin/pip install -e '.[dev]'"))
    out.print("  source .venv/bin/activate && dg check defs && dg dev")


__all__ = ["acid_requirement", "new_command", "package_name", "write_project"]
