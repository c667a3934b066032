"""Table names: ``db.table`` or ``table`` in the default database, validated and lower-cased."""

from __future__ import annotations

import pytest

from acid_platform.errors import InvalidNameError
from acid_platform.metastore.names import DEFAULT_DATABASE, split_table_name


def test_a_name_without_database_is_in_default() -> None:
    assert DEFAULT_DATABASE == "default"
    assert split_table_name("Employee") == ("default", "employee")
    assert split_table_name("Sales.Web_Sales") == ("sales", "web_sales")


@pytest.mark.parametrize("name", ["", "a.b.c", ".t", "db.", "1db.t", "t-1", None, 7])
def test_bad_table_names_are_typed_errors(name: object) -> None:
    with pytest.raises(InvalidNameError):
        split_table_name(name)
