"""Dagster: the warehouse as a resource, and the maintenance that runs by itself (compaction
sensor and job, cleaner schedule, housekeeping sensor, asset checks). Only this layer (and
those above it) imports Dagster.

* :mod:`.resources` — ``AcidWarehouseResource``;
* :mod:`.compaction` — the compaction sensor (initiator + one run per queued entry) and job;
* :mod:`.cleaning` — the cleaner schedule and job, the housekeeping sensor and job;
* :mod:`.maintenance` — ``maintenance_definitions()``: all of it in one ``Definitions``.
"""

from acid_platform.orchestration.cleaning import (
    cleaner_job,
    cleaner_schedule,
    housekeeping_job,
    housekeeping_sensor,
)
from acid_platform.orchestration.compaction import compaction_job, compaction_sensor
from acid_platform.orchestration.maintenance import maintenance_definitions
from acid_platform.orchestration.resources import AcidWarehouseResource

__all__ = [
    "AcidWarehouseResource",
    "cleaner_job",
    "cleaner_schedule",
    "compaction_job",
    "compaction_sensor",
    "housekeeping_job",
    "housekeeping_sensor",
    "maintenance_definitions",
]
