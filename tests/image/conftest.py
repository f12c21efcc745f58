"""Bases and a registry for the image tests: a Debian-like and an rpm-based base made
offline from try-install's stand-ins (empty packages of the bundled system lists,
installed by dpkg or rpm into a root, written as an OCI layout), and Debian's
docker-registry on 127.0.0.1."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gfxpack.formats import DEB, RPM, PackageFormat
from gfxpack.image.layer import write_layer
from gfxpack.image.layers import snapshot
from gfxpack.image.layout import (
    CONFIG,
    MANIFEST,
    REF_NAME,
    Descriptor,
    manifest,
    put_json,
    start,
    write_index,
)
from gfxpack.sandbox import Sandbox
from gfxpack.trial import DPKG_OPTIONS, dpkg_database, stand_ins
from gfxpack.verify.system import read_system
from tests.verify.conftest import (  # noqa: F401  (the published example, signed too)
    example_repo,
    rsa_key,
    signed_repo,
)

BASE_TAG = "base"
EPOCH = 1_700_000_000


def need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            pytest.skip(f"{tool} not installed (make system-tools installs it)")


def write_base(root: Path, layout: Path) -> Path:
    """``root`` as a one-layer image in the new OCI layout ``layout``, tagged ``base``."""
    start(layout)
    paths = [p for p in snapshot(root)]
    layer = write_layer(root, paths, EPOCH, layout, "base")
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/bin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
        "history": [{"created_by": "tests/image/conftest.py"}],
    }
    config_descriptor = put_json(layout, CONFIG, config)
    image = put_json(layout, MANIFEST, manifest(config_descriptor, [layer.descriptor], {}))
    write_index(layout, [Descriptor(MANIFEST, image.digest, image.size, {REF_NAME: BASE_TAG})])
    return layout


def stand_in_root(fmt: PackageFormat, root: Path, scratch: Path) -> Path:
    """A root whose package database holds the bundled system list's stand-ins."""
    root.mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text('ID=gfxpack-test\nNAME="stand-in base"\n')
    label, system = read_system(None, fmt)
    made = stand_ins(fmt, system, scratch, label)
    box = Sandbox((root.resolve(), scratch.resolve()))
    if fmt is DEB:
        dpkg_database(root)
        command = ["dpkg", f"--root={root.resolve()}", "--force-depends", *DPKG_OPTIONS, "-i"]
    else:
        subprocess.run(box.command(["rpm", "--root", str(root.resolve()), "--initdb"]), check=True)
        command = ["rpm", "--root", str(root.resolve()), "-i", "--nodeps", "--noscripts"]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LC_ALL": "C.UTF-8"}
    subprocess.run(box.command([*command, *map(str, made)], env), check=True, capture_output=True)
    for volatile in ("var/log",):
        shutil.rmtree(root / volatile, ignore_errors=True)
    return root


@pytest.fixture(scope="session")
def debian_base(tmp_path_factory) -> Path:
    need("dpkg", "bwrap")
    where = tmp_path_factory.mktemp("debian-base")
    root = stand_in_root(DEB, where / "root", where / "stand-ins")
    return write_base(root, where / "layout")


@pytest.fixture(scope="session")
def rpm_base(tmp_path_factory) -> Path:
    need("rpm", "dnf", "bwrap")
    where = tmp_path_factory.mktemp("rpm-base")
    root = stand_in_root(RPM, where / "root", where / "stand-ins")
    return write_base(root, where / "layout")


@dataclass
class Registry:
    url: str  # HOST:PORT
    log: Path

    def blob_uploads(self) -> int:
        """How many blob uploads the registry's log records (PUT .../blobs/uploads/...)."""
        text = self.log.read_text(errors="replace")
        return len(re.findall(r'"PUT /v2/\S+/blobs/uploads/\S+ HTTP/1\.1" 201 ', text))

    def blob_downloads(self) -> set[str]:
        """The digests of the blobs the registry's log records as fetched (GET, 200)."""
        text = self.log.read_text(errors="replace")
        return set(re.findall(r'"GET /v2/\S+/blobs/(sha256:[0-9a-f]{64}) HTTP/1\.1" 200 ', text))


@pytest.fixture
def registry(tmp_path) -> Iterator[Registry]:
    """Debian's docker-registry on a free port of 127.0.0.1, storing in tmp_path."""
    yield from serve_registry(tmp_path, "")


USER, PASSWORD = "rocm-ci", "s3cret-Pa55word"


@pytest.fixture
def basic_registry(tmp_path) -> Iterator[Registry]:
    """docker-registry asking for :data:`USER` and :data:`PASSWORD` (htpasswd, Basic)."""
    need("htpasswd")
    made = subprocess.run(
        ["htpasswd", "-Bbn", USER, PASSWORD], capture_output=True, check=True, text=True
    )
    (tmp_path / "htpasswd").write_text(made.stdout)
    auth = f"auth:\n  htpasswd:\n    realm: gfxpack-test\n    path: {tmp_path / 'htpasswd'}\n"
    yield from serve_registry(tmp_path, auth)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_registry(tmp_path: Path, auth: str) -> Iterator[Registry]:
    """docker-registry on a free port of 127.0.0.1 with ``auth`` (YAML) in its config."""
    need("docker-registry")
    port = free_port()
    config = tmp_path / "registry.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
        f"storage:\n  filesystem:\n    rootdirectory: {tmp_path / 'storage'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n" + auth
    )
    log = tmp_path / "registry.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["docker-registry", "serve", str(config)], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # up, asking for credentials
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"docker-registry did not start: {log.read_text(errors='replace')}")
        yield Registry(f"127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(timeout=10)
