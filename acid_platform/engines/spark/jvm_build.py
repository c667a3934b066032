"""Compiling the JVM half of the Spark engine (every ``jvm/*.java`` beside this module) into the
catalog jar: at package build time (``setup.py``'s ``build_py`` puts :data:`JAR_NAME` in the
wheel, against the build's PySpark jars) and, as a fallback for a development checkout, at run
time (:func:`~.catalog_install.catalog_jar`, cached under ``~/.cache/acid_platform``).

Standard library only: ``setup.py`` loads this file by path, before the package or any of its
dependencies is installed. A jar records what it was built from (:data:`BUILD_INFO`: the Spark
version and a digest of the sources), so a packaged jar is used only by the Spark it was
compiled for and only with the sources it was compiled from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

#: The sources: every ``.java`` file here (the list is not written down anywhere else).
JVM_DIR = Path(__file__).with_name("jvm")
#: The packaged jar's name, inside :data:`JVM_DIR` of an installed wheel.
JAR_NAME = "acid-catalog.jar"
#: The jar's service registration: ``AcidSource`` is a Spark data source (``format(name)``).
SERVICES = (
    "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister",
    b"acid_platform.spark.AcidSource\n",
)
#: What a jar was built from: ``spark.version=…`` and ``sources.sha256=…`` lines.
BUILD_INFO = "META-INF/acid_platform/build.properties"


class JarBuildError(Exception):
    """No ``javac``, or it failed (the message says which)."""


def sources(jvm_dir: Path = JVM_DIR) -> list[Path]:
    """Every ``.java`` file of ``jvm_dir``, in name order."""
    return sorted(jvm_dir.glob("*.java"))


def sources_digest(jvm_dir: Path = JVM_DIR) -> str:
    """A digest of the sources' names and contents (and the service registration)."""
    h = hashlib.sha256()
    for path in sources(jvm_dir):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(SERVICES[1])
    return h.hexdigest()


def build_info(spark_version: str, jvm_dir: Path = JVM_DIR) -> dict[str, str]:
    return {"spark.version": spark_version, "sources.sha256": sources_digest(jvm_dir)}


def read_build_info(jar: Path) -> dict[str, str]:
    """The :data:`BUILD_INFO` of ``jar`` (empty if it has none)."""
    with zipfile.ZipFile(jar) as z:
        if BUILD_INFO not in z.namelist():
            return {}
        text = z.read(BUILD_INFO).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def javac() -> str:
    """``$JAVA_HOME/bin/javac``, else the ``javac`` of the ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    candidates = [os.path.join(home, "bin", "javac")] if home else []
    found = shutil.which("javac")
    candidates += [found] if found else []
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise JarBuildError(
        "no javac (JDK) found to compile the acid session catalog: install a JDK or set JAVA_HOME"
    )


def compile_jar(jar: Path, spark_jars: Path, spark_version: str, jvm_dir: Path = JVM_DIR) -> Path:
    """Compile the sources of ``jvm_dir`` against ``spark_jars`` (a directory of Spark's jars)
    into ``jar`` (replaced atomically), with its :data:`BUILD_INFO`."""
    files = sources(jvm_dir)
    if not files:
        raise JarBuildError(f"no .java sources in {jvm_dir}")
    compiler = javac()
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        done = subprocess.run(
            [compiler, "-nowarn", "-d", tmp, "-cp", str(spark_jars / "*"), *map(str, files)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            names = ", ".join(f.name for f in files)
            raise JarBuildError(f"compiling {names} failed: {done.stderr.strip()[-2000:]}")
        info = build_info(spark_version, jvm_dir)
        staging = Path(tmp) / JAR_NAME
        with zipfile.ZipFile(staging, "w") as out:
            for cls in sorted(Path(tmp).rglob("*.class")):
                out.write(cls, cls.relative_to(tmp).as_posix())
            out.writestr(*SERVICES)
            out.writestr(BUILD_INFO, "".join(f"{k}={v}\n" for k, v in info.items()))
        os.replace(staging, jar)
    return jar
