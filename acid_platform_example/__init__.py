"""The example platform of acid_platform: a project in Dagster's ``dg`` layout (``defs/``
autoloaded), made from the seeds' use cases. The repository root serves it (``dg dev``,
``dagster dev -w workspace.yaml``, ``bash scripts/platform``); ``acid new`` makes a project of
the same shape for you.

The code location's process opts into acid_platform's allocator settings here, before any of
its modules loads pyarrow (:func:`acid_platform.runtime.tune_memory`; a setting already in the
environment wins)."""

from acid_platform.runtime import tune_memory

tune_memory()
