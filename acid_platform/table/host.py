"""What a :class:`~acid_platform.table.table.Table` needs of the warehouse session it belongs
to (:class:`TableHost`; a ``TableWarehouse`` is one). The table layer's modules declare what
they need as protocols — a transaction (:class:`~.transaction.TransactionHost`), a statement
(:class:`~.statement.StatementHost`), a query (:class:`~.query.QueryHost`), a relocation — and
never import :mod:`.warehouse`, which imports them: no import circle, not even for types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from acid_platform.table.query import QueryHost
from acid_platform.table.statement import StatementHost

if TYPE_CHECKING:
    from acid_platform.table.native import NativeEngines
    from acid_platform.table.transaction import Transaction


class TableHost(StatementHost, QueryHost, Protocol):
    """A statement's and a query's needs, the native engines (Spark) that own some data, and
    what writers holding a table reach through it: a transaction, the partitions."""

    @property
    def native_engines(self) -> NativeEngines: ...

    def transaction(self) -> Transaction: ...

    def list_partitions(self, name: str) -> list[str]: ...


__all__ = ["TableHost"]
