"""What the writers emit, as the real tools print it, against tests/formats/golden/.

A small release in both formats with one package of each kind that matters to the
writers: a host and a device package, a -dev(el), an arch and a generic metapackage,
one with maintainer scripts (update-alternatives) and one with file triggers. Each
.deb's control members come out through ``dpkg-deb -e`` and its file list through
``dpkg-deb --contents``; each .rpm's header through ``rpm -qp --qf`` with a fixed set
of tags. SOURCE_DATE_EPOCH is fixed, so any difference is a change in what gfxpack
writes: ``pytest --update-golden tests/formats/test_golden_packages.py`` rewrites the
files; review ``git diff tests/formats/golden`` before keeping it.

Sizes of compressed members are left out (``dpkg-deb --info`` prints them): they
follow the compressor's version, not gfxpack.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tests.conftest import run
from tests.golden import Golden
from tests.small_tree import build

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
EPOCH = "1704067200"  # 2024-01-01: fixed so that every time in the output is too
# dpkg-deb --contents prints times in the local zone: the files must not depend on it.
TOOL_ENV = {**os.environ, "TZ": "UTC", "LC_ALL": "C.UTF-8"}


def entry(name: str, artifact: str, components=("lib",), **extra: object) -> dict[str, object]:
    return {
        "Package": name,
        "Maintainer": "ROCm Packaging <rocm-packaging@example.com>",
        "Description_Short": f"{name} for the golden files",
        "Description_Long": f"{name}, built to pin down what the writers emit.",
        "Section": "devel",
        "Priority": "optional",
        "Group": "Development/Libraries",
        "License": "MIT",
        "Vendor": "Example",
        "Homepage": "https://example.com/rocm",
        "Artifactory": [
            {
                "Artifact": artifact,
                "Artifact_Subdir": [{"Name": "pkg", "Components": list(components)}],
            }
        ],
        **extra,
    }


CONFIG = [
    # Maintainer scripts: update-alternatives for the release prefix.
    entry("amdrocm-core", "core", Postinstall="True"),
    # File triggers: a deb ``triggers`` member and an rpm %transfiletriggerin.
    entry(
        "amdrocm-sysdeps",
        "sysdeps",
        DEBTriggers=["interest-noawait {prefix}"],
        RPMTransFileTriggerIn=["{prefix}"],
    ),
    # Host package plus one device package per target.
    entry(
        "amdrocm-blas",
        "blas",
        Gfxarch="True",
        DEBDepends=["libc6 (>= 2.31)", "amdrocm-core"],
        RPMRequires=["glibc >= 2.31", "amdrocm-core"],
    ),
    # -dev / -devel, whose non-versioned package carries the relations to other names.
    entry(
        "amdrocm-blas-devel",
        "blas",
        components=("dev",),
        DEBDepends=["amdrocm-blas"],
        RPMRequires=["amdrocm-blas"],
        DEBRecommends=["amdrocm-sysdeps"],
        RPMRecommends=["amdrocm-sysdeps"],
        Provides=["rocblas-devel"],
        Conflicts=["rocblas-devel"],
        Replaces=["rocblas-dev"],
        Obsoletes=["rocblas-devel < 7.0"],
    ),
    # Metapackages: one per target and the generic one over them.
    {
        **entry("amdrocm-sdk", "sdk"),
        "Artifactory": [],
        "Metapackage": "True",
        "Gfxarch": "True",
        "DEBDepends": ["amdrocm-blas", "amdrocm-blas-devel"],
        "RPMRequires": ["amdrocm-blas", "amdrocm-blas-devel"],
    },
]

# The artifacts: (directory, path under pkg/, mode), a file's text being its path.
FILES = [
    ("core_lib_generic", "bin/rocm-core-info", 0o755),
    ("core_lib_generic", "share/doc/rocm-core/README", 0o644),
    ("sysdeps_lib_generic", "lib/rocm_sysdeps/libz.so.1", 0o644),
    ("blas_lib_generic", "lib/librocblas.so.5", 0o644),
    ("blas_lib_gfx942", "lib/rocblas/library/TensileLibrary_gfx942.dat", 0o644),
    ("blas_dev_generic", "include/rocblas/rocblas.h", 0o644),
]
LINKS = [("blas_lib_generic", "lib/librocblas.so", "librocblas.so.5")]

# One package of each kind: its deb name and its rpm name.
PACKAGES = {
    "amdrocm-core8.2": "amdrocm-core8.2",  # maintainer scripts (update-alternatives)
    "amdrocm-sysdeps8.2": "amdrocm-sysdeps8.2",  # file triggers
    "amdrocm-blas-host8.2": "amdrocm-blas-host8.2",  # host
    "amdrocm-blas8.2-gfx942": "amdrocm-blas8.2-gfx942",  # device
    "amdrocm-blas-dev8.2": "amdrocm-blas-devel8.2",  # -dev(el)
    "amdrocm-blas-dev": "amdrocm-blas-devel",  # non-versioned, Provides/Conflicts/...
    "amdrocm-sdk8.2-gfx942": "amdrocm-sdk8.2-gfx942",  # arch metapackage
    "amdrocm-sdk8.2": "amdrocm-sdk8.2",  # generic metapackage
}
# Built but of a kind already covered above (a versioned meta, non-versioned aliases).
NOT_GOLDEN = {"amdrocm-blas8.2", "amdrocm-core", "amdrocm-sysdeps", "amdrocm-blas", "amdrocm-sdk"}

RPM_TAGS = """\
NAME: %{NAME}
EPOCH: %{EPOCH}
VERSION: %{VERSION}
RELEASE: %{RELEASE}
ARCH: %{ARCH}
SUMMARY: %{SUMMARY}
DESCRIPTION: %{DESCRIPTION}
LICENSE: %{LICENSE}
GROUP: %{GROUP}
URL: %{URL}
VENDOR: %{VENDOR}
PACKAGER: %{PACKAGER}
BUILDTIME: %{BUILDTIME}
PAYLOADCOMPRESSOR: %{PAYLOADCOMPRESSOR}
[REQUIRE: %{REQUIRENAME} flags=%{REQUIREFLAGS} version=%{REQUIREVERSION}
][PROVIDE: %{PROVIDENAME} flags=%{PROVIDEFLAGS} version=%{PROVIDEVERSION}
][CONFLICT: %{CONFLICTNAME} flags=%{CONFLICTFLAGS} version=%{CONFLICTVERSION}
][OBSOLETE: %{OBSOLETENAME} flags=%{OBSOLETEFLAGS} version=%{OBSOLETEVERSION}
][RECOMMEND: %{RECOMMENDNAME} flags=%{RECOMMENDFLAGS} version=%{RECOMMENDVERSION}
]%|PREIN?{PREIN (%{PREINPROG}):
%{PREIN}
}|%|POSTIN?{POSTIN (%{POSTINPROG}):
%{POSTIN}
}|%|PREUN?{PREUN (%{PREUNPROG}):
%{PREUN}
}|%|POSTUN?{POSTUN (%{POSTUNPROG}):
%{POSTUN}
}|[FILE: %{FILENAMES} mode=%{FILEMODES:perms} owner=%{FILEUSERNAME}:%{FILEGROUPNAME} \
size=%{FILESIZES} flags=%{FILEFLAGS:fflags} digest=%{FILEDIGESTS} link=%{FILELINKTOS}
]"""


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CONFIG built at 8.2.0 for gfx942 (kpack: host and device packages) in both
    formats, at EPOCH: its output directory."""
    tmp_path = tmp_path_factory.mktemp("golden")
    artifacts = tmp_path / "artifacts"
    for directory in {d for d, _, _ in FILES + LINKS}:
        (artifacts / directory).mkdir(parents=True)
        (artifacts / directory / "artifact_manifest.txt").write_text("pkg\n")
    for directory, path, mode in FILES:
        file = artifacts / directory / "pkg" / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"{path}\n")
        file.chmod(mode)
    for directory, path, target in LINKS:
        (artifacts / directory / "pkg" / path).symlink_to(target)
    config = tmp_path / "package.json"
    config.write_text(json.dumps(CONFIG))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        result = build(tmp_path, artifacts, "--format", "deb,rpm", "--mode", "kpack", config=config)
    assert result.exit_code == 0, result.output
    return tmp_path / "out"


