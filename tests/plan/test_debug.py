"""Which packages get a debug-symbol package (plan/debug.py): one per host or versioned
package whose base lists the dbg component, never per arch, always pinned exactly to
the package it describes; a per-arch dbg directory makes no device package."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gfxpack.config import parse_config
from gfxpack.formats import DEB, RPM
from gfxpack.plan import ArtifactIndex, Kind, PinPolicy, PlanOptions, Severity, plan


def specs(gfxarch: bool = True, components=("lib", "dbg"), **extra: str):
    entry = {
        "Package": "amdrocm-blas",
        "Gfxarch": str(gfxarch),
        "Artifactory": [
            {"Artifact": "blas", "Artifact_Subdir": [{"Name": "rocBLAS", "Components": components}]}
        ],
        **extra,
    }
    return parse_config(json.dumps([entry])).packages


def debug_packages(release):
    return [p for p in release.packages if p.kind is Kind.DEBUG]


@pytest.mark.parametrize("policy", list(PinPolicy), ids=str)
def test_the_host_gets_one_debug_package_pinned_exactly_whatever_the_policy(policy):
    release = plan(specs(), ["gfx942", "gfx1100"], "8.2.0", options=PlanOptions(pin_policy=policy))
    (debug,) = debug_packages(release)
    assert (debug.key, debug.arch, debug.has_files) == (
        "amdrocm-blas-host8.2-debuginfo",
        None,
        True,
    )
    assert debug.name(DEB) == "amdrocm-blas-host8.2-dbgsym"
    assert debug.name(RPM) == "amdrocm-blas-host8.2-debuginfo"
    ((own,),) = debug.deb.depends
    assert (own.name, own.target, own.op, own.version) == (
        "amdrocm-blas-host8.2",
        "amdrocm-blas-host8.2",
        "=",
        "8.2.0-1",
    )
    # Built right after the package whose symbols it holds.
    keys = [p.key for p in release.packages]
    assert keys.index(debug.key) == keys.index("amdrocm-blas-host8.2") + 1


def test_a_devel_base_is_spelled_as_each_format_spells_it():
    devel = [replace(specs(gfxarch=False)[0], name="amdrocm-blas-devel")]
    (debug,) = debug_packages(plan(devel, ["gfx942"], "8.2.0"))
    assert (debug.name(DEB), debug.name(RPM)) == (
        "amdrocm-blas-dev8.2-dbgsym",
        "amdrocm-blas-devel8.2-debuginfo",
    )


def test_no_dbg_component_or_disable_debug_package_means_none():
    assert not debug_packages(plan(specs(components=("lib",)), ["gfx942"], "8.2.0"))
    release = plan(specs(Disable_Debug_Package="True"), ["gfx942"], "8.2.0")
    assert not debug_packages(release)
    assert any(
        n.severity is Severity.INFO and "Disable_Debug_Package" in n.message for n in release.notes
    )


def test_a_tree_without_a_dbg_directory_gets_none():
    tree = ArtifactIndex(["blas_lib_generic", "blas_lib_gfx942"])
    assert not debug_packages(plan(specs(), ["gfx942"], "8.2.0", artifacts=tree))
    tree = ArtifactIndex(["blas_lib_generic", "blas_lib_gfx942", "blas_dbg_generic"])
    assert len(debug_packages(plan(specs(), ["gfx942"], "8.2.0", artifacts=tree))) == 1


def test_per_arch_debug_symbols_make_no_device_and_are_said_to_be_left_out():
    tree = ArtifactIndex(["blas_lib_generic", "blas_dbg_generic", "blas_dbg_gfx942"])
    release = plan(specs(), ["gfx942"], "8.2.0", artifacts=tree)
    # No per-arch content but debug symbols: built as a non-gfxarch package.
    assert {p.kind for p in release.packages} == {Kind.VERSIONED, Kind.NON_VERSIONED, Kind.DEBUG}
    (debug,) = debug_packages(release)
    assert debug.key == "amdrocm-blas8.2-debuginfo"
    assert any("blas_dbg_gfx942 not packaged" in n.message for n in release.notes)


def test_devices_and_metapackages_never_get_one():
    tree = ArtifactIndex(["blas_lib_generic", "blas_lib_gfx942", "blas_dbg_generic"])
    release = plan(specs(), ["gfx942"], "8.2.0", artifacts=tree)
    owners = {p.deb.depends[0][0].target for p in debug_packages(release)}
    assert owners == {"amdrocm-blas-host8.2"}
    core = {"Package": "amdrocm-core", "Metapackage": "True", "Gfxarch": "True"}
    core |= {"DEBDepends": ["amdrocm-blas"], "RPMRequires": ["amdrocm-blas"]}
    both = (*specs(), *parse_config(json.dumps([core])).packages)
    assert {p.base for p in debug_packages(plan(both, ["gfx942"], "8.2.0"))} == {"amdrocm-blas"}
