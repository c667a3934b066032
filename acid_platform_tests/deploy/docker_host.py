"""Docker on this machine for the deploy test: Debian's ``docker.io`` and ``docker-compose``
(installed with apt-get when missing, as root; otherwise the test fails, saying how to get
them), a ``dockerd`` started when none answers, and the images no registry can give here, built
from Debian's packages (``images/``; cached by tag: built once, then docker's layer cache).

:class:`Compose` runs ``docker-compose`` (v1, Debian's) on docker-compose.yml with the test's
override (``docker-compose.test.yml``: images only) under a project name of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from acid_platform_tests.topology import ROOT

HERE = Path(__file__).resolve().parent
#: debootstrap's Debian bookworm minbase, imported (what debian:bookworm-slim would be).
DEBOOTSTRAP = "acid-deploy-debootstrap:bookworm"
#: The substitutes of docker-compose.test.yml, each built from images/<dir>.
IMAGES = {
    "acid-deploy-base:bookworm": "base",
    "acid-deploy-postgres:test": "postgres",
    "acid-deploy-s3:test": "s3",
}
LOG = Path(tempfile.gettempdir()) / "acid-deploy-dockerd.log"
T = TypeVar("T")


def sh(*args: str, timeout: float = 3600, env: Mapping[str, str] | None = None) -> str:
    """Run ``args``; its stdout (fails the test with its output when it fails)."""
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done.stdout


def wait_for(what: str, check: Callable[[], T | None], timeout_s: float) -> T:
    """``check()``'s first true value, polled each second (fails after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(1)  # polling a server for a state it reaches by itself


def docker() -> str:
    """Debian's docker client (a newer one elsewhere on PATH may have no daemon of its own)."""
    return "/usr/bin/docker" if os.access("/usr/bin/docker", os.X_OK) else "docker"


def apt_install(*packages: str) -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail(
            f"{', '.join(packages)} missing and no way to install them (needs root and "
            f"apt-get): apt-get install {' '.join(packages)}"
        )
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    sh("apt-get", "update", "-qq", env=env)
    sh("apt-get", "install", "-y", "-qq", *packages, env=env)


def daemon_answers() -> bool:
    return subprocess.run([docker(), "info"], capture_output=True, check=False).returncode == 0


def ensure_docker() -> None:
    """docker.io and docker-compose installed, a dockerd answering (started here if none does:
    it keeps running, so images stay cached for the next run)."""
    missing = [
        p
        for p, exe in (("docker.io", "dockerd"), ("docker-compose", "docker-compose"))
        if not shutil.which(exe) and not os.access(f"/usr/sbin/{exe}", os.X_OK)
    ]
    if missing:
        apt_install(*missing)
    if daemon_answers():
        return
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    with LOG.open("ab") as log:
        subprocess.Popen([dockerd], stdout=log, stderr=log, start_new_session=True)
    wait_for("dockerd to answer", daemon_answers, 120)


def image_exists(tag: str) -> bool:
    return (
        subprocess.run(
            [docker(), "image", "inspect", tag], capture_output=True, check=False
        ).returncode
        == 0
    )


def debian_mirror(apt: Path = Path("/etc/apt")) -> str:
    """The Debian bookworm mirror of this machine's apt sources: the first source, in a file apt
    reads (``sources.list``, ``*.list``, ``*.sources``; not ``*.disabled…``), whose suite is
    ``bookworm`` itself (not -security or -updates, and not a third party's ``nodistro``)."""
    d = apt / "sources.list.d"
    files = [apt / "sources.list", *sorted(d.glob("*.list")), *sorted(d.glob("*.sources"))]
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text()
        # one-line style: deb [options] URI SUITE COMPONENTS...
        for url, suite in re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(https?://\S+)\s+(\S+)", text, re.M):
            if suite == "bookworm":
                return url
        # deb822 style: stanzas of URIs / Suites
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.findall(r"^URIs:\s*(.+)$", stanza, re.M)
            suites = re.findall(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and "bookworm" in suites[0].split():
                return uris[0].split()[0]
    return "http://deb.debian.org/debian"


def ensure_images() -> None:
    """The base from debootstrap (once: cached by its tag), then the substitutes."""
    if not image_exists(DEBOOTSTRAP):
        if not shutil.which("debootstrap"):
            apt_install("debootstrap")
        with tempfile.TemporaryDirectory() as tmp:
            rootfs = Path(tmp) / "rootfs"
            sh("debootstrap", "--variant=minbase", "bookworm", str(rootfs), debian_mirror())
            archive = Path(tmp) / "rootfs.tar"
            with tarfile.open(archive, "w") as tar:
                tar.add(rootfs, arcname=".")
            sh(docker(), "import", str(archive), DEBOOTSTRAP)
    for tag, directory in IMAGES.items():
        built = f"{tag}-{content_key(HERE / 'images' / directory)}"
        if image_exists(built):  # built from these files before: nothing to do
            sh(docker(), "tag", built, tag)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            context = Path(tmp) / directory
            shutil.copytree(HERE / "images" / directory, context)
            if directory == "base":
                # this machine's certificate authorities (its egress proxy signs PyPI's)
                certs = context / "certs"
                certs.mkdir()
                for crt in sorted(Path("/usr/local/share/ca-certificates").glob("*.crt")):
                    shutil.copy(crt, certs / crt.name)
            sh(docker(), "build", "-q", "-t", built, "-t", tag, str(context))


def content_key(directory: Path) -> str:
    """A digest of the files of ``directory`` (and of what they build on): an image's cache
    key, so an image is rebuilt only when its files change."""
    h = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        h.update(path.name.encode() + path.read_bytes())
    if directory.name != "base":
        h.update(content_key(directory.parent / "base").encode())
    else:
        for crt in sorted(Path("/usr/local/share/ca-certificates").glob("*.crt")):
            h.update(crt.read_bytes())
    return h.hexdigest()[:12]


@dataclass
class Compose:
    """``docker-compose -p project -f docker-compose.yml -f override … <args>``."""

    project: str
    files: tuple[Path, ...]
    env: Mapping[str, str]

    def __call__(self, *args: str, timeout: float = 3600) -> str:
        command = ["docker-compose", "-p", self.project]
        for f in self.files:
            command += ["-f", str(f)]
        return sh(*command, *args, timeout=timeout, env=os.environ | dict(self.env))

    def health(self) -> dict[str, str]:
        """Each service's container health (or state, without a health check)."""
        out: dict[str, str] = {}
        for cid in self("ps", "-q").split():
            fmt = (
                '{{index .Config.Labels "com.docker.compose.service"}} '
                "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}"
            )
            name, status = sh(docker(), "inspect", "-f", fmt, cid).split()
            out[name] = status
        return out

    def leftovers(self) -> dict[str, list[str]]:
        """The project's containers, networks and volumes that exist."""
        label = f"label=com.docker.compose.project={self.project}"
        return {
            kind: sh(
                docker(),
                kind,
                "ls",
                "-q",
                *(["-a"] if kind == "container" else []),
                "--filter",
                label,
            ).split()
            for kind in ("container", "network", "volume")
        }

    def volume_path(self, volume: str) -> Path:
        """Where the project's ``volume`` lies on this host."""
        out = sh(docker(), "volume", "inspect", "-f", "{{.Mountpoint}}", f"{self.project}_{volume}")
        return Path(out.strip())


COMPOSE_FILES = (ROOT / "docker-compose.yml", HERE / "docker-compose.test.yml")
S3_FILE = ROOT / "docker-compose.s3.yml"
