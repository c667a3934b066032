"""Starting Spark for a command (``acid worker``, ``acid services``): only when needed, quietly,
and failing fast with the real cause.

* :func:`check_master` — before any JVM starts, a ``spark://`` master's hosts are resolved,
  connected to and sent an empty Spark RPC request (a few seconds at most): an unknown host, a
  closed port or a port where something other than Spark listens is one line,
  ``EngineError: Spark master spark://x:7077: cannot resolve host 'x' (…)``, not minutes of
  registration retries ending in "Cannot call methods on a stopped SparkContext".
* :func:`command_session` — the session with the JVM's output (Spark's log, its warnings, the
  Python workers' stderr) in a file, so the command's console stays the command's; no progress
  bar; a start that fails or does not finish within
  ``start_timeout_s`` raises :class:`~acid_platform.errors.EngineError` with the innermost Java
  cause.
* :class:`LazySession` — the session started on first use (a worker whose queue is empty never
  starts Spark), stopped at the end if it was started.

>>> # with LazySession("spark://host:7077", "acid worker") as lazy:
>>> #     executor = compaction_router(lazy.get, wh.conf)   # Spark starts for a large partition
"""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acid_platform.engines.spark.extensions import extension_conf
from acid_platform.errors import EngineError
from acid_platform.runtime import spark_executor_env

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: How long each host of a ``spark://`` master gets to accept a TCP connection.
CONNECT_TIMEOUT_S = 5.0
#: How long a session may take to start (JVM, then the master accepting the application).
START_TIMEOUT_S = 90.0
_OTHER_MASTERS = ("local", "yarn", "k8s://", "mesos://")


