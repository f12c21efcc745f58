"""File triggers (DEBTriggers, RPMTransFileTriggerIn): package.json checks them, the
DEB gets its ``triggers`` member and the RPM its ``%transfiletriggerin`` scriptlet,
and the real dpkg and rpm run the trigger once after a transaction installing two
packages under the prefix, which registers the links those two brought."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gfxpack.config import InvalidConfig, parse_config
from tests.conftest import dpkg_root, run
from tests.small_tree import build
from tests.verify.clients import shell_root

PREFIX = "/opt/rocm/core-10.1"
TRIGGERED = "amdrocm-sysdeps10.1"


def entry(name: str, artifact: str, **extra: object) -> dict[str, object]:
    return {
        "Package": name,
        "Artifactory": [
            {"Artifact": artifact, "Artifact_Subdir": [{"Name": "pkg", "Components": ["lib"]}]}
        ],
        **extra,
    }


CONFIG = [
    # No Postinstall: the triggers alone make it register (TheRock#7451's follow-up).
    entry(
        "amdrocm-sysdeps",
        "sysdeps",
        DEBTriggers=["interest-noawait {prefix}"],
        RPMTransFileTriggerIn=["{prefix}"],
    ),
    entry("amdrocm-tools", "tools"),
    entry("amdrocm-libs", "libs"),
]
# What each artifact installs under the prefix.
CONTENT = {"sysdeps": "share/sysdeps/README", "tools": "bin/rocm-tool", "libs": "lib/README"}


def test_a_trigger_line_must_be_one_the_format_reads():
    bad = [
        entry(
            "amdrocm-sysdeps",
            "sysdeps",
            DEBTriggers=["interest-noawait {prefix}", "listen /opt", "interest a b"],
            RPMTransFileTriggerIn=["{prefix}/lib", "opt/rocm", "{prefix}x", 3],
        ),
    ]
    with pytest.raises(InvalidConfig) as error:
        parse_config(json.dumps(bad), "p.json")
    assert sorted(str(error.value).splitlines()) == [
        "p.json: /0/DEBTriggers/1: expected a deb-triggers directive (interest, "
        "interest-await, interest-noawait, activate, activate-await, activate-noawait), "
        "got 'listen /opt'",
        "p.json: /0/DEBTriggers/2: expected 'interest' then an absolute path, {prefix} or "
        "{prefix}/PATH or a trigger name, got 'a b'",
        "p.json: /0/RPMTransFileTriggerIn/1: expected an absolute path, {prefix} or "
        "{prefix}/PATH, got 'opt/rocm'",
        "p.json: /0/RPMTransFileTriggerIn/2: expected an absolute path, {prefix} or "
        "{prefix}/PATH, got '{prefix}x'",
        "p.json: /0/RPMTransFileTriggerIn/3: expected a string, got a number (3)",
    ]


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CONFIG built at 10.1.0 in both formats: its OUT."""
    tmp_path = tmp_path_factory.mktemp("triggers")
    artifacts = tmp_path / "artifacts"
    for artifact, path in CONTENT.items():
        stage = artifacts / f"{artifact}_lib_generic"
        (stage / "pkg" / path).parent.mkdir(parents=True)
        (stage / "pkg" / path).write_text(f"{artifact}\n")
        (stage / "artifact_manifest.txt").write_text("pkg\n")
    # The target the build asks for, with nothing in it.
    (artifacts / "libs_lib_gfx942").mkdir()
    (artifacts / "libs_lib_gfx942" / "artifact_manifest.txt").write_text("")
    config = tmp_path / "package.json"
    config.write_text(json.dumps(CONFIG))
    result = build(
        tmp_path, artifacts, "--rocm-version", "10.1.0", "--format", "deb,rpm", config=config
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "out"


def one(out: Path, pattern: str) -> str:
    (found,) = out.glob(pattern)
    return str(found)


def test_each_format_carries_the_trigger_on_the_release_prefix(packages):
    deb = one(packages, f"{TRIGGERED}_*.deb")
    assert run("dpkg-deb", "-I", deb, "triggers").stdout == f"interest-noawait {PREFIX}\n"
    assert "triggered" in run("dpkg-deb", "-I", deb, "postinst").stdout
    rpm = one(packages, f"{TRIGGERED}-*.rpm")
    shown = run("rpm", "-qp", "--filetriggers", rpm).stdout
    assert shown.startswith(f"transfiletriggerin scriptlet (using /bin/sh) -- {PREFIX}\n")
    assert "update-alternatives --install /opt/rocm/core rocm-core" in shown
    # The packages without triggers have neither.
    other = one(packages, "amdrocm-tools10.1_*.deb")
    assert "triggers" not in run("dpkg-deb", "-I", other).stdout
    assert (
        run("rpm", "-qp", "--filetriggers", one(packages, "amdrocm-tools10.1-*.rpm")).stdout == ""
    )


def registrations(root: Path) -> int:
    """How many times update-alternatives, run chrooted by rpm, registered the release
    (its log in the root)."""
    log = root / "var/log/alternatives.log"
    text = log.read_text() if log.exists() else ""
    return len(re.findall(r"run with --install /opt/rocm/core rocm-core", text))


def assert_links(root: Path, present: bool) -> None:
    for directory in ("bin", "lib"):
        link = root / "opt/rocm" / directory
        assert link.is_symlink() is present, link
        if present:  # absolute links, read inside the root
            assert os.readlink(link) == f"/etc/alternatives/rocm-{directory}"
            chosen = root / f"etc/alternatives/rocm-{directory}"
            assert os.readlink(chosen) == f"{PREFIX}/{directory}"


def test_dpkg_runs_the_trigger_once_after_both_packages(packages, tmp_path):
    root = dpkg_root(tmp_path / "root")
    dpkg = ["dpkg", "--root", str(root), "--force-script-chrootless", "--log", "/dev/null"]
    run(*dpkg, "-i", one(packages, f"{TRIGGERED}_*.deb"))
    # Registered on configure; the links to what is not installed yet are not made.
    assert (root / "opt/rocm/core").is_symlink()
    assert_links(root, present=False)
    tools, libs = one(packages, "amdrocm-tools10.1_*.deb"), one(packages, "amdrocm-libs10.1_*.deb")
    output = run(*dpkg, "-i", tools, libs).stdout
    # dpkg's own account (update-alternatives --root logs outside the root).
    assert output.count(f"Processing triggers for {TRIGGERED} ") == 1, output
    assert_links(root, present=True)


def test_rpm_runs_the_trigger_once_after_both_packages(packages, tmp_path):
    root = shell_root(tmp_path / "root")
    rpm = ["rpm", "--root", str(root), "--nodeps"]
    run(*rpm, "-i", one(packages, f"{TRIGGERED}-*.rpm"))
    assert (root / "opt/rocm/core").is_symlink()
    assert_links(root, present=False)
    before = registrations(root)
    tools, libs = one(packages, "amdrocm-tools10.1-*.rpm"), one(packages, "amdrocm-libs10.1-*.rpm")
    run(*rpm, "-i", tools, libs)
    assert registrations(root) == before + 1
    assert_links(root, present=True)
