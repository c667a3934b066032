"""The example platform's assets, from the seeds' use cases: events into day-partitioned
tables, a slowly changing dimension merged daily, a restatement (UPDATE), a right-to-be-forgotten
DELETE, seed 003's email summary built by MERGEs smallest source first, and one aggregate
computed by Spark. ``retail.returns`` (the ingest component) and ``retail.store_changes`` (the
change-feed component) are declared in ``defs.yaml`` files beside this module.

Automation is declarative: the store dimension is merged every morning
(``AutomationCondition.on_cron``), the reporting tables follow their upstream tables
(``eager``); the ``acid_platform`` job (:mod:`.platform_job`) materializes everything in one run.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    BackfillPolicy,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pyspark.sql import DataFrame
from sqlglot import exp

from acid_platform.orchestration import AcidWarehouseResource, table_health
from acid_platform.orchestration.checks import TABLE_META
from acid_platform.orchestration.metadata import materialization_metadata, statement_metadata
from acid_platform.table import Table
from acid_platform.table.expressions import literal_expression
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.statement import StatementMetrics
from acid_platform_example.data import (
    DAYS,
    EMAIL_EVENTS,
    EMAIL_SUMMARY,
    EVENT_TYPES,
    FORGET,
    FORGOTTEN,
    MEMBER_DISCOUNT,
    MEMBERS,
    RESTATEMENT,
    SALES,
    STORE_SALES_DAILY,
    STORES,
    email_events_of,
    sales_of,
    store_feed,
)

SINGLE_RUN = BackfillPolicy.single_run()
#: Who answers for the example's tables (shown in the UI).
OWNERS = ["team:data-platform"]


def days_of(context: AssetExecutionContext) -> list[dt.date]:
    """The days of the run's partition (range)."""
    window = context.partition_time_window
    start, end = window.start.date(), window.end.date()
    return [start + dt.timedelta(days=i) for i in range((end - start).days)]


class StoreFeedConfig(Config):  # type: ignore[misc]
    """The day of the store feed to merge (default: today, UTC)."""

    as_of: str = ""


@asset(
    key=STORES,
    group_name="dimensions",
    kinds={"hive", "orc"},
    owners=OWNERS,
    code_version="1",
    automation_condition=AutomationCondition.on_cron("0 6 * * *"),
    metadata={
        "write_mode": "merge",
        "key_columns": ["store_id"],
        "merge_options": {
            "delete_condition": "s.closed",
            "update_condition": "t.city <> s.city OR t.sqft <> s.sqft",
            "insert_condition": "NOT s.closed",  # a closed store is never inserted
        },
    },
    description="Slowly changing store dimension: the day's feed MERGEd on store_id (changed "
    "stores updated, new open ones inserted, closed ones deleted): a re-run changes nothing.",
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
        metadata={"partition_expr": "ds", "write_mode": "overwrite"},
        owners=OWNERS,
        code_version="1",
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
    owners=OWNERS,
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
    owners=OWNERS,
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
    metadata={TABLE_META: "mail.email_summary"},
    owners=OWNERS,
    code_version="1",
    automation_condition=AutomationCondition.eager(),
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
    metadata={"partition_expr": "ds", "write_mode": "overwrite"},
    owners=OWNERS,
    code_version="1",
    automation_condition=AutomationCondition.eager(),
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
