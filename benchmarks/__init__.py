"""The benchmarks (see REPORT.md). Each runs with the allocator settings the project's own
processes opt into (:func:`acid_platform.runtime.tune_memory`), applied here before anything
loads pyarrow — as the CLI, Dagster's code location and Spark's workers apply them — so every
measure of the run, ours, the peers' and the raw-ORC limits alike, uses the same settings."""

from acid_platform.runtime import tune_memory

tune_memory()
