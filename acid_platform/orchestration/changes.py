"""Consuming a table's change feed incrementally: a sensor keeps the last write id it handed out.

>>> # @asset(key=AssetKey(["retail", "store_changes"]))
>>> # def store_changes(config: ChangeWindow, acid_warehouse: AcidWarehouseResource):
>>> #     changes = config.read(acid_warehouse)       # table.changes(after, upto, key=…)
>>> #     ...                                         # or, into an ACID table, exactly once:
>>> #     append_changes(acid_warehouse, config, "retail.store_changes")
>>> # sensor = change_feed_sensor("retail.stores", target=store_changes, key=["store_id"])

* :func:`change_feed_sensor` — each tick asks the metastore for the table's newest *final*
  write id (one read: no snapshot is held, no file listed) and, when it is past the cursor,
  requests a run of its target (an asset, or a job) for the write ids ``(cursor, newest]`` —
  cut into consecutive windows of at most ``max_write_ids_per_run`` — with the window as the
  config of the consuming op (the asset's); the run key is ``db.table@incarnation:after-upto``
  and the cursor (``{"write_id": n, "incarnation": …}``) moves to the window's end. So a repeated tick requests nothing twice, and every committed
  change is in exactly one window. A tick with nothing new, or before the warehouse or the
  table exists, skips (the cursor kept). The first tick starts after ``start_write_id`` (0:
  the whole history).
* :class:`ChangeWindow` — a run's window: :meth:`~ChangeWindow.read` returns its changes
  (:meth:`Table.changes <acid_platform.table.Table.changes>`: ``_change_type``, ``_write_id``,
  ``row__id``; final write ids only, so a retried or re-executed run reads the same rows);
  :meth:`~ChangeWindow.source` names the window as a source, which a consumer writing into an
  ACID table records with its insert so a re-executed run changes nothing
  (:func:`append_changes` does both for a change log table).

The cursor is the sensor's only memory of what it handed out: reset, it starts again from
``start_write_id``, and windows that overlap the old ones are new sources to a consumer. It
carries the table's incarnation (:attr:`Table.incarnation <acid_platform.table.Table.incarnation>`):
after DROP + CREATE the write ids start again, so the sensor starts the new incarnation's feed
from ``start_write_id`` and says so, and a window of the former incarnation is refused
(:class:`~acid_platform.errors.ChangeFeedIncarnationError`); window and source keys name the
incarnation.

A window whose history is gone (a major compaction or INSERT OVERWRITE wrote a base above its
start before the run read it) fails the run with
:class:`~acid_platform.errors.ChangeHistoryUnavailableError`, naming the earliest write id the
table can answer from.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of ops and sensors

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from dagster import (
    AssetsDefinition,
    Config,
    DefaultSensorStatus,
    JobDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from pydantic import Field

from acid_platform.errors import DuplicateSourceError, NoSuchObjectError
from acid_platform.format import ROW_ID_COLUMN
from acid_platform.metastore.model import Source
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidWarehouseResource,
    maintenance_warehouse,
    no_warehouse_yet,
    warehouse_resource,
)
from acid_platform.table.changes import newest_final_write_id
from acid_platform.table.statement import StatementMetrics

#: Run tags: the table whose changes a run consumes, and its window.
TABLE_TAG = "acid/table"
AFTER_TAG = "acid/changes_after_write_id"
UPTO_TAG = "acid/changes_upto_write_id"
INCARNATION_TAG = "acid/table_incarnation"
#: How a consumed window is named as a source.
SOURCE_PREFIX = "changes"


class ChangeWindow(Config):  # type: ignore[misc]
    """The changes a run consumes: of ``table``, the write ids ``after < w <= upto``."""

    table: str = Field(description="The ACID table (db.table) whose change feed is read.")
    after_write_id: int = Field(description="Changes after this write id (excluded).")
    upto_write_id: int = Field(description="Changes up to this write id (included).")
    key: list[str] = Field(
        default_factory=list,
        description="Columns identifying a row: a delete and an insert of one key by one write "
        "id are an update_preimage / update_postimage pair (empty: no pairing).",
    )
    incarnation: str = Field(
        default="",
        description="The table incarnation the window was planned on (Table.incarnation); a "
        "window of a dropped and re-created table's former incarnation is refused. Empty: "
        "not checked.",
    )

    def read(self, resource: AcidWarehouseResource) -> pa.Table:
        """The window's changes, in the feed's order (one snapshot)."""
        feed = resource.table(self.table).changes(
            self.after_write_id,
            self.upto_write_id,
            key=list(self.key) or None,
            incarnation=self.incarnation or None,
        )
        return feed.to_arrow()

    @property
    def name(self) -> str:
        """``db.table[@incarnation]:after-upto``: the run key and, prefixed, the source key."""
        at = f"@{self.incarnation}" if self.incarnation else ""
        return f"{self.table}{at}:{self.after_write_id}-{self.upto_write_id}"

    def source(self) -> Source:
        """The window as a source: record it with the write that consumes it."""
        return Source(
            f"{SOURCE_PREFIX}:{self.name}",
            {
                "table": self.table,
                "after": self.after_write_id,
                "upto": self.upto_write_id,
                "incarnation": self.incarnation,
            },
        )


@dataclass(frozen=True)
class ChangeCursor:
    """The sensor's memory: the newest write id whose changes were handed to a run, and the
    table incarnation it belongs to ("": not known yet, or a cursor written before it was
    kept)."""

    write_id: int
    incarnation: str = ""

    @classmethod
    def parse(cls, text: str | None, start: int = 0) -> "ChangeCursor":
        if not text:
            return cls(start)
        data = json.loads(text)
        return cls(int(data["write_id"]), str(data.get("incarnation", "")))

    def dump(self) -> str:
        return json.dumps({"write_id": self.write_id, "incarnation": self.incarnation})


def plan_windows(
    after: int, newest: int, max_write_ids: int | None = None
) -> list[tuple[int, int]]:
    """The consecutive windows ``(a, b]`` covering ``(after, newest]``, each at most
    ``max_write_ids`` write ids (``None``: one window); none when nothing is new."""
    if newest <= after:
        return []
    step = newest - after if not max_write_ids or max_write_ids < 1 else max_write_ids
    return [(a, min(a + step, newest)) for a in range(after, newest, step)]


def window_request(
    table: str, op_name: str, window: tuple[int, int], key: list[str], incarnation: str = ""
) -> RunRequest:
    """The run request consuming ``window`` of ``table`` (its ``incarnation``) with the op
    ``op_name``; the run key is the window's :attr:`ChangeWindow.name`."""
    after, upto = window
    planned = ChangeWindow(
        table=table, after_write_id=after, upto_write_id=upto, key=key, incarnation=incarnation
    )
    return RunRequest(
        run_key=planned.name,
        run_config={"ops": {op_name: {"config": planned.model_dump()}}},
        tags={
            TABLE_TAG: table,
            AFTER_TAG: str(after),
            UPTO_TAG: str(upto),
            INCARNATION_TAG: incarnation,
        },  # fmt: skip
    )


