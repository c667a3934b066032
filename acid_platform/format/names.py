"""Names of ACID directories and files: build them and parse them back.

A partition directory of a Hive ACID table holds ``base_<W>[_v<T>]``,
``delta_<min>_<max>[_<stmt>][_v<T>]`` and ``delete_delta_<min>_<max>[_<stmt>][_v<T>]``
directories, each holding ``bucket_<N>[_<attempt>]`` ORC files, and maybe "original" files
(``000000_0``, ``000002_0_copy_1``) left from before the table became transactional.

Write ids and visibility txn ids are printed ``%07d`` and statement ids ``%04d``, as Hive does;
numbers wider than the padding are printed in full. On read numbers are parsed as Java longs, so
the padding does not matter (``delta_00061_61`` is write id 61).

>>> delta_dir_name(1, 1, 0)
'delta_0000001_0000001_0000'
>>> parse_acid_dir_name("base_0000005_v0000019")
ParsedBase(write_id=5, visibility_txn_id=19)
>>> bucket_file_name(1)
'bucket_00001'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acid_platform.errors import InvalidNameError

ORC_ACID_VERSION_FILE = "_orc_acid_version"
"""One-byte file (ASCII ``2``) written into every base/delta by Hive 3+ ACID writers."""
METADATA_ACID_FILE = "_metadata_acid"
"""Small JSON file telling a compactor base (``compacted``) or a LOAD DATA dir (``raw``)."""
FLUSH_LENGTH_SUFFIX = "_flush_length"
"""Suffix of the streaming side file holding the committed length of a bucket file."""
BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
BUCKET_PREFIX = "bucket_"
VISIBILITY_PREFIX = "_v"
COPY_KEYWORD = "_copy_"

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

_WRITE_ID_DIGITS = 7
_STATEMENT_DIGITS = 4
_BUCKET_DIGITS = 5
_LEGACY_BUCKET_DIGITS = 6


@dataclass(frozen=True)
class ParsedBase:
    """A ``base_<write_id>[_v<visibility_txn_id>]`` directory name.

    ``visibility_txn_id`` 0 means "no suffix" (always visible); Hive 4's compactor writes the id
    of the transaction it ran in.

    >>> ParsedBase(5, 19).name
    'base_0000005_v0000019'
    """

    write_id: int
    visibility_txn_id: int = 0

    def __post_init__(self) -> None:
        _check_long("write id", self.write_id)
        _check_long("visibility txn id", self.visibility_txn_id)

    @property
    def name(self) -> str:
        """The canonical directory name."""
        return base_dir_name(self.write_id, self.visibility_txn_id)


@dataclass(frozen=True)
class ParsedDelta:
    """A ``delta_…`` or ``delete_delta_…`` directory name.

    ``statement_id`` -1 means the name has no statement part (minor-compacted or pre-1.3 deltas).

    >>> ParsedDelta(1, 1, 0, is_delete=True).name
    'delete_delta_0000001_0000001_0000'
    """

    min_write_id: int
    max_write_id: int
    statement_id: int = -1
    visibility_txn_id: int = 0
    is_delete: bool = False

    def __post_init__(self) -> None:
        _check_long("min write id", self.min_write_id)
        _check_long("max write id", self.max_write_id)
        _check_long("visibility txn id", self.visibility_txn_id)
        if not INT_MIN <= self.statement_id <= INT_MAX:
            raise InvalidNameError(f"statement id {self.statement_id} does not fit a Java int")

    @property
    def name(self) -> str:
        """The canonical directory name."""
        make = delete_delta_dir_name if self.is_delete else delta_dir_name
        return make(self.min_write_id, self.max_write_id, self.statement_id, self.visibility_txn_id)

    @property
    def has_statement_id(self) -> bool:
        """Whether the name carries a statement id (Hive reports 0 when it does not)."""
        return self.statement_id >= 0

    @property
    def may_contain_side_file(self) -> bool:
        """Whether ``_flush_length`` side files count here.

        Only streaming output may have them: an insert delta spanning several write ids that no
        compactor wrote (no visibility suffix).
        """
        return (
            not self.is_delete
            and self.min_write_id != self.max_write_id
            and self.visibility_txn_id <= 0
        )


@dataclass(frozen=True)
class OriginalFileName:
    """An original (pre-ACID) file name ``<bucket>_<n>[_copy_<copy_number>]``."""

    bucket_id: int
    copy_number: int = 0


def parse_acid_dir_name(name: str) -> ParsedBase | ParsedDelta | None:
    """Parse a base or delta directory name; ``None`` for anything else.

    Numbers are read as Java longs (sign allowed, padding irrelevant); the statement id as a Java
    int. A name that starts like an ACID directory but does not parse (``delta_x_y``,
    ``base_``) also gives ``None`` here; :func:`acid_platform.format.acid_state.acid_state` refuses
    such a directory loudly, as Hive's and Trino's parsers fail on it.

    >>> parse_acid_dir_name("delta_0000063_63")
    ParsedDelta(min_write_id=63, max_write_id=63, statement_id=-1, visibility_txn_id=0, is_delete=False)
    >>> parse_acid_dir_name("000000_0") is None
    True
    """
    if name.startswith(BASE_PREFIX):
        return _parse_base(name)
    if name.startswith(DELETE_DELTA_PREFIX):
        return _parse_delta(name, DELETE_DELTA_PREFIX)
    if name.startswith(DELTA_PREFIX):
        return _parse_delta(name, DELTA_PREFIX)
    return None


def is_acid_dir_name(name: str) -> bool:
    """Whether ``name`` is a well-formed base, delta or delete delta directory name."""
    return parse_acid_dir_name(name) is not None


def looks_like_acid_dir_name(name: str) -> bool:
    """Whether ``name`` starts like a base/delta/delete delta directory (parsable or not)."""
    return name.startswith((BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX))


def base_dir_name(write_id: int, visibility_txn_id: int = 0) -> str:
    """``base_0000005``, or ``base_0000005_v0000019`` with a visibility txn id.

    >>> base_dir_name(1234567890)
    'base_1234567890'
    """
    return _with_visibility(f"{BASE_PREFIX}{_pad(write_id, _WRITE_ID_DIGITS)}", visibility_txn_id)


def delta_dir_name(
    min_write_id: int, max_write_id: int, statement_id: int = -1, visibility_txn_id: int = 0
) -> str:
    """``delta_0000001_0000001_0000``; statement id -1 leaves the statement part out.

    >>> delta_dir_name(1, 2, visibility_txn_id=19)
    'delta_0000001_0000002_v0000019'
    """
    return _delta_name(DELTA_PREFIX, min_write_id, max_write_id, statement_id, visibility_txn_id)


def delete_delta_dir_name(
    min_write_id: int, max_write_id: int, statement_id: int = -1, visibility_txn_id: int = 0
) -> str:
    """``delete_delta_0000001_0000001_0000``; same rules as :func:`delta_dir_name`."""
    return _delta_name(
        DELETE_DELTA_PREFIX, min_write_id, max_write_id, statement_id, visibility_txn_id
    )


def bucket_file_name(bucket_id: int, attempt_id: int | None = None) -> str:
    """``bucket_00001``, or ``bucket_00001_0`` with an attempt id (direct insert).

    >>> bucket_file_name(3, 0)
    'bucket_00003_0'
    """
    if bucket_id < 0:
        raise InvalidNameError(f"bucket id {bucket_id} is negative")
    name = f"{BUCKET_PREFIX}{_pad(bucket_id, _BUCKET_DIGITS)}"
    if attempt_id is None:
        return name
    if attempt_id < 0:
        raise InvalidNameError(f"attempt id {attempt_id} is negative")
    return f"{name}_{attempt_id}"


def parse_bucket_file_name(name: str) -> tuple[int, int | None] | None:
    """``(bucket_id, attempt_id)`` of a bucket file name; ``None`` for other names.

    Side files (``bucket_00000_flush_length``) are not bucket files.

    >>> parse_bucket_file_name("bucket_00001_2")
    (1, 2)
    >>> parse_bucket_file_name("bucket_00001_flush_length") is None
    True
    """
    match = _BUCKET_RE.fullmatch(name)
    if match is None:
        return None
    bucket_id = int(match.group(1))
    attempt_id = None if match.group(2) is None else int(match.group(2))
    if bucket_id > INT_MAX or (attempt_id is not None and attempt_id > INT_MAX):
        return None
    return bucket_id, attempt_id


def flush_length_file_name(bucket_file_name: str) -> str:
    """The side file of a bucket file (a name or a path): ``bucket_00000_flush_length``."""
    return bucket_file_name + FLUSH_LENGTH_SUFFIX


def original_file_name(bucket_id: int, copy_number: int = 0) -> str:
    """Hive's old-style file name ``000001_0`` (``000001_0_copy_2`` for copy 2)."""
    if bucket_id < 0 or copy_number < 0:
        raise InvalidNameError(f"bucket id {bucket_id} / copy number {copy_number} is negative")
    name = f"{_pad(bucket_id, _LEGACY_BUCKET_DIGITS)}_0"
    return f"{name}{COPY_KEYWORD}{copy_number}" if copy_number else name