def check_master(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`EngineError` (one line) unless ``master`` is a master URL Spark knows and,
    for ``spark://host:port[,host:port…]``, one of its hosts answers Spark's RPC protocol."""
    if not master.startswith("spark://"):
        if master.startswith(_OTHER_MASTERS):
            return
        raise EngineError(
            f"{master!r} is not a Spark master URL (spark://host:port, local[N], yarn, k8s://…)"
        )
    problems: list[str] = []
    for hostport in master[len("spark://") :].split(","):
        host, sep, port = hostport.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit():
            raise EngineError(f"Spark master {master}: {hostport!r} is not host:port")
        problem = _connect(host, int(port), timeout_s)
        if problem is None:
            return
        problems.append(problem)
    raise EngineError(f"Spark master {master}: {'; '.join(problems)}")


def command_session(
    master: str,
    app_name: str,
    *,
    log_dir: str | os.PathLike[str] | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession on ``master`` for a command: the master checked first
    (:func:`check_master`); the JVM's own output (its log, warnings, Python workers' stderr)
    written to ``<log_dir>/spark.log`` (a temporary directory by default) instead of the
    console; no progress bar; Hive's maintenance statements in Spark SQL
    (:func:`~.extensions.extension_conf`). A session already running in this process is
    returned as is."""
    check_master(master)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    settings = {"spark.ui.showConsoleProgress": "false", **spark_executor_env(), **(conf or {})}
    settings |= extension_conf(settings)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if SparkContext._active_spark_context is not None:
        return builder.getOrCreate()
    directory = Path(log_dir or tempfile.mkdtemp(prefix="acid-spark-"))
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / "spark.log"
    spark_conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
    started: dict[str, Any] = {}

    def start() -> None:
        try:
            with open(log_path, "ab") as log:  # the JVM keeps its own copy of the descriptor
                gateway = launch_gateway(
                    spark_conf, popen_kwargs={"stdout": log, "stderr": subprocess.STDOUT}
                )
            SparkContext(conf=spark_conf, gateway=gateway)
            started["spark"] = builder.getOrCreate()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            started["error"] = exc

    thread = threading.Thread(target=start, name="spark-start", daemon=True)
    thread.start()
    thread.join(start_timeout_s)
    if "spark" in started:
        return started["spark"]  # type: ignore[no-any-return]
    if "error" in started:
        raise EngineError(
            f"Spark did not start on {master}: {java_cause(started['error'])} (log: {log_path})"
        ) from started["error"]
    raise EngineError(
        f"Spark did not start on {master} within {start_timeout_s:g} s: the master did not "
        f"accept the application (is it a standalone master's RPC port?) (log: {log_path})"
    )


class LazySession:
    """A :func:`command_session` started on the first :meth:`get`; :meth:`stop` (or leaving the
    ``with`` block) stops it only if this object started it (not a session that was already
    running in this process, which ``getOrCreate`` hands back)."""

    def __init__(self, master: str, app_name: str, conf: Mapping[str, str] | None = None) -> None:
        self.master = master
        self.app_name = app_name
        self.conf = conf
        self._spark: SparkSession | None = None
        self._owned = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether :meth:`get` has started the session."""
        return self._spark is not None

    def get(self) -> SparkSession:
        """The session, started now if it is not yet."""
        with self._lock:
            if self._spark is None:
                from pyspark.sql import SparkSession

                self._owned = SparkSession.getActiveSession() is None
                self._spark = command_session(self.master, self.app_name, conf=self.conf)
            return self._spark

    def stop(self) -> None:
        """Stop the session if it was started."""
        with self._lock:
            if self._spark is not None and self._owned:
                self._spark.stop()
            self._spark = None

    def __enter__(self) -> LazySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_CAUSE = re.compile(
    r"^\s*(?:Caused by: )?((?:java|javax|org|scala|io)\.[\w.$]+(?:Exception|Error)): ?(.*)$"
)


def java_cause(exc: BaseException) -> str:
    """The innermost Java exception named in a py4j / PySpark error (``Caused by: …``), as
    ``SimpleName: message``; else the error's first line."""
    found: tuple[str, str] | None = None
    for line in str(exc).splitlines():
        match = _CAUSE.match(line)
        if match:
            found = (match.group(1).rsplit(".", 1)[-1], match.group(2).strip())
    if found is not None:
        kind, message = found
        return f"{kind}: {message}" if message else kind
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _connect(host: str, port: int, timeout_s: float) -> str | None:
    """``None`` if ``host:port`` accepts a TCP connection, else why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"cannot resolve host {host!r} ({exc.strerror})"
    reason = "no address"
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(timeout_s)
                sock.connect(address)
                return _spark_rpc_problem(sock, f"{host}:{port}", timeout_s)
        except TimeoutError:
            reason = f"no answer within {timeout_s:g} s"
        except OSError as exc:
            reason = exc.strerror or str(exc)
    return f"cannot connect to {host}:{port} ({reason})"


#: An empty RPC request in Spark's wire protocol: the frame length (8 bytes, itself included),
#: the message type (3: RpcRequest), the request id and the body size. A Spark RPC server
#: answers it with an RpcFailure (type 5: the empty body is not a message) or an RpcResponse.
_RPC_PROBE = struct.pack(">qbqi", 21, 3, 0x5ACD, 0)
_RPC_ANSWERS = (4, 5)


def _spark_rpc_problem(sock: socket.socket, where: str, timeout_s: float) -> str | None:
    """``None`` if the server on ``sock`` answers Spark's RPC protocol (or closes the connection
    without a word, as a Spark server with authentication may), else what it does instead."""
    try:
        sock.sendall(_RPC_PROBE)
        head = b""
        while len(head) < 9:
            chunk = sock.recv(9 - len(head))
            if not chunk:
                break
            head += chunk
    except TimeoutError:
        return (
            f"{where} accepts connections but does not answer Spark's RPC protocol within "
            f"{timeout_s:g} s (not a standalone master's port?)"
        )
    except OSError:
        return None  # reset by the server: let Spark itself tell
    if not head:
        return None
    length, kind = struct.unpack(">qb", head) if len(head) == 9 else (-1, -1)
    if kind in _RPC_ANSWERS and 9 <= length < 1 << 31:
        return None
    return (
        f"{where} does not speak Spark's RPC protocol (it answered {head[:9]!r}; "
        "not a standalone master's port?)"
    )


__all__ = [
    "CONNECT_TIMEOUT_S",
    "START_TIMEOUT_S",
    "LazySession",
    "check_master",
    "command_session",
    "java_cause",
]