@pytest.fixture
def formats_golden(golden: Golden) -> Golden:
    return dataclasses.replace(golden, directory=GOLDEN_DIR)


def one(out: Path, pattern: str) -> Path:
    found = sorted(out.glob(pattern))
    assert len(found) == 1, f"{pattern}: {[f.name for f in out.iterdir()]}"
    return found[0]


def deb_text(deb: Path, scratch: Path) -> str:
    """Each control member (name, mode, text) as ``dpkg-deb -e`` extracts it, then the
    data listing of ``dpkg-deb --contents``."""
    control = scratch / "DEBIAN"
    run("dpkg-deb", "-e", str(deb), str(control), env=TOOL_ENV)
    parts = []
    for member in sorted(control.iterdir()):
        mode = oct(member.stat().st_mode & 0o7777)
        parts.append(f"=== {member.name} ({mode})\n{member.read_text()}")
    parts.append(
        "=== data (dpkg-deb --contents)\n"
        + run("dpkg-deb", "--contents", str(deb), env=TOOL_ENV).stdout
    )
    return "".join(parts)


@pytest.mark.parametrize("name", PACKAGES)
def test_deb_control_members_and_contents(packages, formats_golden, tmp_path, name):
    deb = one(packages, f"{name}_*.deb")
    formats_golden.check(f"{name}.deb.txt", deb_text(deb, tmp_path))


@pytest.mark.parametrize("name", PACKAGES.values())
def test_rpm_header_tags(packages, formats_golden, name):
    rpm = one(packages, f"{name}-8.2.0-*.rpm")
    shown = run("rpm", "-qp", "--qf", RPM_TAGS, str(rpm), env=TOOL_ENV).stdout
    triggers = run("rpm", "-qp", "--filetriggers", str(rpm), env=TOOL_ENV).stdout
    formats_golden.check(f"{name}.rpm.txt", f"{shown}=== file triggers\n{triggers}")


def test_every_built_package_has_golden_files(packages):
    """The golden set covers each kind the build made, so a new kind is not missed."""
    debs = {p.name.split("_")[0] for p in packages.glob("*.deb")}
    assert debs == set(PACKAGES) | NOT_GOLDEN
    rpms = {p.name.removesuffix("-8.2.0-1.x86_64.rpm") for p in packages.glob("*.rpm")}
    assert set(PACKAGES.values()) <= rpms
    assert len(rpms) == len(debs)


def test_update_rewrites_only_under_the_update_switch(tmp_path):
    """Without the switch a difference fails and the file stays; with it, it is rewritten."""
    path = tmp_path / "x.txt"
    path.write_text("old\n")
    with pytest.raises(AssertionError):
        Golden(directory=tmp_path).check("x.txt", "new\n")
    assert path.read_text() == "old\n"
    Golden(directory=tmp_path, update=True).check("x.txt", "new\n")
    assert path.read_text() == "new\n"
