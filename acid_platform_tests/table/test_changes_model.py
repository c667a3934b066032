"""The change feed against a model (hypothesis): random INSERT / UPDATE / DELETE / MERGE
statements (Python API and SQL), multi-statement transactions committed or rolled back, and
minor compactions with cleaning, on a partitioned, bucketed table; then a major compaction.

The model knows nothing of files: it keeps the table's row versions and, per committed write
id, the versions it added and removed (a version added and removed by one write id was never
visible). ``changes(a, b)`` must give exactly the model's changes of the write ids in ``(a, b]``
— compared as multisets of (write id, change type, row), without and with ``key="id"`` — before
and after each minor compaction; after the major compaction a range below the base raises
:class:`~acid_platform.errors.ChangeHistoryUnavailableError` and a range above it still agrees.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from acid_platform import Warehouse
from acid_platform.errors import ChangeHistoryUnavailableError
from acid_platform.table import Table, lit

Row = tuple[int, int, str, int]  # id, v, s, p
#: Examples per run (``ACID_CHANGES_EXAMPLES``; more run the same code).
EXAMPLES = int(os.environ.get("ACID_CHANGES_EXAMPLES", "25"))
TABLE = (
    "CREATE TABLE t (id int, v int, s string) PARTITIONED BY (p int) "
    "CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true')"
)


@dataclass
class Model:
    """Row versions (version id -> row) and the committed changes, (write id, kind, row)."""

    live: dict[int, Row] = field(default_factory=dict)
    changes: list[tuple[int, str, Row]] = field(default_factory=list)
    next_version: int = 0
    saved: dict[int, Row] = field(default_factory=dict)
    added: set[int] = field(default_factory=set)
    removed: dict[int, Row] = field(default_factory=dict)

    def begin(self) -> None:
        self.saved, self.added, self.removed = dict(self.live), set(), {}

    def add(self, row: Row) -> None:
        self.live[self.next_version] = row
        self.added.add(self.next_version)
        self.next_version += 1

    def remove(self, version: int) -> None:
        row = self.live.pop(version)
        if version in self.added:
            self.added.discard(version)  # added and removed by one write id: never visible
        else:
            self.removed[version] = row

    def commit(self, write_id: int | None) -> None:
        new = [(write_id, "insert", self.live[v]) for v in self.added]
        new += [(write_id, "delete", row) for row in self.removed.values()]
        assert write_id is not None or not new, "changes were made but no write id was used"
        self.changes += [(w, k, r) for w, k, r in new if w is not None]

    def abort(self) -> None:
        self.live = self.saved

    def expected(
        self, after: int, upto: int, key: bool, part: int | None = None
    ) -> Counter[tuple[Any, ...]]:
        """The changes of ``(after, upto]`` (in partition ``part`` only, if given); with ``key``
        a delete and an insert of one write id, partition and id pair up when they are the
        only ones."""
        out = [
            (w, k, r)
            for w, k, r in self.changes
            if after < w <= upto and (part is None or r[3] == part)
        ]
        if key:
            groups = Counter((w, r[3], r[0], k) for w, k, r in out)
            paired = {
                (w, p, i)
                for (w, p, i, _k) in groups
                if groups[(w, p, i, "delete")] == 1 and groups[(w, p, i, "insert")] == 1
            }
            names = {"delete": "update_preimage", "insert": "update_postimage"}
            out = [(w, names[k] if (w, r[3], r[0]) in paired else k, r) for w, k, r in out]
        return Counter((w, k, *r) for w, k, r in out)


# --------------------------------------------------------------------------- statements

ids = st.integers(0, 7)
values = st.integers(0, 40)
predicates = st.one_of(
    st.tuples(st.just("mod"), st.integers(2, 3), st.integers(0, 2)),
    st.tuples(st.just("gt"), values),
)
rows = st.lists(st.tuples(ids, values), min_size=1, max_size=4)
statements = st.one_of(
    st.tuples(st.just("insert"), rows),
    st.tuples(st.just("update"), predicates, st.integers(1, 5), st.booleans()),
    st.tuples(st.just("delete"), predicates),
    st.tuples(st.just("merge"), st.lists(st.tuples(ids, values), max_size=4, unique_by=lambda r: r[0]), st.booleans()),
)  # fmt: skip
Action = tuple[str, list[tuple[Any, ...]]]
actions: st.SearchStrategy[Action] = st.one_of(
    statements.map(lambda s: ("auto", [s])),
    st.tuples(st.sampled_from(["commit", "rollback"]), st.lists(statements, min_size=1, max_size=3)),
    st.just(("minor", [])),
)  # fmt: skip


def _where(pred: tuple[Any, ...]) -> tuple[str, Any]:
    if pred[0] == "mod":
        m, r = pred[1], pred[2] % pred[1]
        return f"id % {m} = {r}", lambda row: row[0] % m == r
    x = pred[1]
    return f"v > {x}", lambda row: row[1] > x


def run(wh: Warehouse, t: Table, model: Model, statement: tuple[Any, ...], txn: bool) -> None:
    """Run one statement on the table and on the model."""
    kind = statement[0]
    if kind == "insert":
        data = [{"id": i, "v": v, "s": f"i{v}", "p": i % 2} for i, v in statement[1]]
        t.insert(data)
        for r in data:
            model.add((r["id"], r["v"], r["s"], r["p"]))
    elif kind == "update":
        sql, holds = _where(statement[1])
        k = statement[2]
        if statement[3] and not txn:
            wh.sql(f"UPDATE t SET v = v + {k}, s = 'u{k}' WHERE {sql}")
        else:
            t.update({"v": f"v + {k}", "s": lit(f"u{k}")}, sql)
        for version, row in list(model.live.items()):
            if holds(row):
                model.remove(version)
                model.add((row[0], row[1] + k, f"u{k}", row[3]))
    elif kind == "delete":
        sql, holds = _where(statement[1])
        t.delete(sql)
        for version, row in list(model.live.items()):
            if holds(row):
                model.remove(version)
    else:  # MERGE ON id: matched rows updated (or deleted when s.v < 10), new ids inserted
        source = [{"id": i, "v": v, "p": i % 2} for i, v in statement[1]]
        merge = t.merge(pa.Table.from_pylist(source, pa.schema([("id", pa.int32()), ("v", pa.int32()), ("p", pa.int32())])), "t.id = s.id")  # fmt: skip
        if statement[2]:
            merge = merge.when_matched_delete("s.v < 10")
        merge.when_matched_update({"v": "s.v", "s": lit("m")}).when_not_matched_insert(
            {"id": "s.id", "v": "s.v", "s": lit("n"), "p": "s.p"}
        ).execute()
        by_id = {r["id"]: r for r in source}
        matched = set()
        for version, row in list(model.live.items()):
            src = by_id.get(row[0])
            if src is None:
                continue
            matched.add(row[0])
            model.remove(version)
            if not (statement[2] and src["v"] < 10):
                model.add((row[0], src["v"], "m", row[3]))
        for r in source:
            if r["id"] not in matched:
                model.add((r["id"], r["v"], "n", r["p"]))


def high_watermark(wh: Warehouse) -> int:
    return wh.metastore.valid_write_ids(None, "default", "t").high_watermark


def feed(
    t: Table, after: int, upto: int, key: bool, part: int | None = None
) -> Counter[tuple[Any, ...]]:
    where = f"p = {part}" if part is not None else None
    table = t.changes(after, upto, key="id" if key else None, where=where).to_arrow()
    cols = ["_write_id", "_change_type", "id", "v", "s", "p"]
    return Counter(tuple(r[c] for c in cols) for r in table.select(cols).to_pylist())


def check(
    t: Table,
    model: Model,
    top: int,
    ranges: list[tuple[int, int]],
    start: int = 0,
    part: int | None = None,
) -> None:
    """The feed of ``(start, top]`` and of each of ``ranges`` (clipped to ``[start, top]``)
    agrees with the model, without and with a key (in partition ``part`` only, if given)."""
    kinds = Counter(k for (_w, k, *_r) in model.expected(start, top, key=True).elements())
    event(f"change types: {sorted(kinds)}")
    for a, b in [(start, top), *ranges]:
        a, b = (min(max(x, start), top) for x in (a, b))
        a, b = min(a, b), max(a, b)
        for key in (False, True):
            got, want = feed(t, a, b, key, part), model.expected(a, b, key, part)
            assert got == want, (a, b, key, part)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(actions, min_size=4, max_size=10),
    st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), min_size=2, max_size=4),
    st.booleans(),
)
def test_the_change_feed_agrees_with_the_model(
    script: list[Action],
    ranges: list[tuple[int, int]],
    major: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wh = Warehouse.open(Path(tmp) / "wh", conf={"acid.lock.wait.timeout.s": "0"})
        try:
            wh.sql(TABLE)
            t = wh.table("t")
            model = Model()
            for how, batch in script:
                if how == "minor":
                    wh.compact("t", kind="minor", wait=True)
                    wh.clean()
                    check(t, model, high_watermark(wh), [])
                    continue
                model.begin()
                before = high_watermark(wh)
                if how == "auto":
                    run(wh, t, model, batch[0], txn=False)
                else:
                    wh.transaction()
                    for statement in batch:
                        run(wh, t, model, statement, txn=True)
                    wh.commit() if how == "commit" else wh.rollback()
                top = high_watermark(wh)
                if how == "rollback":
                    model.abort()
                else:
                    model.commit(top if top > before else None)
            top = high_watermark(wh)
            check(t, model, top, ranges)
            if major:
                wh.compact("t", kind="major", wait=True)
                wh.clean()
                top = high_watermark(wh)  # lower when the cleaner forgot trailing aborted ids
                bases = [
                    int(d.name.split("_")[1]) for d in Path(t.location.path).glob("p=*/base_*")
                ]
                start = max(bases, default=0)
                event(f"history after the major compaction starts at {min(start, 3)}+")
                if start > 0:
                    with pytest.raises(ChangeHistoryUnavailableError) as caught:
                        t.changes(start - 1).to_arrow()
                    assert caught.value.earliest_write_id == start
                check(t, model, top, ranges, start)
        finally:
            wh.close()
