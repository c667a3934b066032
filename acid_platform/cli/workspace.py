"""The code locations a project's ``workspace.yaml`` names, loaded in this process: what
``acid platform materialize`` runs, so that it runs what ``dagster dev -w workspace.yaml`` (and
``bash scripts/platform dev``) serves — the example platform in this repository, your module
once you name it there.

Each ``load_from`` entry is read as Dagster reads it: ``python_module`` (a module name, or
``module_name`` with ``attribute``, ``working_directory``, ``location_name``), ``python_file``
(a path, or ``relative_path`` with the same keys), ``python_package`` (``package_name``) and
``autoload_defs_module`` (a ``defs`` package loaded as ``dg.components.load_defs`` loads it).
Relative paths are the workspace file's directory's; a module imports from its
``working_directory`` (default: that directory). A ``grpc_server`` entry runs in a process of
its own, not here: it is refused, saying so. The ``Definitions`` of a module are its
``attribute`` when named, else the ``Definitions`` (or ``@definitions`` function) it holds.

Dagster and PyYAML are imported when a workspace is read, not with this module (``acid
--help`` stays light).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dagster import Definitions

#: The workspace file Dagster's commands and ``acid platform materialize`` read.
WORKSPACE_FILE = "workspace.yaml"
#: The ``load_from`` keys this module loads in process.
KINDS = ("python_module", "python_file", "python_package", "autoload_defs_module")


class WorkspaceError(ValueError):
    """A workspace file this process cannot load: unreadable, or naming what does not run here."""


@dataclass(frozen=True)
class CodeLocation:
    """One ``load_from`` entry: what to import (``target``: a module or package name, or a
    Python file's path), how (``kind``), from where (``working_directory``), and which attribute
    holds its ``Definitions`` (``None``: the one it holds)."""

    name: str
    kind: str
    target: str
    working_directory: Path
    attribute: str | None = None


def workspace_locations(path: Path) -> list[CodeLocation]:
    """The code locations of the workspace file at ``path``, in its order."""
    import yaml  # type: ignore[import-untyped]

    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise WorkspaceError(f"{path} is not YAML: {exc}") from None
    entries = config.get("load_from") if isinstance(config, dict) else None
    if not isinstance(entries, list) or not entries:
        raise WorkspaceError(f"{path} has no load_from list of code locations")
    base = path.resolve().parent
    return [_location(entry, base, path) for entry in entries]


def _location(entry: Any, base: Path, path: Path) -> CodeLocation:
    if isinstance(entry, dict) and "grpc_server" in entry:
        raise WorkspaceError(
            f"{path}: a grpc_server code location runs in its own process, not here: "
            "name its module with --module"
        )
    kinds = [k for k in KINDS if isinstance(entry, dict) and k in entry]
    if len(kinds) != 1:
        raise WorkspaceError(f"{path}: a load_from entry is not one of {', '.join(KINDS)}: {entry}")
    kind = kinds[0]
    value = entry[kind]
    settings: dict[str, Any] = value if isinstance(value, dict) else {}
    key = {"python_file": "relative_path", "python_package": "package_name"}.get(
        kind, "module_name"
    )
    target = value if isinstance(value, str) else settings.get(key)
    if not isinstance(target, str) or not target:
        raise WorkspaceError(f"{path}: the {kind} entry names no {key}: {entry}")
    if kind == "python_file":
        target = str((base / target).resolve())
    working = base / str(settings.get("working_directory") or ".")
    default_name = Path(target).stem if kind == "python_file" else target
    return CodeLocation(
        name=str(settings.get("location_name") or default_name),
        kind=kind,
        target=target,
        working_directory=working.resolve(),
        attribute=settings.get("attribute"),
    )


def load_location(location: CodeLocation) -> Definitions:
    """The ``Definitions`` of ``location``, imported in this process."""
    where = str(location.working_directory)
    if where not in sys.path:
        sys.path.insert(0, where)
    if location.kind == "python_file":
        module = _import_file(Path(location.target))
    else:
        module = importlib.import_module(location.target)
    if location.kind == "autoload_defs_module":
        from dagster import components

        return components.load_defs(module)
    return definitions_in(module, location.attribute)


def _import_file(path: Path) -> ModuleType:
    """The module of a Python file (its directory importable too, as Dagster does)."""
    if not path.is_file():
        raise WorkspaceError(f"no Python file {path}")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    loaded = sys.modules.get(path.stem)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return loaded
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise WorkspaceError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def definitions_in(module: ModuleType, attribute: str | None = None) -> Definitions:
    """``module``'s ``attribute`` (a ``Definitions``, or a function making one: an
    ``@definitions`` one), else the first ``Definitions`` it holds, else its ``@definitions``
    function's."""
    from dagster import Definitions

    if attribute:
        if not hasattr(module, attribute):
            raise WorkspaceError(f"module {module.__name__} has no attribute {attribute}")
        value = getattr(module, attribute)
        made = value if isinstance(value, Definitions) else value() if callable(value) else None
        if not isinstance(made, Definitions):
            raise WorkspaceError(f"{module.__name__}.{attribute} is not Dagster Definitions")
        return made
    values = list(vars(module).values())
    found = [v for v in values if isinstance(v, Definitions)]
    if found:
        return found[0]
    lazy = [v for v in values if type(v).__name__ == "LazyDefinitions"]
    if lazy:
        made = lazy[0]()
        if isinstance(made, Definitions):
            return made
    raise WorkspaceError(f"module {module.__name__} holds no Dagster Definitions")


__all__ = [
    "WORKSPACE_FILE",
    "CodeLocation",
    "WorkspaceError",
    "definitions_in",
    "load_location",
    "workspace_locations",
]
