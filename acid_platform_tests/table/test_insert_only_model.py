"""A differential test of insert-only tables against an oracle: random sequences of INSERT,
INSERT OVERWRITE (dynamic: of the partitions receiving rows, or of one static partition), rolled-back inserts, multi-statement
transactions, minor and major compaction and cleaning, in each file format. After every step
the table's rows (read through the table API and through SQL) and a snapshot taken earlier
must equal the oracle's — a plain dict of partition -> rows, which knows nothing of files."""

from __future__ import annotations

import random

import pytest

from acid_platform import Warehouse
from acid_platform.table import Table

MM = {"transactional": "true", "transactional_properties": "insert_only"}
Oracle = dict[str, list[tuple[int, str]]]


def _rows(oracle: Oracle) -> list[tuple[int, str, str]]:
    return sorted((i, v, p) for p, rows in oracle.items() for i, v in rows)


def _table_rows(table: Table) -> list[tuple[int, str, str]]:
    return sorted((r["id"], r["v"], r["p"]) for r in table.scan().to_arrow().to_pylist())


def _new_rows(rng: random.Random, counter: list[int]) -> list[dict[str, object]]:
    out = []
    for _ in range(rng.randint(0, 4)):
        counter[0] += 1
        out.append({"id": counter[0], "v": f"v{counter[0]}", "p": rng.choice("ab")})
    return out


def _add(oracle: Oracle, rows: list[dict[str, object]]) -> None:
    for r in rows:
        oracle.setdefault(str(r["p"]), []).append((int(str(r["id"])), str(r["v"])))


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "seed"), [("orc", 1), ("parquet", 2), ("textfile", 3)])
def test_random_histories_match_the_oracle(wh: Warehouse, fmt: str, seed: int) -> None:
    rng = random.Random(seed)
    table = wh.create_table(
        "mm",
        [("id", "int"), ("v", "string")],
        partition_columns=[("p", "string")],
        properties=MM,
        stored_as=fmt,
    )
    oracle: Oracle = {}
    counter = [0]
    pinned: tuple[object, list[tuple[int, str, str]]] | None = None
    for _step in range(40):
        op = rng.choice(
            [
                "insert",
                "insert",
                "overwrite",
                "overwrite_part",
                "abort",
                "multi",
                "minor",
                "major",
                "pin",
            ]
        )
        if op == "insert":
            rows = _new_rows(rng, counter)
            table.insert(rows)
            _add(oracle, rows)
        elif op == "overwrite":
            rows = _new_rows(rng, counter)
            table.insert(rows, overwrite=True)  # dynamic partitions: those receiving rows
            for part in {str(r["p"]) for r in rows}:
                oracle[part] = []
            _add(oracle, rows)
        elif op == "overwrite_part":
            part = rng.choice("ab")
            rows = [{k: v for k, v in r.items() if k != "p"} for r in _new_rows(rng, counter)]
            table.insert(rows, partition={"p": part}, overwrite=True)
            oracle[part] = []
            _add(oracle, [r | {"p": part} for r in rows])
        elif op == "abort":
            with pytest.raises(RuntimeError), wh.transaction():
                table.insert(_new_rows(rng, counter))
                raise RuntimeError("roll back")
        elif op == "multi":
            first, second = _new_rows(rng, counter), _new_rows(rng, counter)
            with wh.transaction():
                table.insert(first)
                table.insert(second)
            _add(oracle, first + second)
        elif op in ("minor", "major"):
            for part in ("p=a", "p=b"):
                if part[2:] in oracle:
                    wh.compact("mm", partition=part, kind=op, wait=True)
            wh.clean()
        else:  # a snapshot taken now must keep reading what it saw
            if pinned is not None:
                pinned[0].close()  # type: ignore[attr-defined]
            pinned = (table.scan(), _rows(oracle))
        assert _table_rows(table) == _rows(oracle), (op, _step)
        count = wh.sql("SELECT count(*) AS n FROM mm").to_pylist()[0]["n"]
        assert count == len(_rows(oracle))
    if pinned is not None:
        scan, expected = pinned
        got = sorted((r["id"], r["v"], r["p"]) for r in scan.to_arrow().to_pylist())  # type: ignore[attr-defined]
        assert got == expected
