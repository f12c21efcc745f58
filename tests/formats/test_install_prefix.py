"""Packages at a distribution's own paths (``build --install-prefix /``), judged by
dpkg-deb, rpm, rpm2cpio and installs into throwaway roots: every member name is clean
(``./usr/lib/...`` in a .deb, ``/usr/lib/...`` in an .rpm, never ``.//`` or ``//``),
an .rpm lists no system directory, and a prefix that is no install path is one error.
The distro packager guide's sequence from a fat .deb to such packages runs here as written."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.fatbin.resolve import resolve
from gfxpack.formats import RPM, PackageInfo, rpm_policy
from gfxpack.formats.payload import Entry, EntryKind, write_cpio, write_tar
from tests.conftest import dpkg_root, run
from tests.doc_commands import doc_block, gfxpack_shell
from tests.fatbin.conftest import HipBuild, build_once
from tests.small_tree import STAGE, build, write_config

FILES = [
    "/usr/bin/rocblas-info",
    "/usr/lib/librocblas.so",
    "/usr/lib/librocblas.so.1",
    "/usr/share/doc/rocblas/README",
]


def distro_tree(root: Path) -> Path:
    """blas_lib_generic whose stage holds usr/lib, usr/bin and usr/share/doc, as a
    distribution's package lays them out; returns the artifacts directory."""
    artifact = root / "blas_lib_generic"
    stage = artifact / STAGE
    for directory in ("usr/lib", "usr/bin", "usr/share/doc/rocblas"):
        (stage / directory).mkdir(parents=True)
    (artifact / "artifact_manifest.txt").write_text(STAGE + "\n")
    (root / "blas_lib_gfx942").mkdir()
    (root / "blas_lib_gfx942" / "artifact_manifest.txt").write_text("")
    (stage / "usr/lib/librocblas.so.1").write_bytes(b"\x7fELF library")
    (stage / "usr/lib/librocblas.so").symlink_to("librocblas.so.1")
    (stage / "usr/bin/rocblas-info").write_text("#!/bin/sh\n")
    (stage / "usr/bin/rocblas-info").chmod(0o755)
    (stage / "usr/share/doc/rocblas/README").write_text("docs\n")
    return root


