"""Our .rpm files, judged by rpm, rpmkeys, rpm2cpio and cpio."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from gfxpack.formats import RPM, PackageInfo
from gfxpack.formats.compress import Compression
from gfxpack.formats.payload import Entry, EntryKind, with_parents
from gfxpack.formats.rpm import parse_dependency
from gfxpack.formats.rpm_policy import ALTERNATIVES, LDCONFIG, is_shared_library
from gfxpack.views import reachable
from tests.conftest import run

# make check skips it: every package judged by rpm, rpmkeys, rpm2cpio and cpio.
pytestmark = pytest.mark.slow

QUERY = "%{NAME}|%{VERSION}|%{RELEASE}|%{ARCH}\\n"
LISTS = {
    "REQUIRENEVRS": "depends",
    "PROVIDENEVRS": "provides",
    "CONFLICTNEVRS": "conflicts",
    "OBSOLETENEVRS": "replaces",
    "RECOMMENDNEVRS": "recommends",
    "SUGGESTNEVRS": "suggests",
}


def query(rpm: Path, fmt: str) -> list[str]:
    return run("rpm", "-qp", "--qf", fmt, str(rpm)).stdout.splitlines()


def _as_rpm_prints(text: str) -> str:
    dep = parse_dependency(text)
    op = {2: "<", 10: "<=", 8: "=", 12: ">=", 4: ">"}.get(dep.flags & 14)
    return f"{dep.name} {op} {dep.version}" if op else dep.name


def test_header_agrees_with_the_plan(example_release):
    files = example_release.files("rpm")
    assert len(files) == len(example_release.plan.packages)
    for key, rpm in files.items():
        package = example_release.plan.by_key[key]
        spec = example_release.plan.specs[package.base]
        assert query(rpm, QUERY) == [f"{package.rpm.name}|8.2.0|1|{spec.build_arch}"]
        for tag, attribute in LISTS.items():
            listed = query(rpm, f"[%{{{tag}}}\\n]")
            expected = [_as_rpm_prints(RPM.render(d)) for d in getattr(package.rpm, attribute)]
            if tag == "REQUIRENEVRS":
                # rpmlib() features and the scriptlets' tools (Requires(post)) are
                # the writer's, not the plan's.
                listed = [
                    r for r in listed if not r.startswith(("rpmlib(", LDCONFIG, ALTERNATIVES))
                ]
            if tag == "PROVIDENEVRS":
                self_provides = [
                    f"{package.rpm.name} = 8.2.0-1",
                    f"{package.rpm.name}(x86-64) = 8.2.0-1",
                ]
                expected = self_provides + expected
            assert listed == expected, f"{rpm.name} {tag}"


def test_every_digest_is_ok(example_release):
    rpms = [str(p) for p in example_release.files("rpm").values()]
    output = run("rpmkeys", "-Kv", *rpms).stdout
    checks = [line.strip() for line in output.splitlines() if line.startswith("    ")]
    assert len(checks) == 3 * len(rpms)
    assert all(line.endswith(": OK") for line in checks), output
    for required in (
        "Header SHA256 digest: OK",
        "Header SHA1 digest: OK",
        "Payload SHA256 digest: OK",
    ):
        assert output.count(required) == len(rpms)
    # No legacy MD5 over header and payload: the payload's SHA-256, inside the header
    # the header digests cover, protects the payload (as rpm >= 4.14 builds do).
    assert "MD5" not in output


@pytest.mark.parametrize(
    "key", ["amdrocm-blas-host8.2", "amdrocm-blas8.2-gfx942", "amdrocm-runtime-devel8.2"]
)
def test_rpm2cpio_reproduces_the_payload(example_release, tmp_path, key):
    rpm = example_release.files("rpm")[key]
    cpio = subprocess.run(["rpm2cpio", str(rpm)], capture_output=True, check=True).stdout
    subprocess.run(["cpio", "-idm", "--quiet"], input=cpio, cwd=tmp_path, check=True)
    for entry in example_release.routed[key]:
        extracted = tmp_path / entry.path.lstrip("/")
        if entry.kind == "symlink":
            assert os.readlink(extracted) == entry.target
        elif entry.kind == "file":
            assert extracted.read_bytes() == Path(entry.source).read_bytes(), entry.path
            # Shared libraries are 0755 in an RPM, as its distributions expect.
            mode = 0o755 if is_shared_library(entry) else entry.mode
            assert stat.S_IMODE(os.lstat(extracted).st_mode) == mode


def test_metapackages_contain_no_files(example_release):
    metas = [
        rpm
        for key, rpm in example_release.files("rpm").items()
        if not example_release.plan.by_key[key].has_files
    ]
    assert metas
    assert {rpm.name: query(rpm, "[%{FILENAMES}\\n]") for rpm in metas} == {
        rpm.name: [] for rpm in metas
    }


@pytest.mark.slow
def test_rpm_installs_the_gfx942_set(example_release, tmp_path):
    release = example_release
    chosen = reachable(release.plan, "amdrocm-core8.2-gfx942", RPM)
    root = tmp_path / "root"
    run("rpm", "--root", str(root), "--initdb")
    files = release.files("rpm")
    run(
        "rpm",
        "--root",
        str(root),
        "-i",
        "--nodeps",
        "--noscripts",
        *(str(files[p.key]) for p in chosen),
    )
    installed = set(run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout.split())
    assert installed == {p.rpm.name for p in chosen}
    for package in chosen:
        expected = [e.path for e in release.routed.get(package.key, ())] or ["(contains no files)"]
        installed = run("rpm", "--root", str(root), "-ql", package.rpm.name).stdout.splitlines()
        from_file = run("rpm", "--root", str(root), "-qlp", str(files[package.key]))
        assert installed == from_file.stdout.splitlines() == expected, package.rpm.name
        for path in expected if package.has_files else ():
            assert os.path.lexists(root / path.lstrip("/")), path
    assert run("rpm", "--root", str(root), "-V", "amdrocm-blas8.2-gfx942").stdout == ""


@pytest.mark.slow
def test_relocatable_prefix(example_release, tmp_path):
    root = tmp_path / "root"
    run("rpm", "--root", str(root), "--initdb")
    rpm = example_release.files("rpm")["amdrocm-fft8.2-gfx942"]
    assert query(rpm, "[%{PREFIXES}\\n]") == ["/opt/rocm/core-8.2"]
    run(
        "rpm",
        "--root",
        str(root),
        "-i",
        "--nodeps",
        "--noscripts",
        "--prefix",
        "/usr/lib/rocm-8.2",
        str(rpm),
    )
    assert (root / "usr/lib/rocm-8.2/.kpack/fft_lib_gfx942.kpack").is_file()
    assert not (root / "opt/rocm").exists()


def test_a_package_past_4_gib_uses_rpms_64_bit_sizes(tmp_path):
    """Two sparse files of just over 2 GiB: the installed size, and the payload's, need
    rpm's 64-bit tags (the 32-bit ones cannot hold them)."""
    half = (2 << 30) + (1 << 20)
    entries = []
    for name in ("a.co", "b.co"):
        source = tmp_path / name
        with open(source, "wb") as file:
            file.truncate(half)
        entries.append(Entry(f"/opt/rocm/lib/{name}", EntryKind.FILE, 0o644, half, str(source)))
    info = PackageInfo(
        name="big",
        version="8.2.0",
        release="1",
        arch="x86_64",
        summary="a package past 4 GiB",
        entries=with_parents(entries, 0),
        compression=Compression.parse("zstd:1"),
    )
    package = tmp_path / RPM.filename(info)
    with open(package, "wb") as file:
        RPM.write(info, file)
    assert package.stat().st_size < 64 << 20  # zeros compress: only the sizes are large
    (sizes,) = query(package, "%{LONGSIZE}|%{LONGSIGSIZE}|%{LONGARCHIVESIZE}\\n")
    longsize, sigsize, archivesize = sizes.split("|")
    assert int(longsize) == 2 * half
    assert int(archivesize) > 2 * half  # the cpio stream: contents plus headers
    assert int(sigsize) < 1 << 32  # header and compressed payload stay small
    checked = run("rpmkeys", "-Kv", str(package)).stdout
    assert "Payload SHA256 digest: OK" in checked and "Header SHA256 digest: OK" in checked
