"""Code the concurrent ingest-run test runs in separate OS processes (importable by spawned
children): Dagster's in-process execution is not for two threads at once."""

from __future__ import annotations

from typing import Any

from dagster import DagsterInstance

from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.orchestration import AcidWarehouseResource, ingest_job


def run_ingest_job(root: str, run_config: dict[str, Any], barrier: Any, out: Any) -> None:
    """Run the ingest job on ``run_config``, waiting at ``ingest.file_written`` for every
    process at ``barrier``; put ``(success, output metadata)`` on ``out``."""

    def meet(step: str) -> None:
        if step == "ingest.file_written":
            barrier.wait(timeout=120)

    with on_checkpoint(meet), DagsterInstance.ephemeral() as instance:
        result = ingest_job.execute_in_process(
            run_config=run_config,
            resources={"acid_warehouse": AcidWarehouseResource(warehouse=root)},
            instance=instance,
            raise_on_error=False,
        )
    metadata: dict[str, Any] = {}
    for event in result.all_events:
        if event.is_successful_output:
            metadata = {k: v.value for k, v in event.step_output_data.metadata.items()}
    out.put((result.success, metadata))
