"""Names deprecated in this release, kept one release more (README: "What changed in 0.1.0").

Each old name still works and warns with a :class:`DeprecationWarning` that names the new one.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

T = TypeVar("T")

#: The release that removes the deprecated names.
REMOVED_IN = "0.2.0"


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``; ``stacklevel`` 3 names the caller
    of the function that calls this one."""
    warnings.warn(
        f"{old} is deprecated: use {new} ({old} is removed in {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_argument(new_value: T, old_value: T, old: str, new: str, *, stacklevel: int = 4) -> T:
    """The value of an argument renamed from ``old`` to ``new``: ``new_value``, or
    ``old_value`` (with a :class:`DeprecationWarning`; ``stacklevel`` 4 names the caller of
    the function that calls this one); both given is a :class:`TypeError`."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise TypeError(f"give {new} only ({old} is its deprecated alias)")
    deprecated(old, new, stacklevel=stacklevel)
    return old_value


__all__ = ["REMOVED_IN", "deprecated", "renamed_argument"]