def parse_original_file_name(name: str) -> OriginalFileName | None:
    """Parse ``000000_0`` / ``000002_0_copy_1``; ``None`` for other names.

    The bucket id is the number before the first ``_``.

    >>> parse_original_file_name("000002_0_copy_1")
    OriginalFileName(bucket_id=2, copy_number=1)
    """
    match = _ORIGINAL_RE.fullmatch(name)
    if match is None:
        return None
    bucket_id = int(match.group(1))
    copy_number = 0 if match.group(2) is None else int(match.group(2))
    if bucket_id > INT_MAX or copy_number > INT_MAX:
        return None
    return OriginalFileName(bucket_id, copy_number)


def is_hidden(name: str) -> bool:
    """Hadoop's hidden-file rule: the name starts with ``_`` or ``.``."""
    return name.startswith(("_", "."))


# --------------------------------------------------------------------------- helpers

# ASCII digits only: Python's \d also matches other scripts' digits, Java's parseLong does not.
_BUCKET_RE = re.compile(r"bucket_([0-9]+)(?:_([0-9]+))?")
_ORIGINAL_RE = re.compile(r"([0-9]+)_[0-9]+(?:_copy_([0-9]+))?")
_LONG_RE = re.compile(r"[+-]?[0-9]+")


def _parse_base(name: str) -> ParsedBase | None:
    rest = name[len(BASE_PREFIX) :]
    visibility = 0
    idx = rest.find(VISIBILITY_PREFIX)
    if idx >= 0:
        parsed_visibility = _parse_long(rest[idx + len(VISIBILITY_PREFIX) :])
        if parsed_visibility is None:
            return None
        visibility, rest = parsed_visibility, rest[:idx]
    write_id = _parse_long(rest)
    if write_id is None:
        return None
    return ParsedBase(write_id, visibility)


