"""The example platform's assets (assembled into ``Definitions`` by
:mod:`acid_platform.definitions`), from the seeds' use cases: events into day-partitioned tables,
a slowly changing dimension merged daily, a restatement (UPDATE), a right-to-be-forgotten
DELETE, seed 003's email summary built by MERGEs smallest source first, and one aggregate
computed by Spark; and ``retail.returns``, loaded by the ingest sensor from files landing in a
directory (:data:`RETURNS_COLUMNS`; :func:`returns_of` makes a day's file). The rows are made
up, the same for the same day.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import datetime as dt
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    Config,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pyspark.sql import DataFrame
from sqlglot import exp

from acid_platform.orchestration.health import table_health
from acid_platform.orchestration.metadata import materialization_metadata, statement_metadata
from acid_platform.orchestration.resources import AcidWarehouseResource
from acid_platform.table import Table
from acid_platform.table.expressions import literal_expression
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.statement import StatementMetrics

#: The example's days: three, so a first run is small (extend ``end_date`` for more).
DAYS = DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")
STORES = AssetKey(["retail", "stores"])
SALES = AssetKey(["retail", "sales"])
EMAIL_EVENTS = AssetKey(["mail", "email_events"])
RESTATEMENT = AssetKey(["retail", "sales_restatement"])
FORGET = AssetKey(["privacy", "forget_customers"])
EMAIL_SUMMARY = AssetKey(["mail", "email_summary"])
STORE_SALES_DAILY = AssetKey(["retail", "store_sales_daily"])
RETURNS = AssetKey(["retail", "returns"])
#: The columns of ``retail.returns`` (partitioned by ``ds``): what a landing file must hold.
RETURNS_COLUMNS = {
    "return_id": "bigint",
    "sale_id": "bigint",
    "store_id": "int",
    "amount": "double",
    "reason": "string",
    "returned_at": "timestamp",
}
RETURNS_PARTITION = {"ds": "date"}
#: Customers who joined the membership: their earlier sales are restated at the member price.
MEMBERS = (3, 7, 11)
MEMBER_DISCOUNT = 0.9
#: Customers who asked to be forgotten.
FORGOTTEN = (13,)
#: Seed 003's email events, with how many a day (so the sources differ in size).
EVENT_TYPES = {"sent": 240, "open": 90, "click": 24, "bounce": 9, "spam": 3, "conversion": 2}
CUSTOMERS = 20
TABLE = "acid/table"  # definition metadata: the asset is an ACID table (checked as one)
SINGLE_RUN = BackfillPolicy.single_run()


def days_of(context: AssetExecutionContext) -> list[dt.date]:
    """The days of the run's partition (range)."""
    window = context.partition_time_window
    start, end = window.start.date(), window.end.date()
    return [start + dt.timedelta(days=i) for i in range((end - start).days)]


def store_feed(day: dt.date) -> pa.Table:
    """The store list as the source system has it on ``day``: store 6 opens on 2024-01-02,
    one store grows each day, store 4 closes on 2024-01-03."""
    stores = {1: ("Lyon", 1200), 2: ("Paris", 2500), 3: ("Nantes", 900), 4: ("Lille", 1100)}
    stores |= {5: ("Nice", 800)} | ({6: ("Rennes", 700)} if day >= dt.date(2024, 1, 2) else {})
    grown = 1 + day.toordinal() % len(stores)
    rows = [
        {
            "store_id": sid,
            "city": city,
            "sqft": sqft + (50 if sid == grown else 0),
            "closed": sid == 4 and day >= dt.date(2024, 1, 3),
        }
        for sid, (city, sqft) in sorted(stores.items())
    ]
    return pa.Table.from_pylist(
        rows,
        pa.schema([("store_id", pa.int32()), ("city", pa.string()), ("sqft", pa.int32()),
                   ("closed", pa.bool_())]),
    )  # fmt: skip


def sales_of(day: dt.date) -> list[dict[str, Any]]:
    rng = random.Random(day.toordinal())
    return [
        {
            "sale_id": day.toordinal() * 1000 + i,
            "store_id": rng.randint(1, 5),
            "customer_id": rng.randint(1, CUSTOMERS),
            "amount": round(rng.uniform(2, 120), 2),
            "discounted": False,
            "sold_at": dt.datetime.combine(day, dt.time(8)) + dt.timedelta(minutes=3 * i),
            "ds": day,
        }
        for i in range(200)
    ]


def email_events_of(day: dt.date) -> list[dict[str, Any]]:
    rng = random.Random(-day.toordinal())
    rows: list[dict[str, Any]] = []
    for kind, count in EVENT_TYPES.items():
        for _ in range(count):
            rows.append(
                {
                    "event_id": day.toordinal() * 1000 + len(rows),
                    "customer_id": rng.randint(1, CUSTOMERS),
                    "email_id": rng.randint(1, 5),
                    "event_type": kind,
                    "ts": dt.datetime.combine(day, dt.time(rng.randint(0, 23))),
                    "ds": day,
                }
            )
    return rows


