"""acid_platform: Hive ACID v2 transactional tables for data lakes, in Python.

``from acid_platform import Warehouse`` is the entry point; the layers below
(``acid_platform.format``, ``.metastore``, ``.table``, ``.engines``, ``.sql``) import lazily so
that a Spark worker reading files pulls in only the format layer. Importing it changes nothing
in the process: no environment variable, no global setting, no logging configuration (the
allocator settings that processes this project starts opt into are in
:mod:`acid_platform.runtime`).

``docs/architecture.md`` maps the layers (lowest first: ``errors``, ``runtime``, ``format``,
``metastore``, ``table``, ``compaction``, ``engines``, ``streaming``, ``sql``, ``warehouse``,
``orchestration``, ``cli``); each package's docstring lists its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["StorageOptions", "Warehouse", "__version__"]

if TYPE_CHECKING:
    from acid_platform.format.storage import StorageOptions
    from acid_platform.warehouse import Warehouse


def __getattr__(name: str) -> Any:
    if name == "Warehouse":
        from acid_platform.warehouse import Warehouse

        return Warehouse
    if name == "StorageOptions":
        from acid_platform.format.storage import StorageOptions

        return StorageOptions
    raise AttributeError(f"module 'acid_platform' has no attribute {name!r}")
