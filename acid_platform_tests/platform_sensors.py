"""Evaluating a sensor of the example platform's ``Definitions`` once, as the daemon would (its
``acid_warehouse`` resource, the platform's definitions)."""

from __future__ import annotations

from dagster import DagsterInstance, Definitions, SensorResult, build_sensor_context


def platform_tick(
    platform: Definitions, instance: DagsterInstance, sensor_name: str, cursor: str | None
) -> SensorResult:
    """One tick of the platform's sensor ``sensor_name`` from ``cursor``."""
    sensor = platform.resolve_sensor_def(sensor_name)
    resources = {"acid_warehouse": (platform.resources or {})["acid_warehouse"]}
    with build_sensor_context(
        instance=instance, cursor=cursor, definitions=platform, resources=resources
    ) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult)
    return result
