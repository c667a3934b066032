"""The wheel carries the Spark catalog jar, compiled from every ``jvm/*.java`` when the package
is built (``setup.py``'s build hook, against PySpark's jars), so a deployment needs a Java
runtime only: installed from that wheel, a Spark session on a ``PATH`` without ``javac`` (and no
``JAVA_HOME``, an empty cache) has the warehouse's tables by name, from the packaged jar.

The build runs ``pip wheel --no-build-isolation`` in this environment (it has PySpark, and the
machine has a JDK), as docker/Dockerfile's build stage does, with ``ACID_BUILD_JAR=require``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from acid_platform.engines.spark import jvm_build
from acid_platform_tests.topology import ROOT

pytestmark = pytest.mark.slow

JAR = "acid_platform/engines/spark/jvm/" + jvm_build.JAR_NAME
#: Programs of the JDK a JRE does not have.
JDK_ONLY = {"javac", "jar", "jarsigner", "javadoc", "jdeps", "jlink", "jshell", "jpackage"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the sources (no build files in the tree)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "acid_platform",
        src / "acid_platform",
        ignore=shutil.ignore_patterns("__pycache__", "*.jar"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"]
        + ["-w", str(tmp / "dist"), str(src)],
        env=os.environ | {"ACID_BUILD_JAR": "require"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (tmp / "dist").glob("acid_platform-*.whl")
    return built


def test_the_wheel_carries_the_jar_of_every_java_source(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert JAR in names, sorted(n for n in names if "jvm" in n)
        (tmp_path / "acid-catalog.jar").write_bytes(z.read(JAR))
    jar = tmp_path / "acid-catalog.jar"
    info = jvm_build.read_build_info(jar)
    assert info == jvm_build.build_info(version("pyspark"))  # this Spark, these sources
    with zipfile.ZipFile(jar) as z:
        classes = {Path(n).stem for n in z.namelist() if n.endswith(".class")}
        assert jvm_build.SERVICES[0] in z.namelist()
    # a class per source file (the sources are found, not listed: new files are compiled too)
    assert {p.stem for p in jvm_build.sources()} <= classes


def jre_only_path(tmp_path: Path) -> str:
    """A ``PATH`` of one directory holding links to every program of this ``PATH`` but the
    JDK's own (``javac`` …): ``java`` stays, a compiler cannot be found."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = bin_dir / entry.name
            if entry.name in JDK_ONLY or link.exists() or not os.access(entry.path, os.X_OK):
                continue
            link.symlink_to(entry.path)
    return str(bin_dir)


def test_a_session_with_a_jre_only_has_tables_by_name(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:  # what installing a pure-Python wheel puts in place
        z.extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env |= {
        "PATH": jre_only_path(tmp_path),
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # no jar compiled before
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "acid_platform_tests.packaging.jre_only_driver"]
        + [str(tmp_path / "wh"), str(out)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["javac"] is None
    assert Path(result["package"]).is_relative_to(site)  # the wheel's package, not the tree's
    assert result["jar"] == str(site / JAR)
    assert result["tables"] == ["t"]
    assert result["rows"] == [[1, "a"], [2, "b"]]
    assert not (tmp_path / "cache" / "acid_platform").exists()  # nothing compiled here
