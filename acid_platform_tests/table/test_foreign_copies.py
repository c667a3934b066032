"""Issue 29, item 1: a directory copied in from another table (an operator's mistaken ``cp``, a
restore from the wrong backup) is never read. Another table's ``base_0000002``, compacted
``base_…_v…`` or compacted ``delta_0000001_0000002_v…`` claims write ids this table's writers
recorded: reads fail with a typed error naming it, the compactor refuses, the cleaner leaves it,
``acid fsck`` reports it and ``--repair`` moves it aside; then the table reads its own rows.
In the partition the copy lands in, or in one no write of the table ever wrote; and after DROP +
CREATE, from the table's former incarnation."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import CompactionError, UnexpectedFileError
from acid_platform.table import Table
from acid_platform.table.fsck import QUARANTINE, fsck_table
from acid_platform_tests.helpers import open_warehouse

ROWS = [{"id": i, "v": f"own{i}"} for i in range(4)]


@pytest.fixture(params=["sqlite", "postgresql"])
def wh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path, {"acid.lock.wait.timeout.s": "0"}, request.param) as w:
        yield w


def own_table(wh: Warehouse, partitioned: bool) -> Table:
    """Two writes of its own (write ids 1 and 2): delta_1_1 and delta_2_2."""
    parts = [("ds", "string")] if partitioned else []
    t = wh.create_table("t", [("id", "int"), ("v", "string")], partition_columns=parts)
    for chunk in (ROWS[:2], ROWS[2:]):
        t.insert([{**r, "ds": "a"} if partitioned else r for r in chunk])
    return t


def foreign_dir(wh: Warehouse, kind: str) -> Path:
    """A directory of another table covering its write ids 1-2."""
    other = wh.create_table("other", [("id", "int"), ("v", "string")])
    other.insert([{"id": 100, "v": "foreign"}])
    if kind == "base":  # INSERT OVERWRITE: base_0000002
        other.insert([{"id": 101, "v": "foreign"}], overwrite=True)
    else:
        other.insert([{"id": 101, "v": "foreign"}])
        wh.compact("other", kind="major" if kind == "base_v" else "minor", wait=True)
    location = Path(other.spec.location)
    prefix = {
        "base": "base_0000002",
        "base_v": "base_0000002_v",
        "delta_v": "delta_0000001_0000002_v",
    }
    (found,) = [d for d in location.iterdir() if d.name.startswith(prefix[kind])]
    return found


def rows(t: Table) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in t.scan().to_arrow().to_pylist())


@pytest.mark.parametrize("kind", ["base", "base_v", "delta_v"])
@pytest.mark.parametrize("partition", ["", "ds=a", "ds=never_written"])
def test_a_copied_directory_of_another_table_is_never_read(
    wh: Warehouse, kind: str, partition: str
) -> None:
    t = own_table(wh, partitioned=bool(partition))
    source = foreign_dir(wh, kind)
    target = Path(t.spec.location) / partition / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)
    own = sorted((r["id"], r["v"]) for r in ROWS)

    with pytest.raises(UnexpectedFileError, match=source.name) as raised:
        rows(t)
    assert raised.value.path.endswith(source.name)
    registered = partition != "ds=never_written"  # a directory no write made: no partition
    if registered:
        with pytest.raises(CompactionError, match="UnexpectedFileError"):
            wh.compact("t", partition or None, kind="major", wait=True)
    wh.clean()
    assert target.is_dir(), "the cleaner deleted a file it does not own"

    report = fsck_table(wh, "t")
    assert not report.ok
    assert [(p.kind, Path(p.path).name) for p in report.problems] == [("unexpected", source.name)]
    repaired = fsck_table(wh, "t", repair=True)
    assert repaired.ok and not target.exists()
    assert list((Path(t.spec.location) / QUARANTINE).rglob(source.name))  # moved, not deleted
    assert rows(t) == own
    if registered:
        wh.compact("t", partition or None, kind="major", wait=True)
        assert rows(t) == own


def test_a_copy_from_the_former_incarnation_is_never_read(wh: Warehouse, tmp_path: Path) -> None:
    t = own_table(wh, partitioned=False)
    wh.compact("t", kind="major", wait=True)
    (old,) = [d for d in Path(t.spec.location).iterdir() if d.name.startswith("base_0000002_v")]
    kept = tmp_path / "backup" / old.name
    shutil.copytree(old, kept)
    wh.sql("DROP TABLE t")
    again = wh.create_table("t", [("id", "int"), ("v", "string")])
    again.insert([{"id": 7, "v": "new"}])
    again.insert([{"id": 8, "v": "new"}])
    shutil.copytree(kept, Path(again.spec.location) / old.name)  # the wrong backup restored
    with pytest.raises(UnexpectedFileError, match=old.name):
        rows(again)
