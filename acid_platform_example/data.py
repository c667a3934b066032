"""The example platform's data: its days, its tables' asset keys, and the rows its sources
deliver (made up, the same for the same day): the store feed, sales, email events and the
returns that land as files (:data:`RETURNS_COLUMNS`; :func:`returns_of` makes a day's file).
"""

import datetime as dt
import random
from typing import Any

import pyarrow as pa
from dagster import AssetKey, DailyPartitionsDefinition

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


PLATFORM_JOB = "acid_platform"
RETURNS_TABLE = "retail.returns"
RETURNS_SENSOR = "acid_returns_ingest"
STORE_CHANGES = AssetKey(["retail", "store_changes"])
STORE_CHANGES_TABLE = "retail.store_changes"
STORE_CHANGES_SENSOR = "acid_store_changes"


def platform_run_tags(start: str | None = None, end: str | None = None) -> dict[str, str]:
    """The tags of ONE run of the ``acid_platform`` job over the days ``start`` to ``end``
    (default: all of them): Dagster's partition range tags (a single-run backfill)."""
    keys = DAYS.get_partition_keys()
    return {
        "dagster/asset_partition_range_start": start or keys[0],
        "dagster/asset_partition_range_end": end or keys[-1],
    }
