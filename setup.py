"""The build hook: the wheel carries the Spark catalog jar, compiled from
acid_platform/engines/spark/jvm/*.java when the package is built (metadata: pyproject.toml).

It compiles when the build environment has PySpark (its jars are the class path) and a JDK's
``javac``; otherwise the wheel has no jar and a development install compiles it at run time
(``catalog_install.catalog_jar``). ``ACID_BUILD_JAR=require`` makes a missing PySpark or JDK
an error (docker/Dockerfile sets it). PySpark is not a [build-system] requirement: a JDK is
needed too, which pip cannot install, and every isolated build would install ~450 MB of
PySpark; build with ``--no-build-isolation`` in an environment that has both, as the image does.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _jvm_build():  # type: ignore[no-untyped-def]
    """acid_platform/engines/spark/jvm_build.py, loaded by path (standard library only)."""
    path = HERE / "acid_platform" / "engines" / "spark" / "jvm_build.py"
    spec = importlib.util.spec_from_file_location("_acid_jvm_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithJar(build_py):
    """``build_py``, then the catalog jar into the built package."""

    def run(self) -> None:
        super().run()
        jvm_build = _jvm_build()
        required = os.environ.get("ACID_BUILD_JAR", "") == "require"
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            self._skip("PySpark is not importable in the build environment", required)
            return
        jars = Path(spec.origin).parent / "jars"
        version = importlib.metadata.version("pyspark")
        target = Path(self.build_lib) / "acid_platform" / "engines" / "spark" / "jvm"
        try:
            jar = jvm_build.compile_jar(target / jvm_build.JAR_NAME, jars, version)
        except jvm_build.JarBuildError as exc:
            self._skip(str(exc), required)
            return
        self.announce(f"compiled {jar} for Spark {version}", level=2)

    def _skip(self, why: str, required: bool) -> None:
        message = f"the Spark catalog jar is not built: {why}"
        if required:
            raise RuntimeError(message + " (ACID_BUILD_JAR=require)")
        self.warn(message + "; it is compiled at run time when a JDK is at hand")


setup(cmdclass={"build_py": BuildPyWithJar})