class StoreFeedConfig(Config):  # type: ignore[misc]
    """The day of the store feed to merge (default: today, UTC)."""

    as_of: str = ""


@asset(
    key=STORES,
    group_name="dimensions",
    kinds={"hive", "orc"},
    metadata={
        TABLE: True,
        "write_mode": "merge",
        "key_columns": ["store_id"],
        "merge_options": {
            "delete_condition": "s.closed",
            "update_condition": "t.city <> s.city OR t.sqft <> s.sqft",
        },
    },
    description="Slowly changing store dimension: the day's feed MERGEd on store_id (changed "
    "stores updated, new ones inserted, closed ones deleted).",
)
def stores(config: StoreFeedConfig) -> pa.Table:
    day = dt.date.fromisoformat(config.as_of) if config.as_of else dt.datetime.now(dt.UTC).date()
    return store_feed(day)


def daily_events(
    key: AssetKey, rows_of: Callable[[dt.date], list[dict[str, Any]]], description: str
) -> AssetsDefinition:
    """Events into a table partitioned by day (``ds``), each day replaced atomically."""

    @asset(
        key=key,
        group_name="ingest",
        kinds={"hive", "orc"},
        partitions_def=DAYS,
        backfill_policy=SINGLE_RUN,
        metadata={TABLE: True, "partition_expr": "ds", "write_mode": "overwrite"},
        description=description,
    )
    def _events(context: AssetExecutionContext) -> pa.Table:
        return pa.Table.from_pylist([row for day in days_of(context) for row in rows_of(day)])

    return _events


sales = daily_events(SALES, sales_of, "Sales events, one Hive partition per day (ds).")
email_events = daily_events(
    EMAIL_EVENTS,
    email_events_of,
    "Email events (sent, open, click, bounce, spam, conversion), one Hive partition per day.",
)


def change_result(changes: dict[str, StatementMetrics], **extra: Any) -> MaterializeResult:
    """Metadata of statements on other assets' tables (one per table)."""
    metadata: dict[str, Any] = dict(extra)
    for name, metrics in changes.items():
        for key, value in statement_metadata([metrics]).items():
            metadata[f"{name}/{key}" if len(changes) > 1 else key] = value
    return MaterializeResult(metadata=metadata)


@asset(
    key=RESTATEMENT,
    group_name="corrections",
    kinds={"hive", "orc"},
    deps=[SALES],
    description="Restatement: members get their discount on sales made before they joined "
    "(UPDATE retail.sales … WHERE customer_id IN members AND NOT discounted).",
)
def sales_restatement(acid_warehouse: AcidWarehouseResource) -> MaterializeResult:
    members = ", ".join(map(str, MEMBERS))
    metrics = acid_warehouse.table("retail.sales").update(
        {"amount": f"round(amount * {MEMBER_DISCOUNT}, 2)", "discounted": "true"},
        f"customer_id IN ({members}) AND NOT discounted",
    )
    return change_result(
        {"retail.sales": metrics}, operation="update", members=MetadataValue.json(list(MEMBERS))
    )


@asset(
    key=FORGET,
    group_name="corrections",
    kinds={"hive", "orc"},
    deps=[SALES, EMAIL_EVENTS, RESTATEMENT],
    description="Right to be forgotten: the customers' rows are deleted from every event "
    "table in ONE transaction.",
)
def forget_customers(acid_warehouse: AcidWarehouseResource) -> MaterializeResult:
    where = f"customer_id IN ({', '.join(map(str, FORGOTTEN))})"
    with acid_warehouse.transaction():
        changes = {
            name: acid_warehouse.table(name).delete(where)
            for name in ("retail.sales", "mail.email_events")
        }
    return change_result(changes, operation="delete", customers=MetadataValue.json(list(FORGOTTEN)))


@asset(
    key=EMAIL_SUMMARY,
    group_name="reporting",
    kinds={"hive", "orc"},
    partitions_def=DAYS,
    backfill_policy=SINGLE_RUN,
    deps=[EMAIL_EVENTS, FORGET],
    metadata={TABLE: True},
    description="Seed 003's summary: per customer and day, one MERGE per event type, smallest "
    "source first, in one transaction.",
)
def email_summary(
    context: AssetExecutionContext, acid_warehouse: AcidWarehouseResource
) -> MaterializeResult:
    days = days_of(context)
    wh = acid_warehouse.get_warehouse()
    columns = [("customer_id", "bigint")] + [(f"number_{k}", "bigint") for k in EVENT_TYPES]
    table = wh.create_table(
        "mail.email_summary", columns, partition_columns=[("ds", "date")], if_not_exists=True
    )
    # Statements are built as syntax trees, values as literals: nothing is pasted into text.
    window = exp.column("ds").between(literal_expression(days[0]), literal_expression(days[-1]))
    sizes = wh.query(
        exp.select("event_type", exp.alias_(exp.Count(this=exp.Star()), "n"))
        .from_("mail.email_events")
        .where(window)
        .group_by("event_type")
    ).to_pylist()
    order = sorted(sizes, key=lambda r: (r["n"], r["event_type"]))
    metrics = []
    with acid_warehouse.transaction():
        metrics.append(table.delete(window))  # the days are rebuilt
        for source in order:
            metrics.append(merge_counts(table, source["event_type"], window))
    steps = [
        {"event_type": s["event_type"], "source_rows": s["n"], **_counts(m)}
        for s, m in zip(order, metrics[1:], strict=True)
    ]
    context.log.info("merged smallest source first: " + ", ".join(s["event_type"] for s in order))
    partitions = {make_partition_name(["ds"], [d]) for d in days}
    metadata = materialization_metadata(
        table, "merge", metrics, table_health(table, partitions), partitions=len(days)
    )
    metadata["merge_order"] = MetadataValue.json(steps)
    return MaterializeResult(metadata=metadata)


