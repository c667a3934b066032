"""Streaming files cut at their flush length: the length a ``_flush_length`` side file gives
(:func:`read_flush_length`, as Hive 4's ``AcidUtils.getLogicalLength``) and a read-only view of
a file's first bytes (:class:`TruncatedFile`) that the ORC reader opens instead of the file."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import FlushLengthError


def read_flush_length(filesystem: pafs.FileSystem, side_file: str) -> int | None:
    """The logical length of a streaming ORC file: the last big-endian long in its side file.

    As Hive 4's ``AcidUtils.getLogicalLength``: ``0`` means nothing is committed in the file yet
    (Hive's writer puts a 0 there before the file's first byte); a side file gone since the
    listing means its writer closed the file, which is then whole (``None``: read all of it);
    an empty or unreadable side file is an error (:class:`FlushLengthError`).
    """
    try:
        with filesystem.open_input_file(side_file) as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FlushLengthError(f"{side_file}: cannot read flush length ({exc})") from exc
    usable = len(data) - len(data) % 8
    if usable == 0:
        raise FlushLengthError(
            f"{side_file}: flush length side file is empty or shorter than 8 bytes"
        )
    length = int.from_bytes(data[usable - 8 : usable], "big", signed=True)
    if length < 0:
        raise FlushLengthError(f"{side_file}: flush length {length} is negative")
    return length


class TruncatedFile(io.RawIOBase):
    """A read-only view of the first ``length`` bytes of a random-access file."""

    def __init__(self, raw: pa.NativeFile, length: int) -> None:
        super().__init__()
        self._raw = raw
        self._length = min(length, raw.size())
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._length}[whence]
        self._pos = max(0, min(self._length, base + offset))
        return self._pos

    def tell(self) -> int:
        return self._pos

    def size(self) -> int:
        return self._length

    def read(self, n: int = -1) -> bytes:
        end = self._length if n is None or n < 0 else min(self._length, self._pos + n)
        data = self._raw.read_at(end - self._pos, self._pos) if end > self._pos else b""
        self._pos = end
        return bytes(data)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()
