"""Maintainer scripts of Postinstall packages: update-alternatives for the release prefix."""

from __future__ import annotations

import subprocess

import pytest

from gfxpack.alternatives import priority, scripts_for
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import Kind, plan
from tests.conftest import SEED_TARGETS

EPOCH = 1_704_067_200


@pytest.fixture(scope="module")
def release(example_config):
    return plan(example_config.packages, SEED_TARGETS, "8.2.0")


def test_priority_is_upstreams_formula():
    # ((8-3)*14+2)*14+0 = 1008, then minutes since 1.6e9 s.
    assert priority("8.2.0", 1_600_000_000 + 5 * 60) == 1008 * 1_000_000 + 5
    assert priority("7.14.1", 0) == ((4 * 14 + 14) * 14 + 1) * 1_000_000
    assert priority("8.3.0", EPOCH) > priority("8.2.9", EPOCH + 365 * 86400)


@pytest.mark.parametrize("version", ["7.14.0~dev20260625", "7.14.0rc3", "7.14.0.20260625"])
def test_priority_reads_only_the_release_numbers(version):
    """A nightly's date is not a patch level: it ranks as its release and stays within
    the signed 32-bit priority update-alternatives takes."""
    assert priority(version, EPOCH) == priority("7.14.0", EPOCH) < 2**31


def test_only_versioned_variants_of_postinstall_bases_carry_scripts(release):
    carrying = {
        p.key for p in release.packages for fmt in FORMATS if scripts_for(release, p, fmt, EPOCH)
    }
    core = {p.key for p in release.family("amdrocm-core") if p.kind is not Kind.NON_VERSIONED}
    assert core and core <= carrying
    assert all(release.specs[release.by_key[key].base].postinstall for key in carrying)
    assert not any(release.by_key[key].kind is Kind.NON_VERSIONED for key in carrying)


@pytest.mark.parametrize("fmt", FORMATS)
def test_scripts_are_valid_shell_naming_the_prefix_and_the_siblings(release, fmt):
    package = release.by_key["amdrocm-core8.2-gfx942"]
    scripts = scripts_for(release, package, fmt, EPOCH)
    # dpkg deregisters before removal (prerm); rpm after it (%postun), as its guidelines ask.
    removal = "prerm" if fmt is DEB else "postrm"
    assert sorted(scripts) == sorted(["postinst", removal])
    for text in scripts.values():
        subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    assert release.prefix in scripts["postinst"]
    assert f" {priority('8.2.0', EPOCH)}" in scripts["postinst"]
    siblings = [p.name(fmt) for p in release.family("amdrocm-core") if p.key != package.key]
    named = [name for name in siblings if name in scripts[removal]]
    assert named and "amdrocm-core" not in scripts[removal].split()  # not the alias


def test_each_format_relocates_the_way_its_tools_do(release):
    package = release.by_key["amdrocm-core8.2"]
    deb = scripts_for(release, package, DEB, EPOCH)
    rpm = scripts_for(release, package, RPM, EPOCH)
    assert "DPKG_ROOT" in deb["postinst"] and "dpkg-query" in deb["prerm"]
    assert "RPM_INSTALL_PREFIX0" in rpm["postinst"] and "rpm -q" in rpm["postrm"]
    assert "DPKG_ROOT" not in rpm["postinst"]
