"""What the initiator, worker and cleaner share: the metastore, the file system, the settings.

They can be given a :class:`~acid_platform.table.TableWarehouse` or a bare
:class:`~acid_platform.metastore.Metastore` (a compactor process needs no engine).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow.fs as pafs

from acid_platform.compaction.config import CompactorConf
from acid_platform.format import Location, resolve
from acid_platform.metastore import Metastore, TableSpec
from acid_platform.table.partitions import partition_path


class _HasMetastore(Protocol):
    metastore: Metastore


@dataclass
class CompactionContext:
    """A metastore, an optional file system for table locations, and the compactor settings.

    ``filesystem_for`` maps a table location to the file system to use (a warehouse's own
    mapping); without it each location is resolved on its own (local path or URI).
    """

    metastore: Metastore
    conf: CompactorConf = field(default_factory=CompactorConf)
    filesystem_for: Callable[[str], pafs.FileSystem | None] | None = None

    @classmethod
    def of(
        cls,
        target: Metastore | _HasMetastore | CompactionContext,
        conf: CompactorConf | None = None,
    ) -> CompactionContext:
        """A context for a warehouse, a metastore or an existing context.

        Without ``conf``, a warehouse's own settings (``Warehouse.conf``, which ``SET`` changes)
        give the compactor settings; a bare metastore gets Hive's defaults.
        """
        if isinstance(target, CompactionContext):
            return target if conf is None else cls(target.metastore, conf, target.filesystem_for)
        if isinstance(target, Metastore):
            return cls(target, conf or CompactorConf())
        metastore = getattr(target, "metastore", None)
        if not isinstance(metastore, Metastore):
            raise TypeError(f"need a Warehouse or a Metastore, not {type(target).__name__}")
        finder = getattr(target, "filesystem_for", None)
        if conf is None:
            settings = getattr(target, "conf", None)
            conf = CompactorConf.from_conf(settings if isinstance(settings, Mapping) else None)
        return cls(metastore, conf, finder if callable(finder) else None)

    def location(self, spec: TableSpec, partition: str | None) -> Location:
        """The directory of a table (``partition`` None) or of one of its partitions."""
        fs = self.filesystem_for(spec.location) if self.filesystem_for is not None else None
        table = resolve(spec.location, fs)
        if not partition:
            return table
        return Location(table.filesystem, partition_path(table.path, partition))


def default_worker_id() -> str:
    """Hive's ``<host>-<thread id>`` worker name, with the pid to tell processes apart."""
    return f"{socket.gethostname()}-{os.getpid()}.{threading.get_ident() % 100_000}"
