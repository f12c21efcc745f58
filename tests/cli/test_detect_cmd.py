"""gfxpack detect prints lines a user can paste: the pip line, run by bash as printed in
a fresh venv, installs the host and the device wheels of every GPU of the machine from
a local index that gfxpack index wrote, served over 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.detect import NODES
from tests.wheels.test_index import CLIENT_ENV, Server, device_wheel, host_wheel, index

KFD = Path(__file__).parents[1] / "fixtures" / "kfd"


def detect(*args: str) -> Result:
    return CliRunner().invoke(cli, ["detect", *args])


@pytest.fixture
def two_gpus(tmp_path: Path) -> Path:
    """A machine with an MI300X partition (gfx942) and a Radeon RX 7900 XTX (gfx1100)."""
    root = tmp_path / "kfd"
    for number, (machine, node) in enumerate((("rx7900xtx-assembled", 1), ("mi300x-cpx", 2))):
        (root / NODES / str(number)).mkdir(parents=True)
        shutil.copy(KFD / machine / NODES / str(node) / "properties", root / NODES / str(number))
    return root


@pytest.mark.slow
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the wheels are tagged linux_x86_64")
def test_the_printed_pip_line_installs_every_gpus_device_wheel(
    two_gpus: Path, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    host_wheel(wheels)
    for arch in ("gfx942", "gfx1100"):
        device_wheel(wheels, arch)
    assert index(wheels, tmp_path / "site").exit_code == 0
    server = Server(tmp_path / "site", negotiate=True)
    threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
    try:
        result = detect("--sysfs", str(two_gpus), "--package", "demo", "--index-url", server.url)
        assert result.exit_code == 0, result.output
        [line] = [line for line in result.output.splitlines() if line.startswith("  pip:  ")]
        pasted = line.removeprefix("  pip:  ")
        assert pasted == (
            f"pip install --index-url {server.url} 'demo[device-gfx942,device-gfx1100]'"
        )
        # The user's shell: a venv made by python3 -m venv (pip in it), activated.
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        environment = {
            **CLIENT_ENV,
            "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "VIRTUAL_ENV": str(venv),
            "PATH": f"{venv}/bin:{os.environ['PATH']}",
        }
        installed = subprocess.run(
            ["bash", "-c", pasted], env=environment, capture_output=True, text=True
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    [site] = venv.glob("lib/python*/site-packages")
    assert sorted(p.name for p in site.glob("demo*.dist-info")) == [
        "demo-1.0.dist-info",
        "demo_device_gfx1100-1.0.dist-info",
        "demo_device_gfx942-1.0.dist-info",
    ]
    assert sorted(p.name for p in (site / "demo" / ".kpack").iterdir()) == [
        "demo_gfx1100.kpack",
        "demo_gfx942.kpack",
    ]


def test_without_package_there_is_no_line_to_edit(two_gpus: Path) -> None:
    result = detect("--sysfs", str(two_gpus))
    assert result.exit_code == 0, result.output
    assert "  pip:  give --package NAME (the split Python distribution) for this line" in (
        result.output.splitlines()
    )
    assert "PACKAGE" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--package", "demo", "--index-url", "example.com/simple"], "--index-url 'example.com"),
        (["--package", "demo", "--index-url", "https://x/s; reboot"], "--index-url 'https://x/s"),
        (["--index-url", "https://example.com/simple"], "--index-url is where the pip line"),
    ],
)
def test_a_bad_index_url_is_one_error(two_gpus: Path, args: list[str], message: str) -> None:
    result = detect("--sysfs", str(two_gpus), *args)
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {message}")


GUIDE = "guides/python-wheels.md"
SYSFS_HEADING = "### Another machine's GPUs: `--sysfs`"


def test_the_guides_sysfs_example_runs_as_written() -> None:
    from tests.doc_commands import ROOT, doc_block, gfxpack_shell

    result = gfxpack_shell(ROOT, doc_block(GUIDE, SYSFS_HEADING))
    assert result.returncode == 0, result.stderr
    assert "  pip:  pip install 'jax-rocm7-pjrt[device-gfx90a]'" in result.stdout.splitlines()


def test_the_guides_copy_command_makes_a_tree_detect_reads(tmp_path: Path) -> None:
    """The one-line copy of the guide, run on a stand-in /sys laid out as sysfs is
    (class/kfd/kfd a link into devices/): the copy reads as the machine does."""
    from tests.doc_commands import ROOT

    text = (ROOT / "docs" / GUIDE).read_text(encoding="utf-8")
    section = text[text.index(SYSFS_HEADING) :]
    command = section[section.index("```text\n") + 8 :].split("\n```", 1)[0]
    assert command.startswith("mkdir -p kfd-copy && cp --parents /sys/class/kfd/")
    machine = tmp_path / "machine"
    devices = machine / "sys/devices/virtual/kfd/kfd"
    shutil.copytree(KFD / "mi210/sys/class/kfd/kfd", devices)
    (machine / "sys/class/kfd").mkdir(parents=True)
    os.symlink("../../devices/virtual/kfd/kfd", machine / "sys/class/kfd/kfd")
    # Run from the stand-in's root with /sys spelled relative to it.
    subprocess.run(["bash", "-c", command.replace(" /sys/", " sys/")], cwd=machine, check=True)
    copied = detect("--sysfs", str(machine / "kfd-copy"), "--json")
    original = detect("--sysfs", str(KFD / "mi210"), "--json")
    assert copied.exit_code == 0, copied.output
    assert copied.output == original.output
    assert not (machine / "kfd-copy/sys/class/kfd/kfd").is_symlink()
