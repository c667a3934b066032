"""Fixtures: the same warehouse on local disk and in a bucket of a real S3 server."""

from __future__ import annotations

from acid_platform_tests.helpers import acid_dirs_of, warehouse_fixture

#: Each test runs on local disk (SQLite metastore) and on the S3 server (SQLite metastore).
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=["sqlite", "s3"])

__all__ = ["acid_dirs_of", "wh"]
