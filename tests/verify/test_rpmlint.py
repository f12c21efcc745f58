"""rpmlint on every kind of RPM gfxpack writes (host, device, meta, devel, the
repository setup package): the findings RPM distributions care about are fixed,
and every finding left is on the documented list below, each with its reason
(README, "Publishing and installing")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gfxpack.plan import Kind
from tests.verify.signed import SETUP

pytestmark = pytest.mark.slow

# Findings fixed in the writer: none of them may come back.
FIXED = {
    "no-packager-tag",
    "no-changelogname-tag",
    "library-without-ldconfig-postin",
    "library-without-ldconfig-postun",
    "postin-without-ldconfig",
    "postun-without-ldconfig",
    "update-alternatives-requirement-missing",
    "update-alternatives-postun-call-missing",
    "update-alternatives-post-call-missing",
    "shared-library-not-executable",
    "non-executable-library",
}
# What remains, and why (the README lists the same).
DOCUMENTED = {
    "dir-or-file-in-opt": "ROCm installs under /opt/rocm, as upstream does",
    "hidden-file-or-dir": "the .kpack directory and .buildinfo files are part of the layout",
    "requires-on-release": "host and device packages of a release must match exactly",
    "alternative-link-missing": "the links belong to update-alternatives, not to a package",
    "alternative-generic-name-missing": "as above: registered by the scriptlet only",
    "dangerous-command-in-%postun": "rpm -q checks whether a sibling variant keeps the links",
    "no-documentation": "documentation ships in its own packages",
    "invalid-license": "rpmlint's license list is a distribution's own configuration",
    "invalid-license-exception": "as above",
    "no-signature": "unsigned unless built with --sign-key or passed to gfxpack sign",
    "unknown-key": "signed by a key rpmlint's rpm database has not imported",
    "no-binary": "x86_64 packages whose content is device code or data only",
    "missing-PT_GNU_STACK-section": "the example's synthetic ELF files",
    "statically-linked-binary": "the example's synthetic ELF files",
    "shared-library-without-dependency-information": "the example's synthetic ELF files",
    "no-soname": "the example's synthetic ELF files",
    "devel-file-in-non-devel-package": "the example's split of its synthetic files",
    "files-duplicate": "the example's synthetic files repeat content",
    "devel-package-with-non-devel-group": "the group comes from the package configuration",
    "description-line-too-long": "descriptions come from the package configuration",
    "self-obsoletion": "renamed packages provide and obsolete their old names",
    "no-dependency-on": "rpmlint reads the -dnn suffix as a language code",
    "explicit-lib-dependency": "system library packages are named by the configuration",
}
# Errors and warnings; the I: lines are information only.
_FINDING = re.compile(r"^(\S+?)\.\w+: ([EW]): (\S+)")


def findings(files: list[Path]) -> dict[str, set[str]]:
    """finding name -> packages it was reported for."""
    result = subprocess.run(["rpmlint", *map(str, files)], capture_output=True, text=True)
    found: dict[str, set[str]] = {}
    for line in result.stdout.splitlines():
        if match := _FINDING.match(line):
            found.setdefault(match[3], set()).add(match[1])
    assert "packages and 0 specfiles checked" in result.stdout, result.stdout + result.stderr
    return found


def test_rpmlint_findings_are_fixed_or_documented(example_release, signed_repo):
    plan = example_release.plan
    files = example_release.files("rpm")
    kinds = {Kind.HOST, Kind.DEVICE, Kind.META, Kind.ARCH_META, Kind.VERSIONED}
    chosen = {}
    for key, path in sorted(files.items()):
        chosen.setdefault(plan.by_key[key].kind, path)
    assert kinds <= set(chosen), set(chosen)
    # Every kind, the packages with scriptlets and shared libraries, the setup package.
    picked = {*chosen.values(), files["amdrocm-runtime8.2"], files["amdrocm-core-devel8.2"]}
    picked.add(next((signed_repo[1] / "rpm/Packages").glob(f"{SETUP}-*.rpm")))
    found = findings(sorted(picked))
    assert not FIXED & set(found), {name: found[name] for name in FIXED & set(found)}
    assert set(found) <= set(DOCUMENTED), set(found) - set(DOCUMENTED)
    # The checks that matter ran on packages they apply to: no finding is a real pass.
    assert "dir-or-file-in-opt" in found
