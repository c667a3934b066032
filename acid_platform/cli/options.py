"""Options the ``acid`` commands share, and opening the warehouse they name.

Light on purpose: every command's options are built when the program starts (``acid --help``
too), so this module imports typer and nothing heavy; the warehouse (pyarrow, the metastore,
the SQL engine) is imported by :func:`open_warehouse`, when a command runs."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from acid_platform.warehouse import Warehouse


class OutputFormat(enum.StrEnum):
    """How query results are printed: ``table`` (a table when it fits the terminal, else one
    record per row), ``vertical`` (always one record per row, psql's ``\\x``), ``json`` or
    ``csv``."""

    table = "table"
    vertical = "vertical"
    json = "json"
    csv = "csv"


WarehouseOption = Annotated[
    str,
    typer.Option(
        "--warehouse",
        "-w",
        envvar="ACID_WAREHOUSE",
        metavar="PATH",
        help="Warehouse directory or URI (made by `acid init`).",
    ),
]
MetastoreOption = Annotated[
    str | None,
    typer.Option(
        "--metastore-url",
        envvar="ACID_METASTORE_URL",
        metavar="URL",
        help="SQLAlchemy URL of the metastore (default: SQLite in the warehouse).",
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        help="How rows print: a table when it fits the terminal (else one record per row), "
        "vertical (always records), json or csv.",
    ),
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
    from acid_platform.warehouse import Warehouse

    wh = Warehouse.open(path, metastore_url, create=create, txn_timeout_s=txn_timeout_s)
    try:
        yield wh
    finally:
        wh.close()


__all__ = ["FormatOption", "MetastoreOption", "OutputFormat", "WarehouseOption", "open_warehouse"]
