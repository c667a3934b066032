"""Landing files: what lands in a landing location (a local directory or a URI, through
``pyarrow.fs``), and the identity each is loaded under.

A file's identity is its canonical URI, size and modification time (:attr:`LandingFile.key`),
and its content's SHA-256, recorded when it loads: the same file unchanged is the same source,
loaded once; a file rewritten in place (new size or time) is a new one. A local file rewritten
with its old size *and* modification time (``touch -d``, ``cp -p``) still changes its status
change time (``ctime``, which no user can set): its content is then hashed and, if it differs
from what was loaded, the identity gains ``|sha256=…`` and it loads as a new source. (Object
stores have no ``ctime``: there a rewrite is told by its size and the server-set modification
time.) A local file's URI is its resolved path (``file://`` URIs, relative paths,
symbolic links and ``..`` all spelled one way), so one file reached two ways is one source.
Names starting with ``.`` or ``_`` (hidden files, ``_SUCCESS`` markers, files still being
written under a temporary name) are not landing files. In a local landing directory, a
symbolic link whose target lies outside it is refused (named, never read), and a listing
never descends into a directory twice (links to directories are not followed), so a link loop
lists nothing twice.

>>> LandingFile("/landing/a.csv", 10, 1700000000000000000).key
'/landing/a.csv|size=10|mtime_ns=1700000000000000000'
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass

import pyarrow.fs as pafs

from acid_platform.errors import LandingFileError
from acid_platform.format.fs import Location, resolve
from acid_platform.metastore.model import Source


@dataclass(frozen=True)
class LandingFile:
    """One landing file as seen at one moment: URI (a local absolute path or a URI), size in
    bytes, modification time and (local files) status change time in nanoseconds; ``sha256``
    when its identity must name its content (a rewrite that kept size and time)."""

    uri: str
    size: int
    mtime_ns: int
    ctime_ns: int = 0
    sha256: str = ""

    @property
    def key(self) -> str:
        """The file's identity: ``uri|size=…|mtime_ns=…``, then ``|sha256=…`` if it has one."""
        key = f"{self.uri}|size={self.size}|mtime_ns={self.mtime_ns}"
        return f"{key}|sha256={self.sha256}" if self.sha256 else key

    @property
    def stamp(self) -> str:
        """What tells this version of the file from another without reading it:
        ``size:mtime_ns`` (``:ctime_ns`` added for a local file)."""
        stamp = f"{self.size}:{self.mtime_ns}"
        return f"{stamp}:{self.ctime_ns}" if self.ctime_ns else stamp

    @property
    def name(self) -> str:
        """The file name (the last part of the URI)."""
        return self.uri.partition("?")[0].rstrip("/").rsplit("/", 1)[-1]

    def same_version(self, other: LandingFile) -> bool:
        """Whether ``other`` (the same file looked at again) is this version of it: same size
        and modification time, and status change time where both know it."""
        return (self.size, self.mtime_ns) == (other.size, other.mtime_ns) and (
            not (self.ctime_ns and other.ctime_ns) or self.ctime_ns == other.ctime_ns
        )

    def source(self, sha256: str) -> Source:
        """The file as a :class:`~acid_platform.metastore.Source` to record with its load,
        ``sha256`` being the digest of the bytes loaded."""
        info = {"uri": self.uri, "size": self.size, "mtime_ns": self.mtime_ns, "sha256": sha256}
        return Source(self.key, info | ({"ctime_ns": self.ctime_ns} if self.ctime_ns else {}))

    def location(self) -> Location:
        """Where to read it (file system and path)."""
        return resolve(self.uri)


def canonical(uri: str | os.PathLike[str]) -> str:
    """A landing URI as identities spell it: a local path (or ``file://`` URI) resolved —
    absolute, symbolic links and ``..`` followed —, another URI as given.

    >>> canonical("file:///tmp/../tmp/x.csv") == canonical("/tmp/x.csv")
    True
    """
    text = os.fspath(uri)
    if text.startswith("file://"):
        text = text[len("file://") :] or "/"
    return text if "://" in text else os.path.realpath(text)


