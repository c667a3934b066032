"""The ``acid_platform`` job: every asset of the example in ONE run over a range of days (a
single-run backfill). It runs in process: its Spark step and the steps that read Spark
DataFrames share one Spark session (one JVM) per run. Runs the automation requests use the
code location's default executor (multiprocess: independent steps in parallel)."""

from dagster import AssetSelection, define_asset_job, in_process_executor

from acid_platform_example.data import PLATFORM_JOB

acid_platform_job = define_asset_job(
    PLATFORM_JOB,
    selection=AssetSelection.groups("dimensions", "ingest", "corrections", "reporting")
    - AssetSelection.keys("retail/returns", "retail/store_changes"),
    executor_def=in_process_executor,
    description="The example platform end to end (one run over a range of days; Spark steps "
    "share one JVM).",
)
