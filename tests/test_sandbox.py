"""gfxpack.sandbox: a command run in bubblewrap writes its writable trees and nothing
else of this machine, reaches only its own loopback, and cannot undo that."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gfxpack import sandbox
from gfxpack.trial import serve

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")


def run_in(box: sandbox.Sandbox, script: str, served: Path | None = None) -> str:
    """``script`` (sh) run in ``box``; its stdout and stderr."""
    command = box.command(["sh", "-c", script], {"PATH": "/usr/bin:/bin"}, served)
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_only_the_writable_trees_are_written(tmp_path):
    writable, outside = tmp_path / "root", tmp_path / "outside"
    writable.mkdir()
    outside.mkdir()
    (outside / "data").write_text("host")
    said = run_in(
        sandbox.Sandbox((writable,)),
        f"echo in > {writable}/made; echo out > {outside}/made || echo refused;"
        f"echo out > {outside}/data || echo refused; echo x > /usr/gfxpack-made || echo ro;"
        "echo private > /tmp/scratch && cat /tmp/scratch",
    )
    assert (writable / "made").read_text() == "in\n"
    # The host's /tmp is not the sandbox's: the outside tree is not even there.
    assert said.count("refused") == 2 and "ro\n" in said and "private\n" in said
    assert sorted(p.name for p in outside.iterdir()) == ["data"]
    assert (outside / "data").read_text() == "host" and not Path("/usr/gfxpack-made").exists()


def test_nothing_in_it_can_remount_mount_or_nest(tmp_path):
    said = run_in(
        sandbox.Sandbox((tmp_path,)),
        "ls -A /run /var/tmp;"
        "mount -o remount,rw /usr 2>/dev/null || echo no-remount;"
        "mount -t tmpfs none /usr 2>/dev/null || echo no-mount;"
        "unshare -Urm true 2>/dev/null || echo no-userns",
    )
    # /run and /var/tmp are empty: no daemon's socket of this machine is reachable.
    assert said.split() == ["/run:", "/var/tmp:", "no-remount", "no-mount", "no-userns"]


def test_the_network_is_its_own_loopback_where_the_directory_is_served(tmp_path):
    served = tmp_path / "repo"
    served.mkdir()
    (served / "Release").write_text("served inside\n")
    python = os.path.realpath(sys.executable)  # not the virtual environment's link to it
    fetch = (
        f"{python} -I -c 'import sys, urllib.request as u; "
        "print(u.urlopen(sys.argv[1], timeout=5).read().decode())' "
    )
    with serve(served) as host_url:
        said = run_in(
            sandbox.Sandbox((), (served,)),
            f"{fetch} {sandbox.URL}/Release; {fetch} {host_url}/Release 2>/dev/null || "
            "echo host-unreachable",
            served,
        )
    assert said.split("\n")[:2] == ["served inside", ""]
    assert said.rstrip().endswith("host-unreachable")


def test_without_bwrap_it_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sandbox.SandboxUnavailable) as raised:
        sandbox.probe()
    assert str(raised.value) == "bwrap not found: install it with apt-get install bubblewrap"


def test_the_probe_makes_one_here():
    sandbox.probe()  # bwrap is installed and this kernel lets it make the namespaces


def without_user_namespaces(*command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run in a user namespace that allows no further one (its own
    user.max_user_namespaces set to 0): the kernel refuses bwrap's namespaces there."""
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    wrapped = ["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh", *command]
    result = subprocess.run(wrapped, capture_output=True, text=True, check=False, timeout=300)
    if "max_user_namespaces" in result.stderr and "Permission denied" in result.stderr:
        pytest.skip("this kernel does not let a user namespace lower its own limit")
    return result


def test_where_the_kernel_refuses_it_says_what_it_needs():
    code = "from gfxpack import sandbox; sandbox.probe()"
    result = without_user_namespaces(sys.executable, "-c", code)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("gfxpack.sandbox.SandboxUnavailable: bwrap cannot make the sandbox")
    assert "Creating new namespace failed" in last and sandbox.KERNEL_FEATURES in last