def stat_landing(uri: str | os.PathLike[str]) -> LandingFile:
    """The landing file at ``uri`` as it is now (:class:`LandingFileError` if it is missing or
    not a file)."""
    text = canonical(uri)
    if "://" not in text:  # a local file: one stat, with its status change time
        try:
            st = os.stat(text)
        except FileNotFoundError:
            raise LandingFileError(f"landing file {text} does not exist") from None
        except OSError as exc:
            raise LandingFileError(f"landing file {text} cannot be reached: {exc}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise LandingFileError(f"landing file {text} is not a file")
        return LandingFile(text, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    try:
        loc = resolve(text)
        info = loc.filesystem.get_file_info(loc.path)
    except (OSError, ValueError) as exc:
        raise LandingFileError(f"landing file {text} cannot be reached: {exc}") from exc
    if info.type == pafs.FileType.NotFound:
        raise LandingFileError(f"landing file {text} does not exist")
    if info.type != pafs.FileType.File:
        raise LandingFileError(f"landing file {text} is not a file")
    return LandingFile(text, int(info.size or 0), int(info.mtime_ns or 0))


def list_landing(
    landing: str | os.PathLike[str],
    pattern: str = "*",
    *,
    recursive: bool = False,
    refused: list[str] | None = None,
) -> list[LandingFile] | None:
    """The landing files under ``landing`` whose path relative to it matches the glob
    ``pattern``, oldest first (then by URI); ``None`` when ``landing`` does not exist.
    ``recursive`` descends into sub-directories (``pattern`` then sees ``dir/file``). Symbolic
    links leading out of a local ``landing`` are left out, and added to ``refused``."""
    base = canonical(landing)
    loc = resolve(base)
    fs = loc.filesystem
    info = fs.get_file_info(loc.path)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.Directory:
        raise LandingFileError(f"landing location {base} is not a directory")
    if "://" not in base:
        return _list_local(base, pattern, recursive, refused)
    root = loc.path.rstrip("/")
    found = []
    for entry in fs.get_file_info(pafs.FileSelector(root, recursive=recursive)):
        if entry.type != pafs.FileType.File:
            continue
        relative = entry.path[len(root) :].lstrip("/")
        if any(part.startswith((".", "_")) for part in relative.split("/")):
            continue
        if not fnmatch.fnmatchcase(relative, pattern):
            continue
        found.append(
            LandingFile(child_uri(base, relative), int(entry.size or 0), int(entry.mtime_ns or 0))
        )
    return sorted(found, key=lambda f: (f.mtime_ns, f.uri))


def _list_local(
    base: str, pattern: str, recursive: bool, refused: list[str] | None
) -> list[LandingFile]:
    """:func:`list_landing` of a local directory: links to directories not followed, links
    to files resolved (kept only inside ``base``), each file once."""
    found: dict[str, LandingFile] = {}
    for top, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_"))) if recursive else []
        for name in sorted(files):
            path = os.path.join(top, name)
            relative = os.path.relpath(path, base).replace(os.sep, "/")
            if any(part.startswith((".", "_")) for part in relative.split("/")):
                continue
            if not fnmatch.fnmatchcase(relative, pattern):
                continue
            target = os.path.realpath(path)
            if os.path.commonpath([target, base]) != base:
                if refused is not None:
                    refused.append(f"{path} -> {target} (outside the landing location {base})")
                continue
            try:
                st = os.stat(target)
            except OSError:  # vanished, or a dangling link
                continue
            if stat.S_ISREG(st.st_mode):
                found[target] = LandingFile(target, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return sorted(found.values(), key=lambda f: (f.mtime_ns, f.uri))


def child_uri(base: str, relative: str) -> str:
    """The URI of ``relative`` under the landing location ``base`` (a URI's query kept).

    >>> child_uri("s3://bucket/in?region=eu-west-1", "a.csv")
    's3://bucket/in/a.csv?region=eu-west-1'
    """
    if "://" not in base:
        return os.path.join(base, *relative.split("/"))
    head, sep, query = base.partition("?")
    return f"{head.rstrip('/')}/{relative}{sep}{query}"


__all__ = ["LandingFile", "canonical", "child_uri", "list_landing", "stat_landing"]
