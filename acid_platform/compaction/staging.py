"""Hive 3 compatible compaction output: staged in a hidden directory, renamed at commit.

Hive 4 names compaction output ``base_N_v<T>`` / ``delta_x_y_v<T>``: the ``_v<T>`` suffix (Hive's
``visibilityTxnId``, HIVE-20823) makes the output invisible until the compactor's txn ``T``
commits, on any file system. Hive 2.3 and 3.x readers cannot parse the suffix
(``NumberFormatException: For input string: "v0000005"``). With
``acid.compactor.hive3.compatible`` the output gets Hive 3's names instead — ``base_N``,
``delta_x_y``, ``delete_delta_x_y`` plus a ``_metadata_acid`` file saying ``compacted`` — and
is kept invisible the way Hive 3's compactor kept it:

1. the executor writes each output directory as ``_tmp_compactor_<T>_<name>``: hidden (a
   leading ``_``), so Hive, Trino and this project's readers never list it;
2. :func:`publish` renames it to ``<name>`` (one atomic directory rename each);
3. the worker records the files and commits ``T``.

Why a renamed but uncommitted (or never committed: ``kill -9`` after the rename) directory is
safe, where the ``_v`` suffix is not there to hide it:

* its rows are exactly the rows of the inputs it replaces under the compactor's snapshot, which
  stops below the lowest open write id: every write id it covers was already committed or
  aborted, and aborted rows are dropped. A reader choosing it instead of its inputs reads the
  same rows, never both: a base replaces the directories below it, a ``delta_x_y`` the deltas
  inside its range (Hive's and this project's selection).
* a base carries ``_metadata_acid`` (``compacted``): a reader whose snapshot still has a write
  id ``<= N`` open ignores it (Hive's ``isValidBase``), and reads the older directories, which
  stay until the cleaner's reader rule says no one needs them.
* the cleaner removes what the output makes obsolete only for a committed entry whose readers are
  gone, with its write ids capped at that entry's highest write id.
* a leftover staging directory (a crash before the rename) belongs to a txn that is no longer
  open; the cleaner deletes it (:func:`leftover_staging`).

A minor compaction over insert *and* delete deltas is written as one ``base_N`` (see
:mod:`.rewrite`): two directories cannot appear in one rename, and either one alone would hide
the other kind's inputs. A directory left renamed by a killed worker is unrecorded compactor output; the retried
compaction replaces it or, when it would write the very same name, keeps it
(:func:`publish`). Object stores have no rename: the setting is refused there
(:func:`require_rename`).

>>> staging_name(19, "base_0000005")
'_tmp_compactor_19_base_0000005'
>>> parse_staging_name("_tmp_compactor_19_base_0000005")
(19, 'base_0000005')
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pyarrow.fs as pafs

from acid_platform.errors import FileConflictError, RenameUnsupportedError
from acid_platform.format import (
    METADATA_ACID_FILE,
    AcidDir,
    AcidState,
    WrittenFile,
    parse_acid_dir_name,
)
from acid_platform.format.fs import basename, is_object_store, join, parent
from acid_platform.table.event_layout import EventLayout

STAGING_PREFIX = "_tmp_compactor_"
#: Hive 3's compactor marker (``AcidUtils.MetaDataFile``): a base/delta a compactor wrote.
COMPACTED_MARKER = json.dumps({"thisFileVersion": "0", "dataFormat": "compacted"}).encode()


def staging_name(txn_id: int, final_name: str) -> str:
    """The hidden name compactor txn ``txn_id`` writes ``final_name`` under."""
    return f"{STAGING_PREFIX}{txn_id}_{final_name}"


def parse_staging_name(name: str) -> tuple[int, str] | None:
    """``(txn id, final name)`` of a staging directory name; ``None`` for any other name."""
    if not name.startswith(STAGING_PREFIX):
        return None
    txn, sep, final = name[len(STAGING_PREFIX) :].partition("_")
    if not sep or not txn.isascii() or not txn.isdigit() or parse_acid_dir_name(final) is None:
        return None
    return int(txn), final


def final_path(staged: str) -> str:
    """Where a staging directory is renamed to."""
    parsed = parse_staging_name(basename(staged))
    if parsed is None:
        raise ValueError(f"{staged} is not a compactor staging directory")
    return join(parent(staged), parsed[1])


def output_dir(
    layout: EventLayout,
    path: str,
    kind: str,
    low: int,
    high: int,
    txn_id: int,
    hive3_names: bool,
    major: bool = False,
) -> str:
    """Where the executor writes an output directory: its Hive 4 name ``…_v<T>``, or with
    ``hive3_names`` the hidden staging directory of its Hive 3 name."""
    if not hive3_names:
        return layout.compacted_dir(path, kind, low, high, txn_id, major=major)
    final = layout.compacted_dir(path, kind, low, high, 0, major=major)
    return join(path, staging_name(txn_id, basename(final)))


def final_dir(out_dir: str) -> str:
    """The name an output directory is read under: a staging directory's final name."""
    return final_path(out_dir) if parse_staging_name(basename(out_dir)) else out_dir


