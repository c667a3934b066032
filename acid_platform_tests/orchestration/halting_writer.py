"""A step process killed halfway through an overwrite (run by ``test_atomicity``)::

    python -m acid_platform_tests.orchestration.halting_writer <warehouse> <marker> <version>

materializes partition ``us`` of :func:`customers` with rows of ``version``; once the new
``base_w`` files are written, before the commit, it writes ``marker`` and stops, waiting for
kill -9. Only the stop is injected: the files are written by the real writer.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import signal
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
from dagster import AssetExecutionContext, StaticPartitionsDefinition, asset, materialize

from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource
from acid_platform.table import inserts

REGIONS = StaticPartitionsDefinition(["us", "eu"])
ROWS = 1000


def customers_of(version: int) -> Any:
    """The asset: ``ROWS`` rows of its region and ``version``."""

    @asset(name="customers", partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def customers(context: AssetExecutionContext) -> pa.Table:
        region = context.partition_key
        return pa.table({"id": range(ROWS), "region": [region] * ROWS, "v": [version] * ROWS})

    return customers


def materialize_region(root: str, region: str, version: int) -> bool:
    """One run of one region."""
    acid = AcidWarehouseResource(warehouse=root)
    resources = {"acid_warehouse": acid, "io_manager": AcidTableIOManager(acid_warehouse=acid)}
    return materialize([customers_of(version)], partition_key=region, resources=resources).success


def halt_after_files(marker: str) -> None:
    """From now on the embedded writer stops for good after writing its files."""
    write = inserts.run_writes

    def halting(*args: Any, **kwargs: Any) -> Any:
        write(*args, **kwargs)
        Path(marker).write_text("files written, not committed")
        while True:
            signal.pause()

    inserts.run_writes = halting  # type: ignore[assignment]


if __name__ == "__main__":
    halt_after_files(sys.argv[2])
    materialize_region(sys.argv[1], "us", int(sys.argv[3]))
