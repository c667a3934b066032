"""Merge-on-read against a simple model: random inserts, deletes and updates across write ids,
some aborted, read back under random snapshots (hypothesis)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acid_platform.format import (
    EventWriter,
    ValidWriteIdList,
    bucket_file_name,
    decode_bucket,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
MAX = 9223372036854775807


@dataclass
class Model:
    """Every row version ever written: key -> (value, write id that deleted it or None)."""

    rows: dict[tuple[int, int, int], list] = field(default_factory=dict)
    deleted_by: dict[tuple[int, int, int], set[int]] = field(default_factory=dict)
    aborted: set[int] = field(default_factory=set)

    def visible(self, hwm: int, invalid: set[int]) -> dict[tuple[int, int, int], list]:
        ok = lambda w: w <= hwm and w not in invalid  # noqa: E731
        return {
            key: val
            for key, val in self.rows.items()
            if ok(key[0]) and not any(ok(d) for d in self.deleted_by.get(key, ()))
        }


op = st.tuples(
    st.sampled_from(["insert", "delete", "update"]),
    st.integers(min_value=1, max_value=6),  # rows
    st.integers(min_value=0, max_value=2),  # writer / bucket id
    st.sampled_from([False, False, False, True]),  # aborted? (rarely, so deletes stay visible)
    st.integers(min_value=0, max_value=10_000),  # choice seed
)


class _Snapshot:
    """A fixed snapshot choice for the explicit examples below."""

    def __init__(self, hwm: int, open_ids: set[int]) -> None:
        self.values = [hwm, open_ids]

    def draw(self, strategy: object, label: str | None = None) -> object:
        return self.values.pop(0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(ops=[("insert", 3, 0, False, 0), ("delete", 1, 0, False, 0)], snapshot=_Snapshot(2, set()))
@example(ops=[("insert", 3, 1, False, 0), ("update", 2, 0, False, 1)], snapshot=_Snapshot(2, set()))
@example(ops=[("insert", 3, 0, False, 0), ("delete", 1, 0, False, 0)], snapshot=_Snapshot(2, {2}))
@given(ops=st.lists(op, min_size=1, max_size=10), snapshot=st.data())
def test_merge_on_read_matches_model(ops: list, snapshot: st.DataObject) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        model = Model()
        counter = 0
        for write_id, (kind, n, writer, aborted, seed) in enumerate(ops, start=1):
            live = sorted(model.visible(write_id - 1, model.aborted))
            targets = (
                [live[(seed + 7 * i) % len(live)] for i in range(min(n, len(live)))] if live else []
            )
            targets = sorted(set(targets))
            if kind in ("delete", "update") and targets:
                by_bucket: dict[int, list] = {}
                for key in targets:
                    by_bucket.setdefault(key[1], []).append(key)
                d = root / delete_delta_dir_name(write_id, write_id, 0)
                write_acid_version_file(d)
                for bucket_prop, keys in by_bucket.items():
                    bid = decode_bucket(bucket_prop)[0]
                    with EventWriter(d / bucket_file_name(bid), SCHEMA) as w:
                        w.write(
                            delete_events(
                                [k[0] for k in keys],
                                [k[1] for k in keys],
                                [k[2] for k in keys],
                                write_id,
                                SCHEMA,
                            )
                        )
                    for k in keys:
                        model.deleted_by.setdefault(k, set()).add(write_id)
            if kind in ("insert", "update"):
                count = n if kind == "insert" else len(targets)
                if count:
                    vals = list(range(counter, counter + count))
                    counter += count
                    rows = pa.table(
                        {"k": pa.array(vals, pa.int64()), "v": pa.array([f"v{x}" for x in vals])}
                    )
                    d = root / delta_dir_name(write_id, write_id, 0)
                    write_acid_version_file(d)
                    prop = encode_bucket(writer, 0)
                    with EventWriter(d / bucket_file_name(writer), SCHEMA) as w:
                        w.write(insert_events(rows, write_id, prop))
                    for i, x in enumerate(vals):
                        model.rows[(write_id, prop, i)] = [x, f"v{x}"]
            if aborted:
                model.aborted.add(write_id)
        top = len(ops)
        hwm = snapshot.draw(
            st.one_of(st.just(top), st.integers(min_value=0, max_value=top)), label="hwm"
        )
        open_ids = snapshot.draw(
            st.sets(st.integers(min_value=1, max_value=max(hwm, 1)), max_size=2), label="open"
        )
        open_ids = {o for o in open_ids if o <= hwm and o not in model.aborted}
        aborted_ids = {a for a in model.aborted if a <= hwm}
        min_open = min(open_ids) if open_ids else MAX
        text = f"db.t:{hwm}:{min_open}:{','.join(map(str, sorted(open_ids)))}:{','.join(map(str, sorted(aborted_ids)))}"
        write_ids = ValidWriteIdList.parse(text)
        got = read_acid(root, write_ids, with_row_id=True, schema=SCHEMA)
        actual = {
            (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]): [
                r["k"],
                r["v"],
            ]
            for r in got.to_pylist()
        }
        assert len(actual) == got.num_rows, "ROW__IDs must be unique"
        assert actual == model.visible(hwm, open_ids | aborted_ids), text
        # above the delete-event cap the events are merged in key order: the same rows
        merged = read_acid(root, write_ids, with_row_id=True, schema=SCHEMA, delete_events_cap=0)
        assert merged.to_pylist() == got.to_pylist(), text
    finally:
        shutil.rmtree(root, ignore_errors=True)