def merge_counts(table: Table, event_type: str, window: exp.Expr) -> StatementMetrics:
    """MERGE one event type's counts per customer and day into the summary."""
    column = f"number_{event_type}"
    source = (
        exp.select("customer_id", "ds", exp.alias_(exp.Count(this=exp.Star()), "n"))
        .from_("mail.email_events")
        .where(window.copy(), exp.column("event_type").eq(literal_expression(event_type)))
        .group_by("customer_id", "ds")
    )
    inserted = {"customer_id": "s.customer_id", "ds": "s.ds"} | {
        f"number_{k}": ("s.n" if k == event_type else "0") for k in EVENT_TYPES
    }
    return (
        table.merge(source, "t.customer_id = s.customer_id AND t.ds = s.ds")
        .when_matched_update({column: "s.n"})
        .when_not_matched_insert(inserted)
        .execute()
    )


def _counts(m: StatementMetrics) -> dict[str, int]:
    return {"rows_inserted": m.rows_inserted, "rows_updated": m.rows_updated}


@asset(
    key=STORE_SALES_DAILY,
    group_name="reporting",
    kinds={"spark", "hive", "orc"},
    partitions_def=DAYS,
    backfill_policy=SINGLE_RUN,
    ins={
        "sales": AssetIn(SALES, metadata={"columns": ["store_id", "amount", "ds"]}),
        "stores": AssetIn(STORES, metadata={"columns": ["store_id", "city"]}),
    },
    deps=[RESTATEMENT, FORGET],
    metadata={TABLE: True, "partition_expr": "ds", "write_mode": "overwrite"},
    description="Revenue per store and day, computed and written by Spark's executors.",
)
def store_sales_daily(sales: DataFrame, stores: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    per_store = sales.groupBy("ds", "store_id").agg(
        F.count("*").alias("sales"), F.round(F.sum("amount"), 2).alias("revenue")
    )
    return per_store.join(stores, "store_id", "left").select(
        "store_id", "city", "sales", "revenue", "ds"
    )


def returns_of(day: dt.date, count: int = 12) -> pa.Table:
    """A day's returns as a landing file would hold them (``RETURNS_COLUMNS`` and ``ds``)."""
    rng = random.Random(day.toordinal() * 7)
    reasons = ("damaged", "wrong size", "changed mind", "late delivery")
    rows = [
        {
            "return_id": day.toordinal() * 100 + i,
            "sale_id": day.toordinal() * 1000 + rng.randint(0, 199),
            "store_id": rng.randint(1, 5),
            "amount": round(rng.uniform(2, 120), 2),
            "reason": rng.choice(reasons),
            "returned_at": dt.datetime.combine(day, dt.time(9)) + dt.timedelta(minutes=17 * i),
            "ds": day,
        }
        for i in range(count)
    ]
    types = {"bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(),
             "string": pa.string(), "timestamp": pa.timestamp("us")}  # fmt: skip
    schema = pa.schema([(c, types[t]) for c, t in RETURNS_COLUMNS.items()] + [("ds", pa.date32())])
    return pa.Table.from_pylist(rows, schema)


#: ``retail.returns`` as an asset: written by the ingest job (which reports its materializations).
returns_table = AssetSpec(
    RETURNS,
    group_name="ingest",
    kinds={"hive", "orc"},
    metadata={TABLE: True},
    description="Store returns, loaded from the files landing in the landing directory by the "
    "ingest sensor (each file exactly once); one Hive partition per day (ds).",
)


def example_assets(*, with_spark: bool = True) -> list[AssetsDefinition]:
    """The example's assets (the Spark one unless ``with_spark`` is false)."""
    assets = [stores, sales, email_events, sales_restatement, forget_customers, email_summary]
    return assets + ([store_sales_daily] if with_spark else [])


__all__ = [
    "DAYS",
    "EMAIL_EVENTS",
    "EMAIL_SUMMARY",
    "EVENT_TYPES",
    "FORGET",
    "FORGOTTEN",
    "MEMBERS",
    "RESTATEMENT",
    "RETURNS",
    "RETURNS_COLUMNS",
    "RETURNS_PARTITION",
    "SALES",
    "STORES",
    "STORE_SALES_DAILY",
    "TABLE",
    "example_assets",
    "email_events_of",
    "returns_of",
    "returns_table",
    "sales_of",
    "store_feed",
]