def _parse_delta(name: str, prefix: str) -> ParsedDelta | None:
    # Same steps as Hive's ParsedDeltaLight.parse: cut "_v<T>" first, then split on "_".
    visibility = 0
    idx = name.find(VISIBILITY_PREFIX)
    if idx >= 0:
        parsed_visibility = _parse_long(name[idx + len(VISIBILITY_PREFIX) :])
        if parsed_visibility is None:
            return None
        visibility, name = parsed_visibility, name[:idx]
    parts = name[len(prefix) :].split("_")
    if len(parts) not in (2, 3):
        return None
    min_write_id = _parse_long(parts[0])
    max_write_id = _parse_long(parts[1])
    statement_id = _parse_long(parts[2]) if len(parts) == 3 else -1
    if min_write_id is None or max_write_id is None or statement_id is None:
        return None
    if not INT_MIN <= statement_id <= INT_MAX:
        return None
    return ParsedDelta(
        min_write_id, max_write_id, statement_id, visibility, prefix == DELETE_DELTA_PREFIX
    )


def _parse_long(text: str) -> int | None:
    if _LONG_RE.fullmatch(text) is None:
        return None
    value = int(text)
    return value if LONG_MIN <= value <= LONG_MAX else None


def _check_long(what: str, value: int) -> None:
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidNameError(f"{what} {value} does not fit a Java long")


def _pad(value: int, digits: int) -> str:
    # Java's %0Nd: the width counts the sign, wider numbers are printed in full.
    return f"{value:0{digits}d}"


def _with_visibility(name: str, visibility_txn_id: int) -> str:
    if visibility_txn_id == 0:
        return name
    return f"{name}{VISIBILITY_PREFIX}{_pad(visibility_txn_id, _WRITE_ID_DIGITS)}"


def _delta_name(
    prefix: str, min_write_id: int, max_write_id: int, statement_id: int, visibility_txn_id: int
) -> str:
    name = f"{prefix}{_pad(min_write_id, _WRITE_ID_DIGITS)}_{_pad(max_write_id, _WRITE_ID_DIGITS)}"
    if statement_id != -1:
        name = f"{name}_{_pad(statement_id, _STATEMENT_DIGITS)}"
    return _with_visibility(name, visibility_txn_id)