def needs_one_base(state: AcidState) -> bool:
    """Whether a minor compaction under Hive 3 names would write ``delta_x_y`` *and*
    ``delete_delta_x_y``: it is written as ``base_N`` instead. Two directories cannot appear in
    one rename, and either one alone hides the other kind's inputs in its range (a reader takes
    ``delta_1_5`` for the whole of write ids 1..5, ``delete_delta_4_4`` included): a worker
    killed between the renames would bring deleted rows back. One base is one rename."""
    return bool(state.insert_deltas) and bool(state.delete_deltas)


def unless_named(deltas: tuple[AcidDir, ...], final: str) -> tuple[AcidDir, ...]:
    """No input left when the only one already has the output's Hive 3 name (a streaming batch,
    or an earlier compaction's output): it stays as it is, rather than be renamed onto."""
    return () if len(deltas) == 1 and deltas[0].path == final else deltas


def require_rename(filesystem: pafs.FileSystem, where: str) -> None:
    """Refuse Hive 3 compatible output on a file system without atomic directory rename."""
    if is_object_store(filesystem):
        raise RenameUnsupportedError(
            f"{where}: acid.compactor.hive3.compatible needs an atomic directory rename, which "
            f"the {filesystem.type_name} object store lacks; keep Hive 4's _v<txn> names there",
            where,
        )


def write_compacted_marker(filesystem: pafs.FileSystem, directory: str) -> None:
    """Write Hive 3's ``_metadata_acid`` (``compacted``) into an output directory."""
    with filesystem.open_output_stream(join(directory, METADATA_ACID_FILE)) as out:
        out.write(COMPACTED_MARKER)


def is_compacted_dir(filesystem: pafs.FileSystem, directory: str) -> bool:
    """Whether ``directory`` holds the ``compacted`` marker (compactor output)."""
    try:
        with filesystem.open_input_stream(join(directory, METADATA_ACID_FILE)) as f:
            data = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and str(data.get("dataFormat", "")).lower() == "compacted"


def publish(
    filesystem: pafs.FileSystem,
    staged_dirs: tuple[str, ...],
    files: tuple[WrittenFile, ...],
    step: Callable[[str], None] | None = None,
) -> tuple[tuple[str, ...], tuple[WrittenFile, ...]]:
    """Rename each staging directory to its final name; return the final directories and the
    written files (objects with a ``path``) moved with them.

    A final name that already exists is the same output renamed by a killed earlier attempt (it
    carries the ``compacted`` marker): it holds the same rows, readers may be reading it, so it
    stays and this copy is dropped (its files are then not returned: nothing new to record).
    Anything else under that name is a conflict (:class:`FileConflictError`).
    """
    finals: list[str] = []
    moved: list[WrittenFile] = []
    for staged in staged_dirs:
        final = final_path(staged)
        own = [f for f in files if parent(f.path) == staged]
        if filesystem.get_file_info(final).type != pafs.FileType.NotFound:
            if not is_compacted_dir(filesystem, final):
                raise FileConflictError(
                    f"{final}: exists and is not compactor output; cannot rename {staged} there",
                    final,
                )
            filesystem.delete_dir(staged)
        else:
            filesystem.move(staged, final)
            moved += [dataclasses.replace(f, path=join(final, basename(f.path))) for f in own]
        finals.append(final)
        if step is not None:
            step("worker.renamed_one")
    return tuple(finals), tuple(moved)


def leftover_staging(
    filesystem: pafs.FileSystem, path: str, is_open: Callable[[int], bool]
) -> list[str]:
    """Staging directories under partition ``path`` whose compactor txn is no longer open: a
    worker died (or failed) before renaming them; nothing reads them."""
    out = []
    for entry in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        parsed = parse_staging_name(entry.base_name)
        if entry.type == pafs.FileType.Directory and parsed is not None and not is_open(parsed[0]):
            out.append(entry.path)
    return sorted(out)


__all__ = [
    "COMPACTED_MARKER",
    "final_dir",
    "needs_one_base",
    "output_dir",
    "unless_named",
    "STAGING_PREFIX",
    "final_path",
    "is_compacted_dir",
    "leftover_staging",
    "parse_staging_name",
    "publish",
    "require_rename",
    "staging_name",
    "write_compacted_marker",
]
