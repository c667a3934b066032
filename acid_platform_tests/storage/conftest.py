"""Fixtures: the same warehouse on local disk and in a bucket of a real S3 server."""

from __future__ import annotations

import pyarrow.fs as pafs

from acid_platform import Warehouse
from acid_platform.format.fs import resolve
from acid_platform_tests.helpers import ACID_DIR_PREFIXES, warehouse_fixture

#: Each test runs on local disk (SQLite metastore) and on the S3 server (SQLite metastore).
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=["sqlite", "s3"])


def acid_dirs_of(wh: Warehouse, location: str) -> list[str]:
    """The base/delta/delete_delta directory names directly under ``location``, on whichever
    store the warehouse is."""
    loc = resolve(location, wh.filesystem_for(location))
    infos = loc.filesystem.get_file_info(pafs.FileSelector(loc.path, allow_not_found=True))
    return sorted(
        i.base_name
        for i in infos
        if i.type == pafs.FileType.Directory and i.base_name.startswith(ACID_DIR_PREFIXES)
    )
