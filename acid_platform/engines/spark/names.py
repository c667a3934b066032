"""The data source's default format name, in a module of its own: the package's ``__init__``
re-exports it and the data source reads it, neither importing the other."""

#: The default format name (``spark.read.format("acid")``).
NAME = "acid"

__all__ = ["NAME"]
