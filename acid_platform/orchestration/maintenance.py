"""All maintenance in one :class:`~dagster.Definitions`: the compaction sensor and job, the
cleaner schedule and job, the housekeeping sensor and job — each RUNNING by default. The
resource ``acid_warehouse`` (:class:`~.resources.AcidWarehouseResource`) is supplied by the
caller (or merged from the platform's definitions).

>>> defs = maintenance_definitions(cleaner_cron="0 * * * *")
>>> sorted(s.name for s in defs.sensors)
['acid_compaction_sensor', 'acid_housekeeping_sensor']
"""

# no `from __future__ import annotations`: Dagster reads the annotations of ops and sensors

from dagster import Definitions

from acid_platform.orchestration.cleaning import (
    cleaner_job_for,
    cleaner_schedule,
    housekeeping_job_for,
    housekeeping_sensor,
)
from acid_platform.orchestration.compaction import compaction_job_for, compaction_sensor
from acid_platform.orchestration.resources import DEFAULT_RESOURCE_KEY, AcidWarehouseResource


def maintenance_definitions(
    *,
    cleaner_cron: str = "*/5 * * * *",
    compaction_interval_s: int = 30,
    housekeeping_interval_s: int = 30,
    resource: AcidWarehouseResource | None = None,
    resource_key: str = DEFAULT_RESOURCE_KEY,
) -> Definitions:
    """Jobs, sensors and the schedule that keep the warehouse under ``resource_key``
    compacted, clean and free of crashed clients' transactions; their names are derived from
    the key (:func:`~.resources.keyed_name`). With ``resource``, it is bound under the key."""
    key = resource_key
    return Definitions(
        jobs=[compaction_job_for(key), cleaner_job_for(key), housekeeping_job_for(key)],
        sensors=[
            compaction_sensor(resource_key=key, minimum_interval_seconds=compaction_interval_s),
            housekeeping_sensor(resource_key=key, minimum_interval_seconds=housekeeping_interval_s),
        ],
        schedules=[cleaner_schedule(cleaner_cron, resource_key=key)],
        resources={key: resource} if resource is not None else None,
    )


__all__ = ["maintenance_definitions"]
