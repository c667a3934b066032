"""What a Spark Python worker imports: every worker (planning, reading, writing) imports the data
source's module first, so its import graph is the first statement's start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Heavy modules the read and write paths do not need: the SQL parser (statements, Hive
#: predicates), pandas (pulled in by ``pyarrow.dataset``), the embedded engine, Dagster.
NOT_ON_THE_WORKER_PATH = ("sqlglot", "pandas", "duckdb", "pyarrow.dataset", "dagster")


@pytest.mark.slow  # two interpreters importing PySpark and pyarrow
def test_the_data_source_module_imports_no_sql_parser_engine_or_pandas() -> None:
    code = (
        "import json, sys\n"
        "import acid_platform.engines.spark.datasource\n"
        "import acid_platform.engines.spark.reader, acid_platform.engines.spark.writer\n"
        f"print(json.dumps([m for m in {list(NOT_ON_THE_WORKER_PATH)!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == []
    # …and the package's public names still resolve (imported on first use)
    code = (
        "from acid_platform.table import Table, Transaction, lit\n"
        "print(Table.__module__, Transaction.__module__, lit.__module__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == [
        "acid_platform.table.table",
        "acid_platform.table.transaction",
        "acid_platform.table.expressions",
    ]