def change_feed_sensor(
    table: str,
    *,
    target: AssetsDefinition | JobDefinition,
    op_name: str | None = None,
    name: str | None = None,
    key: list[str] | None = None,
    start_write_id: int = 0,
    max_write_ids_per_run: int | None = None,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
    resource_key: str = DEFAULT_RESOURCE_KEY,
) -> SensorDefinition:
    """A sensor requesting runs of ``target`` — an asset taking a :class:`ChangeWindow`
    config, or a job whose op ``op_name`` takes one — that consume ``table``'s change feed
    window by window (see module docs); ``key`` pairs updates; ``resource_key``: the
    warehouse. RUNNING by default."""
    if op_name is None:
        if not isinstance(target, AssetsDefinition):
            raise ValueError("change_feed_sensor: name the op of the job that takes the window")
        op_name = target.node_def.name
    keys, consumer = list(key or []), op_name
    sensor_name = name or f"acid_changes_{table.replace('.', '__')}"

    @sensor(
        name=sensor_name,
        target=target,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=f"Consumes the change feed of {table}: one run per window of new write "
        "ids (run key = table:after-upto); the cursor keeps the last write id handed out.",
    )
    def _change_feed_sensor(context: SensorEvaluationContext, **_: Any) -> SensorResult:
        acid_warehouse = warehouse_resource(context, resource_key)
        cursor = ChangeCursor.parse(context.cursor, start_write_id)
        found = newest_write_id(acid_warehouse, table)
        if isinstance(found, str):
            return SensorResult(skip_reason=found, cursor=cursor.dump())
        newest, incarnation = found
        restarted = ""
        if cursor.incarnation and cursor.incarnation != incarnation:
            # dropped and created again: its write ids start over, and so does the feed
            restarted = (
                f"{table} was dropped and created again (incarnation {cursor.incarnation} -> "
                f"{incarnation}): its change feed starts again after write id {start_write_id}"
            )
            context.log.warning(restarted)
            cursor = ChangeCursor(start_write_id, incarnation)
        windows = plan_windows(cursor.write_id, newest, max_write_ids_per_run)
        if not windows:
            return SensorResult(
                skip_reason=(f"{restarted}; " if restarted else "")
                + f"no change in {table} after write id {cursor.write_id} "
                f"(newest final write id: {newest})",
                cursor=ChangeCursor(cursor.write_id, incarnation).dump(),
            )
        return SensorResult(
            run_requests=[window_request(table, consumer, w, keys, incarnation) for w in windows],
            cursor=ChangeCursor(windows[-1][1], incarnation).dump(),
        )

    return _change_feed_sensor


