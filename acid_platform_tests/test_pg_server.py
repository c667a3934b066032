"""The PostgreSQL the tests run against (acid_platform_tests.pg_server, scripts/with-postgres):
the configured server when it answers, else a throwaway one that is started, used and removed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from acid_platform.metastore import Metastore
from acid_platform_tests.helpers import PG_URL, PG_URL_ENV
from acid_platform_tests.pg_server import answers, free_port, postgres_for_tests

REPO = Path(__file__).resolve().parents[1]

#: Run by the wrapper under test: one metastore transaction on the server it was handed.
CHILD = textwrap.dedent(
    """
    import os, sys
    from acid_platform.metastore import LockComponent, LockType, Metastore, OperationType
    from acid_platform_tests.helpers import make_table

    url = os.environ["ACID_TEST_PG_URL"]
    print(url)
    with Metastore(url) as ms:
        make_table(ms)
        txn = ms.open_txn()
        ms.lock(txn, [LockComponent(LockType.SHARED_WRITE, "db", "t")])
        assert ms.allocate_write_id(txn, "db", "t") == 1
        ms.add_write_components(txn, "db", "t", [None], OperationType.INSERT)
        ms.commit_txn(txn)
        assert ms.valid_write_ids(None, "db", "t").high_watermark == 1
        assert ms.show_transactions() == [] and ms.show_locks() == []
    sys.exit(7)
    """
)


def test_a_server_that_answers_is_used_as_it_is() -> None:
    # Under scripts/with-postgres the configured (or throwaway) server answers here.
    with postgres_for_tests() as url:
        assert url == PG_URL
        with Metastore(url) as ms:
            assert ms.dialect == "postgresql"


def test_nothing_answers_on_a_free_port() -> None:
    assert not answers(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test")


@pytest.mark.slow
def test_the_wrapper_starts_a_throwaway_server_when_none_answers(tmp_path: Path) -> None:
    """scripts/with-postgres with nothing at ACID_TEST_PG_URL: the command runs a real metastore
    transaction on a server started for it, gets its own exit status back, and the server and
    its files are gone afterwards."""
    dead = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(REPO), PG_URL_ENV: dead, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "with-postgres"), sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 7, done.stderr
    url = done.stdout.strip()
    assert url != dead and make_url(url).host == "127.0.0.1"
    assert f"throwaway PostgreSQL at {url}" in done.stderr
    assert not answers(url)  # stopped
    data = re.search(r"its files in (\S+)", done.stderr)
    assert data is not None and not Path(data.group(1)).exists()  # and deleted
