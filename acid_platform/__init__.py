"""acid_platform: Hive ACID v2 transactional tables for data lakes, in Python.

``from acid_platform import Warehouse`` is the entry point; the layers below
(``acid_platform.format``, ``.metastore``, ``.table``, ``.engines``, ``.sql``) import lazily so
that a Spark worker reading files pulls in only the format layer.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

#: pyarrow's allocator (mimalloc) hands freed pages back to the system after a short delay, so
#: the next stripe of a scan faults them in and zeroes them again: a scan after 10 MERGEs spent
#: ~15% of its time there (benchmarks/REPORT.md, issue 15). Freed memory is kept for reuse
#: instead, unless the user chose otherwise. mimalloc reads the setting once, when pyarrow
#: loads; every module of this package imports pyarrow lazily, after this line, and processes
#: started from here (Spark's JVM and its Python workers, the CLI's children) inherit it.
#: Processes keep their peak memory; set MIMALLOC_PURGE_DELAY (milliseconds) to return it.
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")
#: numpy asks the kernel for transparent huge pages (madvise) for every array of 4 MiB or more.
#: A statement's arrays live for milliseconds, and faulting in fresh 2 MiB pages for them cost
#: more than it saved: run in turn, a DELETE of 1% of store_sales SF1 took 0.13 s with it and
#: 0.09 s without, an UPDATE of 0.08% 0.84 s against 0.75 s (benchmarks/REPORT.md, issue 15).
#: numpy reads its documented switch once, when it is first imported; a user's own setting wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

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