def newest_write_id(resource: AcidWarehouseResource, table: str) -> tuple[int, str] | str:
    """The table's newest final write id and its incarnation, or why there is none yet (a skip
    reason)."""
    if not resource.exists():
        return no_warehouse_yet(resource)
    try:
        with maintenance_warehouse(resource) as wh:
            found = wh.table(table)
            return newest_final_write_id(wh.metastore, found.spec), found.incarnation
    except NoSuchObjectError:
        return f"no table {table} yet"


def append_changes(
    resource: AcidWarehouseResource, window: ChangeWindow, into: str
) -> tuple[pa.Table, StatementMetrics | None]:
    """Append the window's changes (its rows without ``row__id``) to the ACID table ``into``,
    created on first use with the feed's columns, the window recorded as the insert's source:
    the changes read and the insert's metrics — ``None`` when the window is in ``into``
    already (a re-executed run; nothing written)."""
    changes = window.read(resource)
    rows = changes.drop_columns([ROW_ID_COLUMN])
    wh = resource.get_warehouse()
    target = wh.create_table(into, rows.schema, if_not_exists=True)
    try:
        return changes, target.insert(rows, sources=[window.source()])
    except DuplicateSourceError:
        return changes, None


def window_metadata(window: ChangeWindow, changes: pa.Table) -> dict[str, Any]:
    """Output metadata of a run that consumed ``changes`` of ``window``."""
    kinds = changes.column("_change_type").value_counts().to_pylist() if changes.num_rows else []
    return {
        "table": window.table,
        "after_write_id": window.after_write_id,
        "upto_write_id": window.upto_write_id,
        "changes": changes.num_rows,
        **{f"changes/{k['values']}": k["counts"] for k in kinds},
    }


__all__ = [
    "AFTER_TAG",
    "INCARNATION_TAG",
    "SOURCE_PREFIX",
    "TABLE_TAG",
    "UPTO_TAG",
    "ChangeCursor",
    "ChangeWindow",
    "append_changes",
    "change_feed_sensor",
    "newest_write_id",
    "plan_windows",
    "window_metadata",
    "window_request",
]
