"""A real S3 server for the tests: moto's server mode (``moto[server]``, a dev dependency) run as
its own process on a free 127.0.0.1 port and spoken to over HTTP by pyarrow's S3 client.

Every request the server answers is logged one line each (``"GET /bucket/key HTTP/1.1" 200``);
:meth:`S3Server.requests_since` reads them back, so a test can count what a statement asked of
the store.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from acid_platform.format.storage import StorageOptions

START_TIMEOUT_S = 60
ACCESS_KEY = "acid-test"
SECRET_KEY = "acid-test-secret"
REGION = "us-east-1"
_REQUEST = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+) (\S+) HTTP/1\.[01]')


@dataclass(frozen=True)
class Request:
    """One request the server answered: method, path (``/bucket/key``) and query string."""

    method: str
    path: str
    query: str

    @property
    def kind(self) -> str:
        """LIST, GET, HEAD, PUT, DELETE, POST (multipart steps), by S3 semantics."""
        if self.method == "GET" and ("list-type" in self.query or self.path.count("/") <= 1):
            return "LIST"
        return self.method


class S3Server:
    """A running moto server (see module docs)."""

    def __init__(self, port: int, log: Path, process: subprocess.Popen[bytes]) -> None:
        self.port = port
        self.log = log
        self.process = process

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self) -> StorageOptions:
        return StorageOptions(
            endpoint=self.endpoint,
            region=REGION,
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            path_style=True,
        )

    def new_bucket(self, prefix: str = "wh") -> str:
        """Create a fresh bucket; returns its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        fs = pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            allow_bucket_creation=True,
        )
        fs.create_dir(name)
        return name

    def log_offset(self) -> int:
        return self.log.stat().st_size

    def requests_since(self, offset: int) -> list[Request]:
        """The requests logged after ``offset`` (see :meth:`log_offset`)."""
        with self.log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        out = []
        for m in _REQUEST.finditer(text):
            path, _, query = m.group(2).partition("?")
            out.append(Request(m.group(1), path, query))
        return out

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """Count the requests made inside the block by kind (LIST, GET, HEAD, PUT, ...)."""
        counts: Counter[str] = Counter()
        start = self.log_offset()
        yield counts
        for r in self.requests_since(start):
            counts[r.kind] += 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def s3_server(workdir: Path) -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port; stop it afterwards."""
    port = _free_port()
    log = workdir / "moto.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port):
            if process.poll() is not None:
                raise RuntimeError(f"moto server exited: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not answer on port {port}")
            time.sleep(0.1)  # readiness poll of a starting server, not a wait for a result
        yield S3Server(port, log, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
