"""Differential test: random INSERT / UPDATE / DELETE / MERGE / INSERT OVERWRITE statements and
multi-statement transactions (committed or rolled back) on a partitioned, bucketed ACID table,
against a plain in-memory oracle (a list of rows with SQL three-valued logic).

After every statement the table must hold exactly the oracle's rows, every ROW__ID must be
unique within its partition, and every row must sit in the bucket Hive's hash gives it.

``ACID_DIFF_STATEMENTS`` (default 320) sets the number of statements; thousands run the same
code, e.g. ``ACID_DIFF_STATEMENTS=5000 pytest acid_platform_tests/table/test_differential.py``.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import CardinalityViolationError
from acid_platform.format import bucket_for, decode_bucket
from acid_platform.table import Table, lit
from acid_platform.table.statement import StatementMetrics
from acid_platform_tests.helpers import open_warehouse
from acid_platform_tests.s3_server import S3Server

Row = dict[str, Any]
Pred = Callable[..., bool | None]
STATEMENTS = int(os.environ.get("ACID_DIFF_STATEMENTS", "320"))
EPISODE = 40  # statements per table, so scans stay small
BUCKETS = 3
COLS = [("id", "int"), ("v", "int"), ("s", "string")]


# --------------------------------------------------------------------------- 3-valued logic


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


def _cmp(x: Any, y: Any, op: Callable[[Any, Any], bool]) -> bool | None:
    return None if x is None or y is None else op(x, y)


@dataclass(frozen=True)
class Predicate:
    sql: str
    fn: Callable[[Row], bool | None]


def _atom(rng: random.Random, q: str = "") -> Predicate:
    """A predicate over one row; ``q`` qualifies columns (``t.``) for MERGE conditions."""
    kind = rng.randrange(6)
    if kind == 0:
        m = rng.randint(2, 4)
        r = rng.randrange(m)
        return Predicate(f"{q}id % {m} = {r}", lambda row: row["id"] % m == r)
    if kind == 1:
        x = rng.randint(-5, 60)
        return Predicate(f"{q}v > {x}", lambda row: _cmp(row["v"], x, lambda a, b: a > b))
    if kind == 2:
        x = rng.randrange(3)
        return Predicate(f"{q}p = {x}", lambda row: _cmp(row["p"], x, lambda a, b: a == b))
    if kind == 3:
        return Predicate(f"{q}s IS NULL", lambda row: row["s"] is None)
    if kind == 4:
        c = rng.choice("ab")
        return Predicate(f"{q}s = '{c}'", lambda row: _cmp(row["s"], c, lambda a, b: a == b))
    return Predicate(f"{q}p IS NULL", lambda row: row["p"] is None)


def _predicate(rng: random.Random, q: str = "") -> Predicate:
    a = _atom(rng, q)
    roll = rng.random()
    if roll < 0.5:
        return a
    b = _atom(rng, q)
    if roll < 0.7:
        return Predicate(f"({a.sql} AND {b.sql})", lambda r: _and(a.fn(r), b.fn(r)))
    if roll < 0.9:
        return Predicate(f"({a.sql} OR {b.sql})", lambda r: _or(a.fn(r), b.fn(r)))
    return Predicate(f"NOT ({a.sql})", lambda r: _not(a.fn(r)))


# --------------------------------------------------------------------------- the model


class Model:
    """The table (system under test) and its oracle, statement by statement."""

    def __init__(self, table: Table, rng: random.Random) -> None:
        self.table = table
        self.rng = rng
        self.rows: list[Row] = []
        self.committed: list[Row] = []
        self.next_id = 0

    # ----------------------------------------------------------------- statements
    def random_rows(self, n: int, *, fresh_ids: bool = False) -> list[Row]:
        rng = self.rng
        out = []
        for _ in range(n):
            if fresh_ids or rng.random() < 0.7:
                self.next_id += 1
                ident = self.next_id
            else:
                ident = rng.randint(1, max(self.next_id, 1))
            out.append(
                {
                    "id": ident,
                    "v": None if rng.random() < 0.1 else rng.randint(0, 50),
                    "s": rng.choice(["a", "b", None]),
                    "p": rng.choice([0, 1, 2, None]),
                }
            )
        return out

    def insert(self) -> None:
        rows = self.random_rows(self.rng.randint(1, 6))
        self.table.insert(rows)
        self.rows += [dict(r) for r in rows]

    def overwrite(self) -> None:
        rows = self.random_rows(self.rng.randint(0, 4))
        if not rows:
            rows = self.random_rows(1)
        self.table.insert(rows, overwrite=True)
        written = {r["p"] for r in rows}
        self.rows = [r for r in self.rows if r["p"] not in written] + [dict(r) for r in rows]

    def update(self) -> None:
        pred = _predicate(self.rng)
        k = self.rng.randint(1, 9)
        new_s = self.rng.choice(["a", "b", "c", None])
        out = self.table.update({"v": f"v + {k}", "s": lit(new_s)}, pred.sql)
        hit = [r for r in self.rows if pred.fn(r) is True]
        for r in hit:
            r["v"] = None if r["v"] is None else r["v"] + k
            r["s"] = new_s
        assert out.rows_updated == len(hit), pred.sql

    def delete(self) -> None:
        pred = _predicate(self.rng)
        out = self.table.delete(pred.sql)
        before = len(self.rows)
        self.rows = [r for r in self.rows if pred.fn(r) is not True]
        assert out.rows_deleted == before - len(self.rows), pred.sql

    def merge(self) -> None:
        rng = self.rng
        source = self.random_rows(rng.randint(0, 6))
        duplicate = rng.random() < 0.1 and source
        if not duplicate:  # unique on the ON key unless we want a cardinality violation
            seen: set[int] = set()
            source = [r for r in source if not (r["id"] in seen or seen.add(r["id"]))]  # type: ignore[func-returns-value]
        elif source:
            source.append(dict(source[0]))
        on_partition = rng.random() < 0.3
        on_sql = "t.id = s.id" + (" AND t.p = s.p" if on_partition else "")

        def on(t: Row, s: Row) -> bool | None:
            eq = _cmp(t["id"], s["id"], lambda a, b: a == b)
            return _and(eq, _cmp(t["p"], s["p"], lambda a, b: a == b)) if on_partition else eq

        clauses = self._random_clauses()
        schema = pa.schema(
            [("id", pa.int32()), ("v", pa.int32()), ("s", pa.string()), ("p", pa.int32())]
        )
        merger = self.table.merge(pa.Table.from_pylist(source, schema=schema), on_sql)
        for kind, pred, _ in clauses:
            cond = pred.sql if pred else None
            if kind == "update":
                merger.when_matched_update(
                    {"v": "s.v", "s": "concat(coalesce(t.s, ''), 'u')"}, cond
                )
            elif kind == "delete":
                merger.when_matched_delete(cond)
            elif kind == "insert":
                merger.when_not_matched_insert_all(cond)
            elif kind == "by_source_update":
                merger.when_not_matched_by_source_update({"v": "v + 100"}, cond)
            else:
                merger.when_not_matched_by_source_delete(cond)
        matches = {i: [s for s in source if on(t, s) is True] for i, t in enumerate(self.rows)}
        has_matched = any(k in ("update", "delete") for k, _, _ in clauses)
        if has_matched and any(len(m) > 1 for m in matches.values()):
            with pytest.raises(CardinalityViolationError):
                merger.execute()
            raise _Aborted()  # the statement failed: nothing written
        out = merger.execute()
        self._apply_merge(clauses, source, matches, out)

    def _random_clauses(self) -> list[tuple[str, Predicate | None, Predicate | None]]:
        """WHEN clauses in a random order, obeying Hive's rules: per pair (matched update /
        delete, by-source update / delete) the first one given has a predicate and the second
        one is implicitly ANDed with NOT(first predicate)."""
        rng = self.rng
        kinds = [
            k
            for k in ("update", "delete", "by_source_update", "by_source_delete")
            if rng.random() < 0.5
        ]
        if rng.random() < 0.7 or not kinds:
            kinds.append("insert")
        rng.shuffle(kinds)  # any order: statement ids and semantics must not depend on it
        clauses: list[tuple[str, Predicate | None, Predicate | None]] = []
        first: dict[str, Predicate | None] = {}
        for kind in kinds:
            if kind == "insert":
                pred = (
                    Predicate("s.v > 10", lambda r: _cmp(r["v"], 10, lambda a, b: a > b))
                    if rng.random() < 0.3
                    else None
                )
                clauses.append((kind, pred, None))
                continue
            group = "by_source" if kind.startswith("by_source") else "matched"
            pair = [
                k
                for k in kinds
                if k != "insert" and k.startswith("by_source") == (group == "by_source")
            ]
            if group in first:
                pred = _predicate(rng, "t.") if rng.random() < 0.4 else None
                clauses.append((kind, pred, first[group]))
            else:
                pred = _predicate(rng, "t.") if len(pair) == 2 or rng.random() < 0.4 else None
                first[group] = pred
                clauses.append((kind, pred, None))
        return clauses

    def _apply_merge(
        self,
        clauses: list[Any],
        source: list[Row],
        matches: dict[int, list[Row]],
        out: StatementMetrics,
    ) -> None:
        def fires(pred: Predicate | None, negated: Predicate | None, row: Row) -> bool:
            ok: bool | None = True if pred is None else pred.fn(row)
            if negated is not None:
                ok = _and(ok, _not(negated.fn(row)))  # Hive: AND NOT(<first predicate>)
            return ok is True

        matched = [c for c in clauses if c[0] in ("update", "delete")]
        by_source = [c for c in clauses if c[0].startswith("by_source")]
        inserts = [c for c in clauses if c[0] == "insert"]
        new_rows: list[Row] = []
        counts = {"updated": 0, "deleted": 0, "inserted": 0}
        for i, t in enumerate(self.rows):
            group = matched if matches[i] else by_source
            action = None
            for kind, pred, negated in group:
                if fires(pred, negated, t):
                    action = kind
                    break
            if action is None:
                new_rows.append(t)
            elif action.endswith("delete"):
                counts["deleted"] += 1
            elif action == "update":
                (s,) = matches[i]
                new_rows.append({**t, "v": s["v"], "s": (t["s"] or "") + "u"})
                counts["updated"] += 1
            else:
                new_rows.append({**t, "v": None if t["v"] is None else t["v"] + 100})
                counts["updated"] += 1
        matched_sources = {id(s) for m in matches.values() for s in m}
        for s in source:
            if id(s) in matched_sources:
                continue
            for _, pred, _ in inserts:
                if fires(pred, None, s):
                    new_rows.append(dict(s))
                    counts["inserted"] += 1
                    break
        self.rows = new_rows
        assert (
            out.rows_updated,
            out.rows_deleted,
            out.rows_inserted,
        ) == (
            counts["updated"],
            counts["deleted"],
            counts["inserted"],
        ), clauses

    # ----------------------------------------------------------------- checks
    def check(self, context: str) -> None:
        got = self.table.scan(with_row_id=True).to_arrow().to_pylist()
        key = _sort_key
        assert sorted((_plain(r) for r in got), key=key) == sorted(
            (_plain(r) for r in self.rows), key=key
        ), context
        seen: set[tuple[Any, ...]] = set()
        for r in got:
            rid = r["row__id"]
            k = (r["p"], rid["writeid"], rid["bucketid"], rid["rowid"])
            assert k not in seen, f"duplicate ROW__ID {k} after {context}"
            seen.add(k)
            assert decode_bucket(rid["bucketid"])[0] == bucket_for([r["id"]], ["int"], BUCKETS), (
                context
            )


class _Aborted(Exception):
    """A statement failed as expected (its transaction, if explicit, is aborted)."""


def _plain(r: Row) -> tuple[Any, ...]:
    return (r["id"], r["v"], r["s"], r["p"])


def _sort_key(t: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, v) for v in t)


# --------------------------------------------------------------------------- the test


def run_episode(wh: Warehouse, name: str, rng: random.Random, statements: int) -> None:
    table = wh.create_table(
        name, COLS, partition_columns=[("p", "int")], bucket_columns=["id"], num_buckets=BUCKETS
    )
    model = Model(table, rng)
    ops = (
        [model.insert] * 4
        + [model.update] * 3
        + [model.delete] * 2
        + [model.merge] * 3
        + [model.overwrite]
    )
    done = 0
    while done < statements:
        if rng.random() < 0.15:  # a multi-statement transaction
            snapshot = [dict(r) for r in model.rows]
            wh.transaction()
            try:
                for _ in range(rng.randint(1, 3)):
                    op = rng.choice([model.insert, model.update, model.delete, model.merge])
                    op()
                    done += 1
                    model.check(f"{op.__name__} in txn")
            except _Aborted:
                assert not wh.current_transaction or not wh.current_transaction.is_open
                wh.rollback()
                model.rows = snapshot
                model.check("aborted txn")
                continue
            if rng.random() < 0.4:
                wh.rollback()
                model.rows = snapshot
                model.check("rollback")
            else:
                wh.commit()
                model.check("commit")
            continue
        op = rng.choice(ops)
        with contextlib.suppress(_Aborted):
            op()
        done += 1
        model.check(op.__name__)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_random_statements_match_the_oracle(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    wh = Warehouse.open(
        tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0", "acid.scan.read.lease": "false"}
    )
    try:
        total = STATEMENTS // 2
        episode = 0
        while total > 0:
            n = min(EPISODE, total)
            run_episode(wh, f"t{episode}", rng, n)
            total -= n
            episode += 1
    finally:
        wh.close()


@pytest.mark.slow
def test_random_statements_match_the_oracle_on_s3(tmp_path: Path, s3: S3Server) -> None:
    """The same random statements on a warehouse in a bucket of the S3 server."""
    rng = random.Random(3)
    conf = {"acid.lock.wait.timeout.s": "0", "acid.scan.read.lease": "false"}
    with open_warehouse(tmp_path, conf, s3=s3) as wh:
        total, episode = EPISODE, 0  # one table's episode: the S3 server is slower
        while total > 0:
            n = min(EPISODE, total)
            run_episode(wh, f"t{episode}", rng, n)
            total -= n
            episode += 1
