"""gfxpack repo killed at every step (tests/repo/killed.py): after a rerun, apt-get update
and dnf makecache both read the repository, and it holds both releases."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS
from gfxpack.repo import publish
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.verify.system import bundled
from tests.repo.killed import KILLED, killed_run
from tests.verify.helpers import Apt, write_package

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("strace") is None, reason="needs strace (apt-get install strace)"
    ),
    pytest.mark.skipif(shutil.which("dnf") is None, reason="needs dnf (apt-get install dnf)"),
]
NAMES = ("tool", "lib", "extra")


def _build(tmp_path: Path, version: str) -> Path:
    build = tmp_path / f"build-{version}"
    for name in NAMES:
        for fmt in FORMATS:
            write_package(build, fmt, name, version=version, files=(f"/opt/{name}-{version}",))
    return build


def _dnf_makecache(rpm: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "dnf",
            "-q",
            f"--installroot={home / 'root'}",
            "--releasever=9",
            f"--setopt=reposdir={home / 'repos.d'}",
            f"--setopt=cachedir={home / 'cache'}",
            "--disablerepo=*",
            f"--repofrompath=gfx,file://{rpm}",
            "--enablerepo=gfx",
            "--setopt=gfx.gpgcheck=0",
            "makecache",
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_run_killed_at_any_step_is_healed_by_the_next(tmp_path):
    base = tmp_path / "base"
    publish(_build(tmp_path, "8.2.0"), base, "stable", 1_700_000_000)
    update = _build(tmp_path, "8.3.0")
    expected = {(name, f"{v}-1") for name in NAMES for v in ("8.2.0", "8.3.0")}
    killed = 0
    for nth in range(1, 200):
        out = tmp_path / f"run-{nth}"
        shutil.copytree(base, out)
        status = killed_run(["repo", "--in", str(update), "--out", str(out)], nth)
        if status == 0:
            break  # the run had fewer than nth renames: every step was tried
        assert status in KILLED, f"step {nth}: exit status {status}"
        killed += 1
        rerun = CliRunner().invoke(cli, ["repo", "--in", str(update), "--out", str(out)])
        assert rerun.exit_code == 0, f"step {nth}: {rerun.output}{rerun.stderr}"
        apt = Apt(
            tmp_path / f"apt-{nth}",
            f"deb [trusted=yes] file:{out}/apt stable main\n",
            bundled(DEB),
        )
        apt.run("update")
        listed = parse_stanzas((out / "apt/dists/stable/main/binary-amd64/Packages").read_text())
        assert {(s["Package"], s["Version"]) for s in listed} == expected, f"step {nth}"
        dnf = _dnf_makecache(out / "rpm", tmp_path / f"dnf-{nth}")
        assert dnf.returncode == 0, f"step {nth}: {dnf.stdout}{dnf.stderr}"
        assert len(list((out / "rpm/Packages").glob("*.rpm"))) == 6, f"step {nth}"
        deep = CliRunner().invoke(cli, ["verify", "--repo", str(out), "--deep"])
        assert deep.exit_code == 0, f"step {nth}: {deep.output}{deep.stderr}"
        shutil.rmtree(out)
    assert killed >= 12  # pool copies, indexes, Release, repodata files, repomd.xml
