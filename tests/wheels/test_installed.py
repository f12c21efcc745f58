"""kpack resolve --venv (gfxpack/wheels/installed.py): a bare install of a split wheel
(the host alone, which pip installs without a word) fails the check, one line per
library; the host with the right device wheel passes; the wrong one fails. Real venvs
(``python -m venv``), filled by pip from the wheels gfxpack split made of a
hipcc-built fat wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.wheels.conftest import NAME, VERSION

from gfxpack.cli import cli

pytestmark = pytest.mark.slow

LIBRARIES = [f"{NAME}/_native.so", f"{NAME}/lib/libone.so"]
BIN = os.path.dirname(sys.executable)


def check(*args: str) -> Result:
    return CliRunner().invoke(cli, ["kpack", "resolve", *args])


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCM_KPACK_PATH", "ROCM_KPACK_PATH_PREFIX", "ROCM_KPACK_DISABLE", "HSA_XNACK"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def split_dir(fat_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "out"
    result = CliRunner().invoke(cli, ["split", str(fat_wheel), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def pip_install(venv: Path, split_dir: Path, requirement: str) -> None:
    """pip, offline, from the split wheels, into ``venv`` (made without pip: pip --python)."""
    environment = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1"}
    subprocess.run(
        [f"{BIN}/pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "--disable-pip-version-check", "--no-index", "--find-links", str(split_dir),
         requirement],
        check=True, env=environment, capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, split_dir: Path) -> Path:
    """A real venv holding the host wheel alone: ``pip install hipdemo``, no extra."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip_install(venv, split_dir, NAME)
    return venv


def test_a_bare_install_fails_with_one_line_per_library_and_the_fix(venv: Path) -> None:
    result = check("--venv", str(venv), "--arch", "gfx90a")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{NAME} {VERSION}:"
    assert [line.split(":")[0] for line in lines[1:3]] == [f"  miss {p}" for p in LIBRARIES]
    for line in lines[1:3]:
        assert f": gfx90a: wrapper 0: no archive found; tried {NAME}/.kpack/" in line
    assert lines[3:] == [f"  its device code is not installed: pip install '{NAME}[device-gfx90a]'"]
    assert result.stderr == "error: 2 of 2 libraries miss device code for gfx90a\n"


def test_the_right_device_wheel_passes_and_another_arch_fails(
    venv: Path, split_dir: Path, tmp_path: Path
) -> None:
    """Run after the bare-install test (module order): the same venv, the extra added."""
    pip_install(venv, split_dir, f"{NAME}[device-gfx90a]")
    result = check("--venv", str(venv), "--arch", "gfx90a")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"{NAME} {VERSION}:"] + [
        f"  ok   {p}: gfx90a: {n} from {NAME}/.kpack/{NAME}_lib_gfx90a.kpack"
        for p, n in zip(LIBRARIES, ("2 code objects", "1 code object"), strict=True)
    ]
    # The device wheel installed is gfx90a's: a gfx1030 misses, and is told what to add.
    result = check("--venv", str(venv), "--dist", NAME, "--arch", "gfx1030", "--json")
    assert result.exit_code == 1
    rows = json.loads(result.stdout)["libraries"]
    assert [(r["path"], r["found"], r["reason"]) for r in rows] == [
        (p, False, "archive-not-found") for p in LIBRARIES
    ]
    assert {r["install"] for r in rows} == {f"pip install '{NAME}[device-gfx1030]'"}
    # Without --arch: the GPUs of a copied KFD tree (eight MI210s: gfx90a:sramecc+, run
    # with xnack off as HSA_XNACK leaves it by default).
    kfd = Path(__file__).parents[1] / "fixtures" / "kfd" / "mi210"
    result = check("--venv", str(venv), "--sysfs", str(kfd))
    assert result.exit_code == 0, result.output
    assert ": gfx90a:sramecc+:xnack-: 2 code objects from" in result.output


def test_nothing_to_check_is_no_pass(venv: Path, tmp_path: Path) -> None:
    result = check("--venv", str(venv), "--dist", "pip-not-here", "--arch", "gfx90a")
    assert result.exit_code == 1
    assert result.output == f"error: pip-not-here: not installed in {venv}\n"
    empty = tmp_path / "empty"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(empty)], check=True)
    result = check("--venv", str(empty), "--arch", "gfx90a")
    assert result.exit_code == 1
    assert result.output == (
        f"error: {empty}: no installed library with HIP device code; nothing checked\n"
    )
    result = check("--venv", str(tmp_path), "--arch", "gfx90a")
    assert result.output == f"error: {tmp_path}: not a virtual environment (no pyvenv.cfg)\n"


def test_a_record_pointing_out_of_site_packages_is_not_followed(
    venv: Path, tmp_path: Path, hip_build_library: Path
) -> None:
    """A forged distribution whose RECORD names a fat library outside site-packages
    (by ``..`` and through a symlink): neither is read, so nothing of it is checked."""
    [site] = venv.glob("lib/python*/site-packages")
    forged = site / "forged-1.0.dist-info"
    forged.mkdir()
    outside = tmp_path / "libfat.so"
    outside.write_bytes(hip_build_library.read_bytes())
    os.symlink(tmp_path, site / "forged_link")
    relative = os.path.relpath(outside, site)
    (forged / "RECORD").write_text(f"{relative},,\nforged_link/libfat.so,,\n")
    try:
        result = check("--venv", str(venv), "--dist", "forged", "--arch", "gfx90a")
        assert result.exit_code == 1
        assert result.output == (
            f"error: forged in {venv}: no library with HIP device code; nothing checked\n"
        )
    finally:
        (site / "forged_link").unlink()
        for path in forged.iterdir():
            path.unlink()
        forged.rmdir()


@pytest.fixture
def hip_build_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.fatbin.conftest import build_once

    return build_once(tmp_path_factory).one_file


@pytest.mark.parametrize("kind", ["not-utf8", "fifo", "symlink"])
def test_a_hostile_record_is_one_error_naming_it(venv: Path, tmp_path: Path, kind: str) -> None:
    """A RECORD that is not UTF-8, a FIFO (no hang) or a link to a file elsewhere: one
    error line naming it, no traceback."""
    [site] = venv.glob("lib/python*/site-packages")
    forged = site / "forged-1.0.dist-info"
    forged.mkdir()
    record = forged / "RECORD"
    if kind == "not-utf8":
        record.write_bytes(b"\xff\xfe,,\n")
        problem = f"{record}: not a RECORD: 'utf-8' codec can't decode"
    elif kind == "fifo":
        os.mkfifo(record)
        problem = f"{record}: is a FIFO, expected a regular file"
    else:
        (tmp_path / "elsewhere").write_text("x,,\n")
        os.symlink(tmp_path / "elsewhere", record)
        problem = f"{record}: is a symlink; gfxpack does not follow it"
    try:
        result = check("--venv", str(venv), "--dist", "forged", "--arch", "gfx90a")
        assert result.exit_code == 1
        [line] = result.output.splitlines()
        assert line.startswith(f"error: {problem}"), line
    finally:
        record.unlink()
        forged.rmdir()
