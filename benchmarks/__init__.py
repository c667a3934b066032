"""The benchmarks (see REPORT.md). ``acid_platform`` is imported before anything loads pyarrow,
as in the CLI, Dagster's code and Spark's workers, so every measure of the run — ours, the
peers' and the raw-ORC limits alike — uses the allocator setting it makes
(``acid_platform/__init__.py``)."""

import acid_platform  # noqa: F401
