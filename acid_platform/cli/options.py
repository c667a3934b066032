"""Options the ``acid`` commands share, and opening the warehouse they name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from acid_platform.cli.output import OutputFormat
from acid_platform.warehouse import Warehouse

WarehouseOption = Annotated[
    str,
    typer.Option(
        "--warehouse",
        "-w",
        envvar="ACID_WAREHOUSE",
        help="Warehouse directory or URI (made by `acid init`).",
    ),
]
MetastoreOption = Annotated[
    str | None,
    typer.Option(
        "--metastore-url",
        envvar="ACID_METASTORE_URL",
        help="SQLAlchemy URL of the metastore (default: SQLite in the warehouse).",
    ),
]
FormatOption = Annotated[
    OutputFormat, typer.Option("--format", help="Output format of query results.")
]


@contextmanager
def open_warehouse(
    path: str,
    metastore_url: str | None,
    *,
    create: bool = False,
    txn_timeout_s: float | None = None,
) -> Iterator[Warehouse]:
    """The warehouse at ``path``, closed at the end. Unless ``create``, one must exist there
    (else :class:`~acid_platform.errors.NoSuchWarehouseError`, and nothing is created).
    ``txn_timeout_s``: ``hive.txn.timeout`` of its metastore (default 300 s)."""
    wh = Warehouse.open(path, metastore_url, create=create, txn_timeout_s=txn_timeout_s)
    try:
        yield wh
    finally:
        wh.close()


__all__ = ["FormatOption", "MetastoreOption", "WarehouseOption", "open_warehouse"]
