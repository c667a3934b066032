"""The example platform of acid_platform: a project in Dagster's ``dg`` layout (``defs/``
autoloaded), made from the seeds' use cases. The repository root serves it (``dg dev``,
``dagster dev -w workspace.yaml``, ``bash scripts/platform``); ``acid new`` makes a project of
the same shape for you."""
