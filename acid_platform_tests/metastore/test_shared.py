"""The per-process metastore clients of Spark's Python workers and Mutation API coordinators
(issue 30: pools that were never closed) are one per URL and time-out, closed at exit
(``atexit``) or on demand."""

from __future__ import annotations

from pathlib import Path

from acid_platform.metastore import Metastore
from acid_platform.metastore.shared import close_shared_metastores, shared_metastore


def test_one_client_per_url_and_time_out_closed_on_demand(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ms.db'}"
    Metastore(url).close()  # the schema
    first = shared_metastore(url, 30)
    assert shared_metastore(url, 30.0) is first
    assert shared_metastore(url, 60) is not first
    close_shared_metastores()
    again = shared_metastore(url, 30)
    assert again is not first and again.valid_txns().high_watermark == 0
    close_shared_metastores()