@pytest.fixture(scope="module")
def at_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree built with --install-prefix /: its OUT."""
    tmp_path = tmp_path_factory.mktemp("prefix")
    result = build(tmp_path, distro_tree(tmp_path / "artifacts"), "--install-prefix", "/")
    assert result.exit_code == 0, result.output
    return tmp_path / "out"


def _deb_names(deb: Path) -> list[str]:
    listing = run("dpkg-deb", "--contents", str(deb)).stdout.splitlines()
    # The name is the sixth column; a symlink's line goes on with " -> target".
    return [line.split(maxsplit=5)[5].split(" -> ")[0] for line in listing]


def test_deb_members_are_clean(at_root):
    names = _deb_names(at_root / "amdrocm-blas8.2_8.2.0-1_amd64.deb")
    assert names == [
        "./",
        "./usr/",
        "./usr/bin/",
        "./usr/bin/rocblas-info",
        "./usr/lib/",
        "./usr/lib/librocblas.so",
        "./usr/lib/librocblas.so.1",
        "./usr/share/",
        "./usr/share/doc/",
        "./usr/share/doc/rocblas/",
        "./usr/share/doc/rocblas/README",
    ]
    deb = at_root / "amdrocm-blas8.2_8.2.0-1_amd64.deb"
    md5sums = run("dpkg-deb", "--info", str(deb), "md5sums").stdout.splitlines()
    assert sorted(line.split("  ")[1] for line in md5sums) == [
        "usr/bin/rocblas-info",
        "usr/lib/librocblas.so.1",
        "usr/share/doc/rocblas/README",
    ]


def test_rpm_lists_clean_paths_and_no_system_directory(at_root):
    rpm = at_root / "amdrocm-blas8.2-8.2.0-1.x86_64.rpm"
    # /usr, /usr/lib, /usr/bin, /usr/share and /usr/share/doc are the filesystem
    # package's; /usr/share/doc/rocblas is this package's own.
    assert run("rpm", "-qlp", str(rpm)).stdout.splitlines() == sorted(
        [*FILES, "/usr/share/doc/rocblas"]
    )
    payload = subprocess.run(["rpm2cpio", str(rpm)], capture_output=True, check=True).stdout
    listing = subprocess.run(["cpio", "-t", "--quiet"], input=payload, capture_output=True)
    names = listing.stdout.decode().splitlines()
    assert names == sorted(f".{path}" for path in [*FILES, "/usr/share/doc/rocblas"])


def test_dpkg_and_rpm_install_at_the_distributions_paths(at_root, tmp_path, monkeypatch):
    deb_root = dpkg_root(tmp_path / "deb")
    run("dpkg", "--root", str(deb_root), "--force-depends", "--force-script-chrootless",
        "--log=/dev/null", "-i", str(at_root / "amdrocm-blas8.2_8.2.0-1_amd64.deb"))  # fmt: skip
    listed = run("dpkg", "--root", str(deb_root), "-L", "amdrocm-blas8.2").stdout.splitlines()
    assert set(FILES) <= set(listed) and not [path for path in listed if "//" in path]
    # A stand-in for the distribution's filesystem package: /usr/lib with Fedora's mode
    # 0555. rpm refuses a second owner of a directory that disagrees; ours owns none.
    # The stand-in is the one package that lists them: written without the policy.
    filesystem = tmp_path / "filesystem-3-1.x86_64.rpm"
    system = [Entry(p, EntryKind.DIR, m) for p, m in (("/usr", 0o755), ("/usr/lib", 0o555))]
    with monkeypatch.context() as patch, open(filesystem, "wb") as out:
        patch.setattr(rpm_policy, "SYSTEM_DIRECTORIES", frozenset())
        RPM.write(
            PackageInfo("filesystem", "3", "1", "x86_64", "fs", entries=tuple(system), prefix="/"),
            out,
        )
    assert run("rpm", "-qlp", str(filesystem)).stdout.split() == ["/usr", "/usr/lib"]
    rpm_root = tmp_path / "rpm"
    run("rpm", "--root", str(rpm_root), "--initdb")
    run("rpm", "--root", str(rpm_root), "-i", "--nodeps", "--noscripts", str(filesystem),
        str(at_root / "amdrocm-blas8.2-8.2.0-1.x86_64.rpm"))  # fmt: skip
    for root in (deb_root, rpm_root):
        assert (root / "usr/lib/librocblas.so.1").read_bytes() == b"\x7fELF library"
        assert os.readlink(root / "usr/lib/librocblas.so") == "librocblas.so.1"
        assert os.access(root / "usr/bin/rocblas-info", os.X_OK)
    owner = run("rpm", "--root", str(rpm_root), "-qf", "/usr/lib", "/usr/lib/librocblas.so.1")
    assert owner.stdout.split() == ["filesystem-3-1.x86_64", "amdrocm-blas8.2-8.2.0-1.x86_64"]


def test_a_trailing_slash_names_the_same_prefix(tmp_path):
    result = build(tmp_path, distro_tree(tmp_path / "artifacts"), "--install-prefix", "/opt/x/")
    assert result.exit_code == 0, result.output
    names = _deb_names(tmp_path / "out" / "amdrocm-blas8.2_8.2.0-1_amd64.deb")
    assert "./opt/x/usr/lib/librocblas.so.1" in names
    assert [name for name in names if "//" in name] == []


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("opt/rocm", "expected an absolute path, such as /opt/rocm"),
        ("", "expected an absolute path, such as /"),
        ("/opt//rocm", "expected a normalised absolute path (no '.', '..', '//' or trailing "
         "'/'), such as /opt/rocm"),
        ("/opt/./rocm", "such as /opt/rocm"),
        ("/opt/rocm/../x", "such as /opt/x"),
        ("/opt/ro\ncm", "a newline is not allowed; expected one line of printable characters"),
        ("/opt/\x1b[31mrocm", "an escape character is not allowed"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["build", "plan"])
def test_a_prefix_that_is_no_install_path_is_one_error(tmp_path, prefix, problem, command):
    artifacts = distro_tree(tmp_path / "artifacts")
    config = write_config(tmp_path / "package.json")
    before = sorted(p.name for p in tmp_path.iterdir())
    if command == "build":
        result = build(tmp_path, artifacts, "--install-prefix", prefix, config=config)
    else:
        result = CliRunner().invoke(
            cli, ["plan", "--config", str(config), "--rocm-version", "8.2.0",
                  "--target", "gfx942", "--install-prefix", prefix],
        )  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --install-prefix {prefix!r}: ") and problem in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no OUT made


@pytest.mark.parametrize("path", ["//usr/lib/x.so", "usr/lib/x.so", "/usr/./lib", "/usr/lib/"])
def test_the_writers_refuse_a_name_that_is_no_install_path(path):
    entry = Entry(path, EntryKind.FILE, 0o644, 1, data=b"x")
    refused = re.escape(f"{path!r}: not an install path")
    with pytest.raises(OSError, match=refused):
        write_tar(io.BytesIO(), [entry], 0)
    with pytest.raises(OSError, match=refused):
        write_cpio(io.BytesIO(), [entry])


# --- the distro packager guide's sequence, on a library hipcc built ---------------------


@pytest.fixture(scope="module")
def hip_build(tmp_path_factory: pytest.TempPathFactory) -> HipBuild:
    return build_once(tmp_path_factory)


@pytest.mark.slow
def test_readme_fat_deb_to_packages_at_the_distributions_paths(hip_build, tmp_path):
    """The guide's commands, from dpkg-deb -x to dpkg-deb -c, on a .deb of a fat
    library (gfx90a, gfx1030, gfx906:xnack-); then one arch installed from them with
    dpkg and rpm, and its code objects found where the runtime looks."""
    package = tmp_path / "librocrand1"
    lib = package / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (package / "DEBIAN").mkdir()
    (package / "DEBIAN/control").write_text(
        "Package: librocrand1\nVersion: 5.3.3-4\nArchitecture: amd64\n"
        "Maintainer: tests <tests@example.org>\nDescription: a fat HIP library\n"
    )
    shutil.copy2(hip_build.two_files, lib / "librocrand.so.1.1")
    (lib / "librocrand.so.1").symlink_to("librocrand.so.1.1")
    run("dpkg-deb", "--root-owner-group", "--build", str(package),
        str(tmp_path / "librocrand1_5.3.3-4_amd64.deb"))  # fmt: skip

    result = gfxpack_shell(
        tmp_path,
        doc_block("guides/distro-packager.md", "### Packages at a distribution's own paths"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    listed = [
        line.split(maxsplit=5)[5] for line in result.stdout.splitlines() if "root/root" in line
    ]
    assert "./usr/lib/x86_64-linux-gnu/librocrand.so.1.1" in listed
    assert "./usr/lib/x86_64-linux-gnu/librocrand.so.1 -> librocrand.so.1.1" in listed
    assert [name for name in listed if "//" in name or not name.startswith("./")] == []

    packages = tmp_path / "packages"
    wanted = ["amdrocm-rand-host5.3_5.3.3-1_amd64.deb", "amdrocm-rand5.3-gfx90a_5.3.3-1_amd64.deb"]
    deb_root = dpkg_root(tmp_path / "deb")
    run("dpkg", "--root", str(deb_root), "--force-depends", "--force-script-chrootless",
        "--log=/dev/null", "-i", *(str(packages / name) for name in wanted))  # fmt: skip
    rpm_root = tmp_path / "rpm"
    run("rpm", "--root", str(rpm_root), "--initdb")
    rpms = ["amdrocm-rand-host5.3-5.3.3-1.x86_64.rpm", "amdrocm-rand5.3-gfx90a-5.3.3-1.x86_64.rpm"]
    for name in rpms:
        listing = run("rpm", "-qlp", str(packages / name)).stdout.splitlines()
        assert listing and all(p.startswith("/usr/lib/x86_64-linux-gnu") for p in listing), listing
    run("rpm", "--root", str(rpm_root), "-i", "--nodeps", "--noscripts",
        *(str(packages / name) for name in rpms))  # fmt: skip
    for root in (deb_root, rpm_root):
        installed = root / "usr/lib/x86_64-linux-gnu"
        assert sorted(p.name for p in (installed / ".kpack").iterdir()) == ["rand_lib_gfx90a.kpack"]
        found = resolve(installed / "librocrand.so.1.1", "gfx90a", environ={})
        assert [item.index for item in found] == [0, 1]
        assert {item.archive for item in found} == {installed / ".kpack/rand_lib_gfx90a.kpack"}
        assert all(item.code[:4] == b"\x7fELF" for item in found)
