"""Differential test of issue 13, item 6: random committed files are deleted, copied or
truncated; then the table is read, compacted and cleaned. A read either raises a typed
:class:`~acid_platform.errors.FileRecordError` or returns exactly the rows committed — never
fewer or more — and a compaction never runs over a damaged file (seeded, SQLite and
PostgreSQL)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import CompactionError, FileRecordError
from acid_platform.format.names import (
    ParsedDelta,
    base_dir_name,
    delete_delta_dir_name,
    delta_dir_name,
    parse_acid_dir_name,
)
from acid_platform.table import Table
from acid_platform_tests.helpers import open_warehouse

_REFUSALS = ("MissingFileError", "UnexpectedFileError", "FileSizeMismatchError")
CASES = [("sqlite", seed) for seed in range(24)] + [("postgresql", seed) for seed in range(6)]


@pytest.fixture
def wh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path, {"acid.lock.wait.timeout.s": "0"}, request.param) as w:
        yield w


def _rows(t: Table) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in t.scan().to_arrow().to_pylist())


def _history(wh: Warehouse, rng: random.Random) -> Table:
    t = wh.create_table(
        "t", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=rng.choice([1, 2])
    )
    next_id = 0
    for _ in range(rng.randint(3, 6)):
        op = rng.random()
        if op < 0.6 or next_id < 10:
            n = rng.randint(1, 20)
            t.insert([{"id": i, "v": f"v{i}"} for i in range(next_id, next_id + n)])
            next_id += n
        elif op < 0.8:
            t.delete(f"id % 5 = {rng.randint(0, 4)}")
        else:
            t.update({"v": "'u'"}, f"id % 3 = {rng.randint(0, 2)}")
    if rng.random() < 0.4:
        wh.compact("t", kind="minor", wait=True)  # not cleaned: obsolete deltas remain
    return t


def _damage(location: Path, rng: random.Random) -> str:
    """One random damage to a base/delta directory; returns what was done."""
    dirs = sorted(d for d in location.iterdir() if d.is_dir() and not d.name.startswith("_"))
    victim = rng.choice(dirs)
    files = sorted(victim.glob("bucket_*"))
    kind = rng.choice(["rmdir", "rm", "copy", "copy_attempt", "truncate", "copy_dir"])
    if kind == "rmdir" or not files:
        shutil.rmtree(victim)
        return f"removed {victim.name}"
    f = rng.choice(files)
    if kind == "rm":
        f.unlink()
    elif kind == "copy":
        shutil.copy(f, victim / "bucket_00007")
    elif kind == "copy_attempt":
        shutil.copy(f, victim / f"{f.name}_1")
    elif kind == "truncate":
        data = f.read_bytes()
        f.write_bytes(data[: rng.randrange(len(data))])
    else:  # the whole directory again under another name for the same write ids
        parsed = parse_acid_dir_name(victim.name)
        if isinstance(parsed, ParsedDelta):
            make = delete_delta_dir_name if parsed.is_delete else delta_dir_name
            stray = make(parsed.min_write_id, parsed.max_write_id, 9)
        else:  # a compactor base of txn 1 (committed): visible, same write ids
            stray = base_dir_name(parsed.write_id, 1) if parsed else victim.name + "_x"
        shutil.copytree(victim, location / stray)
    return f"{kind} {f.relative_to(location)}"


def _read_or_fail(t: Table, expected: list[tuple[int, str]], what: str) -> bool:
    """True when the read answered (and then exactly ``expected``); False on a typed error."""
    try:
        got = _rows(t)
    except FileRecordError:
        return False
    assert got == expected, f"{what}: {len(got)} rows read, {len(expected)} committed"
    return True


@pytest.mark.slow
@pytest.mark.parametrize(("wh", "seed"), CASES, indirect=["wh"], ids=[f"{b}-{s}" for b, s in CASES])
def test_damaged_files_never_read_or_compact_silently(wh: Warehouse, seed: int) -> None:
    _one_round(wh, random.Random(seed), f"{wh.metastore.dialect} seed {seed}")


def _one_round(wh: Warehouse, rng: random.Random, label: str) -> None:
    t = _history(wh, rng)
    expected = _rows(t)
    location = Path(t.spec.location)
    done = [_damage(location, rng) for _ in range(rng.randint(1, 2))]
    what = f"{label}: {done}"
    read_ok = _read_or_fail(t, expected, what)
    try:
        wh.compact("t", kind="major", wait=True)
        compacted = True
    except CompactionError as exc:
        assert any(e in str(exc) for e in _REFUSALS), f"{what}: {exc}"
        compacted = False
    assert not (compacted and not read_ok), f"{what}: compacted over damaged files"
    wh.clean()
    after = _read_or_fail(t, expected, what + " after compaction and cleaning")
    assert after or not compacted, f"{what}: a compacted table fails to read"
