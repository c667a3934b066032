"""One-op jobs of a warehouse's services (compaction, cleaner, housekeeping, ingest), built the
same way for every warehouse resource key: the op takes the resource bound under the key, the
job is named after it (:func:`~.resources.keyed_name`) and tagged with its service and key, and
runs in process (one op: nothing to run in parallel, no process to start)."""

# no `from __future__ import annotations`: Dagster reads the annotations of ops

from collections.abc import Callable
from typing import Any

from dagster import (
    Config,
    JobDefinition,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    in_process_executor,
    job,
    op,
)

from acid_platform.orchestration.resources import (
    AcidWarehouseResource,
    keyed_name,
    warehouse_resource,
)

#: What an op does: the context, the warehouse resource, the run's config (or None).
Body = Callable[[OpExecutionContext, AcidWarehouseResource, Any], Output[None]]


def service_job(
    base_name: str,
    op_name: str,
    service: str,
    resource_key: str,
    body: Body,
    *,
    config_type: type[Config] | None = None,
    pool: str | None = None,
    description: str,
) -> JobDefinition:
    """The job ``keyed_name(base_name, resource_key)`` running ``body`` in its op ``op_name``
    (config ``ops.<op_name>.config`` of ``config_type``); its output holds no value, so no IO
    manager stores it (the code location's ``io_manager`` may be the ACID tables' one)."""

    def run_body(context: OpExecutionContext, config: Any = None) -> Output[None]:
        return body(context, warehouse_resource(context, resource_key), config)

    def without_config(context: OpExecutionContext) -> Output[None]:
        return run_body(context)

    def with_config(context: OpExecutionContext, config: Config) -> Output[None]:
        return run_body(context, config)

    with_config.__annotations__["config"] = config_type  # Dagster reads the config class here
    compute = without_config if config_type is None else with_config
    service_op = op(
        name=op_name,
        pool=pool,
        out=Out(Nothing),
        required_resource_keys={resource_key},
        description=description,
    )(compute)

    @job(
        name=keyed_name(base_name, resource_key),
        executor_def=in_process_executor,
        tags={"acid/service": service, "acid/warehouse": resource_key},
        description=description,
    )
    def _service_job() -> None:
        service_op()

    return _service_job


__all__ = ["Body", "service_job"]
