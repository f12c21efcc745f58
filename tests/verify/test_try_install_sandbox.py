"""gfxpack try-install's sandbox: packages whose scripts write on the machine installing
them (tests/verify/hostile.py), installed by apt-get, dnf and zypper, write nothing of
it; without the sandbox the scripts are refused unless --no-scripts; an interrupted run
removes its root and client directory, and what a killed run left goes on the next."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gfxpack.sandbox import KERNEL_FEATURES
from gfxpack.trial import CLIENT_PREFIX, MARKER, ROOT_PREFIX, RUNNING
from tests.test_sandbox import without_user_namespaces
from tests.verify.hostile import (
    RAN,
    escaping_rpm,
    hostile_deb,
    postinst_writing,
    published,
)
from tests.verify.test_try_install import fails, try_install

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")

# The slow package's postinst sleeps this long (a number no other process sleeps); the
# endless package's sleeps this long again and again.
SLEEP = 4242
ENDLESS = 4343


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path]:
    """(a repository of ``hostile`` as .deb and .rpm, of ``slow``, a .deb whose postinst
    sleeps, and of ``endless``, one whose postinst never ends; the host path ``hostile``
    writes)."""
    base = tmp_path_factory.mktemp("hostile")
    (base / "outside").mkdir()
    sentinel = base / "outside/pwned"
    packages = base / "packages"
    hostile_deb(packages, "hostile", postinst_writing(sentinel))
    hostile_deb(packages, "slow", f'echo started > "$DPKG_ROOT/started"\nsleep {SLEEP}')
    forever = f'echo started > "$DPKG_ROOT/started"\nwhile :; do sleep {ENDLESS}; done'
    hostile_deb(packages, "endless", forever)
    escaping_rpm(packages, "hostile", sentinel, base / "work")
    return published(packages, base / "repo"), sentinel


def test_the_packages_do_write_on_a_machine_when_not_sandboxed(tmp_path):
    """The referee: dpkg and rpm themselves, with no sandbox, let each package write
    the host path (here one of this test's own): the tests below could fail."""
    sentinel = tmp_path / "outside/pwned"
    sentinel.parent.mkdir()
    deb = hostile_deb(tmp_path / "packages", "referee", postinst_writing(sentinel))
    rpm = escaping_rpm(tmp_path / "packages", "referee", sentinel, tmp_path / "work")
    root = tmp_path / "deb-root"
    for directory in ("var/lib/dpkg/info", "var/lib/dpkg/updates"):
        (root / directory).mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    dpkg = ["dpkg", f"--root={root}", "--force-script-chrootless", "-i", str(deb)]
    subprocess.run(dpkg, capture_output=True, check=True)
    assert sentinel.read_text() == "pwned\n" and (root / RAN).is_file()
    sentinel.unlink()
    root = tmp_path / "rpm-root"
    subprocess.run(["rpm", "--root", str(root), "--initdb"], check=True)
    subprocess.run(["rpm", "--root", str(root), "-i", "--nodeps", str(rpm)], check=True)
    assert sentinel.read_text() == "pwned\n" and (root / RAN).is_file()


@pytest.mark.slow
@pytest.mark.parametrize("client", ["apt", "dnf", "zypper"])
def test_a_script_writing_on_the_machine_writes_nothing_of_it(client, hostile, tmp_path):
    repo, sentinel = hostile
    root = tmp_path / "root"
    result = try_install(
        "--repo", str(repo), "--client", client, "--root", str(root), "--json", "hostile"
    )
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    assert report["sandboxed"] is True and report["scripts"] is True
    assert (root / RAN).read_text().strip() in ("ran", "pwned")  # the script did run
    assert not sentinel.exists() and sorted(sentinel.parent.iterdir()) == []


def no_bwrap(tmp_path: Path, *tools: str) -> dict[str, str]:
    """A PATH of this machine's ``tools`` alone (bwrap not among them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return {"PATH": str(bin_dir)}


def test_without_the_sandbox_scripts_are_refused(hostile, tmp_path):
    repo, _ = hostile
    env = no_bwrap(tmp_path, "apt-get", "dpkg", "update-alternatives")
    root = tmp_path / "root"
    message = fails("--repo", str(repo), "--client", "apt", "--root", str(root), "hostile", env=env)
    assert message == (
        "error: bwrap not found: install it with apt-get install bubblewrap; try-install "
        "runs the packages' scripts only in that sandbox, so it did not install "
        "(--client dnf --no-scripts installs without running them)"
    )
    assert not root.exists()


def test_where_the_kernel_cannot_make_the_sandbox_scripts_are_refused(hostile, tmp_path):
    repo, sentinel = hostile
    root = tmp_path / "root"
    command = [sys.executable, "-m", "gfxpack", "try-install", "--repo", str(repo)]
    result = without_user_namespaces(*command, "--client", "apt", "--root", str(root), "hostile")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    # What bwrap said, then what it needs, then that nothing was installed.
    assert line.startswith("error: bwrap cannot make the sandbox here (bwrap: Creating new ")
    assert line.endswith(
        f"): it needs {KERNEL_FEATURES}; try-install runs the packages' scripts only in that "
        "sandbox, so it did not install (--client dnf --no-scripts installs without running "
        "them)"
    )
    assert not root.exists() and not sentinel.exists()


@pytest.mark.slow
def test_no_scripts_installs_with_dnf_without_the_sandbox_and_runs_none(hostile, tmp_path):
    repo, sentinel = hostile
    tools = ("dnf", "rpm", "ldd", "dash", "update-alternatives", "ldconfig")
    env = no_bwrap(tmp_path, *tools)
    root = tmp_path / "root"
    args = ("--repo", str(repo), "--client", "dnf", "--root", str(root), "--no-scripts")
    result = try_install(*args, "hostile", env=env)
    assert result.exit_code == 0, result.output + result.stderr
    assert "scripts: none run (--no-scripts), and no sandbox\n" in result.stdout
    assert (root / "usr/bin/hostile-escape").is_file()  # installed, its %post not run
    assert not (root / RAN).exists() and not sentinel.exists()


@pytest.mark.parametrize("client", ["apt", "zypper"])
def test_no_scripts_is_refused_where_the_client_cannot_skip_them(client, hostile):
    repo, _ = hostile
    message = fails("--repo", str(repo), "--client", client, "--no-scripts", "hostile")
    why = "dpkg runs every maintainer script" if client == "apt" else "zypper cannot"
    assert message == (
        f"error: --no-scripts: only dnf installs without running the packages' scripts "
        f"({why}); use --client dnf"
    )


# --- interrupted and killed runs -----------------------------------------------------------


def start(repo: Path, tmpdir: Path, *args: str, package: str = "slow") -> subprocess.Popen[str]:
    """gfxpack try-install of ``package`` with apt-get in a process of its own, with
    ``tmpdir`` as its temporary directory."""
    command = [sys.executable, "-m", "gfxpack", "try-install", "--repo", str(repo), *args]
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen(
        [*command, "--client", "apt", package],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path_glob: str, where: Path, process: subprocess.Popen[str]) -> Path:
    """The first path matching ``path_glob`` under ``where`` once there (the slow
    package's postinst running)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = sorted(where.glob(path_glob))
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"no {path_glob} under {where} in 180 s: {process.communicate()}")


def sleepers(seconds: int = SLEEP) -> list[int]:
    """The processes running the slow package's postinst's sleep (or another that sleeps
    ``seconds``), once there is one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if words[:2] == [b"sleep", str(seconds).encode()]:
                found.append(int(entry.name))
        if found:
            return found
        time.sleep(0.1)
    pytest.fail("the slow package's postinst is not sleeping")


def gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("given_root", [False, True], ids=["temporary-root", "given-root"])
def test_an_interrupted_run_removes_its_root_and_client_directory(
    signum, status, given_root, hostile, tmp_path
):
    repo, _ = hostile
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    root = tmp_path / "root"
    process = start(repo, tmpdir, *(["--root", str(root)] if given_root else []))
    try:
        wait_for("started", root, process) if given_root else wait_for("*/started", tmpdir, process)
        running = sleepers()
        process.send_signal(signum)
        process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status
    assert sorted(tmpdir.iterdir()) == []  # no temporary root, no client directory
    assert not root.exists()
    assert gone(running)  # the sandbox went with it


@pytest.mark.slow
def test_a_script_that_never_ends_is_killed_at_the_timeout_and_nothing_is_left(hostile, tmp_path):
    repo, _ = hostile
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # One stand-in: the install reaches the postinst well within the timeout.
    system = tmp_path / "system.txt"
    system.write_text("Package: base-files\nVersion: 12.4\nArchitecture: amd64\n")
    process = start(repo, tmpdir, "--timeout", "5", "--system", str(system), package="endless")
    try:
        wait_for("*/started", tmpdir, process)
        running = sleepers(ENDLESS)  # the postinst is running
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 1
    assert stderr.splitlines() == [
        "error: apt-get install timed out: still running 5 s after the install began "
        "(--timeout 5); it was killed with everything it started, and nothing of the "
        "install is left"
    ]
    assert sorted(tmpdir.iterdir()) == []  # no root, no client directory
    assert gone(running)  # the sandbox went with the client


@pytest.mark.slow
def test_the_next_run_removes_what_a_killed_run_left(hostile, tmp_path):
    repo, _ = hostile
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    process = start(repo, tmpdir)
    try:
        wait_for("*/started", tmpdir, process)
        running = sleepers()
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        process.kill()
    assert gone(running)
    left = sorted(tmpdir.iterdir())
    # The killed run's root and client directory.
    assert sorted(p.name.startswith(CLIENT_PREFIX) for p in left) == [False, True]
    # Not stale: a directory of that name try-install did not make, and a live run's.
    (tmpdir / f"{ROOT_PREFIX}notes").mkdir()
    live = tmpdir / f"{ROOT_PREFIX}live"
    live.mkdir()
    (live / MARKER).touch()
    (live / RUNNING).touch()
    lock = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "TMPDIR": str(tmpdir)}
        command = [sys.executable, "-m", "gfxpack", "try-install", "--repo", str(repo)]
        result = subprocess.run(
            [*command, "--client", "apt", "hostile"], env=env, capture_output=True, text=True
        )
    finally:
        os.close(lock)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in tmpdir.iterdir()) == [f"{ROOT_PREFIX}live", f"{ROOT_PREFIX}notes"]
