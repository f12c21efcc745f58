"""A release stream's lifecycle on real machines (streams.md rule 6): a root with an older
build installed by apt-get, dnf or zypper (gfxpack try-install's library), newer builds
published and the older ones pruned, then the client's own upgrade reaches the newest, and
8.3 installs beside 8.2 with no file conflict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gfxpack import trial
from gfxpack.repo import publish
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.retention import Retention
from gfxpack.repo.stream import prune, read_builds
from tests.conftest import build_example, generate_example, run

pytestmark = pytest.mark.skipif(
    shutil.which("apt-get") is None or shutil.which("dnf") is None,
    reason="needs apt-get and dnf",
)
DAY = 86_400
EPOCH = 1_700_000_000
CORE = {"8.2": "amdrocm-core8.2-gfx942", "8.3": "amdrocm-core8.3-gfx942"}
NEWER = ("8.2.1", "8.2.2", "8.3.0")


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> dict[str, Path]:
    """The example built (small) at 8.2.0, then the newer builds."""
    base = tmp_path_factory.mktemp("lifecycle")
    artifacts = generate_example(base / "artifacts", 0.02)
    return {v: build_example(artifacts, base / v, version=v).out for v in ("8.2.0", *NEWER)}


def _installed(client: str, root: Path) -> dict[str, str]:
    """Every package in ``root`` and its version (VERSION-RELEASE)."""
    if client == "apt":
        listing = run("dpkg-query", "--root", str(root), "-W", "-f=${Package} ${Version}\\n")
    else:
        listing = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\\n")
    return dict(line.split(" ") for line in listing.stdout.splitlines())


def _client(client: str, home: Path, root: Path, url: str) -> list[str]:
    """The client's command line with its own configuration, the repository at ``url``."""
    if client == "apt":
        options = trial.apt_options(home, root / "var/lib/dpkg/status", root)
        (home / "sources.list").write_text(f"deb [trusted=yes] {url}/apt stable main\n")
        run("apt-get", *options, "-q", "update")
        return ["apt-get", *options, "-q", "-y"]
    make_options = trial.dnf_options if client == "dnf" else trial.zypper_options
    options = make_options(home, root)
    (home / "repos.d/stream.repo").write_text(trial.repo_section("stream", f"{url}/rpm"))
    return [client, *options]


def _ours(installed: dict[str, str]) -> dict[str, str]:
    return {name: v for name, v in installed.items() if name.startswith("amdrocm-")}


@pytest.mark.slow
@pytest.mark.parametrize("client", ["apt", "dnf", "zypper"])
def test_a_pruned_machine_upgrades_to_the_newest_and_takes_8_3_beside(client, stream, tmp_path):
    if shutil.which(client if client != "apt" else "apt-get") is None:
        pytest.skip(f"needs {client}")
    repo, root = tmp_path / "repo", tmp_path / "root"
    publish(stream["8.2.0"], repo, "stable", EPOCH)
    report = trial.try_install(repo, [CORE["8.2"]], client, root=root)
    assert report.ok, report.failure()
    old = _ours(_installed(client, root))
    assert CORE["8.2"] in old and set(old.values()) == {"8.2.0-1"}
    for day, version in enumerate(NEWER, start=1):
        publish(stream[version], repo, "stable", EPOCH + day * DAY)
    # The machine's version is pruned: its packages are no longer in the repository.
    result = prune(repo, Retention.parse("2builds"), PublishOptions("stable", EPOCH + 10 * DAY))
    assert result["removed_versions"] == ["8.2.0-1", "8.2.1-1"]
    assert [b.version for b in read_builds(repo)] == ["8.2.2-1", "8.3.0-1"]
    with trial.serve(repo) as url:
        command = _client(client, tmp_path / "client", root, url)
        upgrade = {"apt": "upgrade", "dnf": "upgrade", "zypper": "update"}[client]
        run(*command, upgrade)
        assert _ours(_installed(client, root)) == dict.fromkeys(old, "8.2.2-1")
        # dpkg and rpm refuse to overwrite another package's file: 8.3 beside 8.2 shares none.
        run(*command, "install", CORE["8.3"])
    after = _ours(_installed(client, root))
    assert after[CORE["8.2"]] == "8.2.2-1" and after[CORE["8.3"]] == "8.3.0-1"
    assert {v for name, v in after.items() if name not in old} == {"8.3.0-1"}
    for xy in ("8.2", "8.3"):
        assert (root / f"opt/rocm/core-{xy}/.kpack/blas_lib_gfx942.kpack").is_file()
