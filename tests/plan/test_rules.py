"""The dependency rules of spec section 7.1: each devel rule and each Decision."""

from __future__ import annotations

import json

import pytest

from gfxpack.config import parse_config
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import (
    ArtifactIndex,
    Kind,
    MissingDependencies,
    Mode,
    PinPolicy,
    PlanError,
    PlanOptions,
    Severity,
    Variant,
    plan,
)

TARGETS = ("gfx1100", "gfx942")


def specs(*entries):
    return parse_config(json.dumps(list(entries))).packages


def pkg(name, deps=(), gfx=False, meta=False, **extra):
    """An entry with the same dependencies in both formats."""
    entry = {
        "Package": name,
        "DEBDepends": list(deps),
        "RPMRequires": [d for d in deps if d != "libc6"],
    }
    entry["Gfxarch"] = "True" if gfx else "False"
    if meta:
        entry["Metapackage"] = "True"
    entry.update(extra)
    return entry


def depends(release_plan, name, fmt=DEB, field="depends"):
    package = release_plan.get(name)
    assert package is not None, f"{name} not planned"
    return [fmt.render(dep) for dep in getattr(package.relations(fmt), field)]


def names(release_plan, fmt=DEB):
    return [p.name(fmt) for p in release_plan.packages]


RUNTIME_SET = [
    pkg("amdrocm-runtime"),
    pkg("amdrocm-llvm"),
    pkg("amdrocm-blas", ["libc6", "amdrocm-runtime"], gfx=True),
    pkg("amdrocm-rand", ["amdrocm-runtime"], gfx=True),
]


# --- devel packages (Decision 15) ----------------------------------------------------


def test_devel_on_non_gfxarch_runtime_is_the_versioned_package():
    p = plan(specs(*RUNTIME_SET, pkg("amdrocm-llvm-devel", ["amdrocm-llvm"])), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-llvm-devel8.2", RPM) == ["amdrocm-llvm8.2 >= 8.2.0-1"]
    assert depends(p, "amdrocm-llvm-dev8.2") == ["amdrocm-llvm8.2 (>= 8.2.0-1)"]


def test_devel_on_gfxarch_runtime_is_its_host_package():
    """Headers and host libraries build and link; no device code comes along."""
    p = plan(
        specs(*RUNTIME_SET, pkg("amdrocm-blas-devel", ["libc6", "amdrocm-blas"])), TARGETS, "8.2.0"
    )
    assert depends(p, "amdrocm-blas-dev8.2") == ["libc6", "amdrocm-blas-host8.2 (>= 8.2.0-1)"]
    assert depends(p, "amdrocm-blas-devel8.2", RPM) == ["amdrocm-blas-host8.2 >= 8.2.0-1"]
    assert p.get("amdrocm-blas-host8.2").kind is Kind.HOST


def test_devel_on_a_gfxarch_metapackage_omits_it_with_a_warning():
    """A gfxarch meta has no host package; its generic meta would pull every arch."""
    entries = [
        *RUNTIME_SET,
        pkg("amdrocm-core", ["amdrocm-blas"], gfx=True, meta=True),
        pkg("amdrocm-tools-devel", ["amdrocm-runtime", "amdrocm-core"]),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-tools-dev8.2") == ["amdrocm-runtime8.2 (>= 8.2.0-1)"]
    assert (
        "amdrocm-tools-dev8.2: amdrocm-core is a gfxarch metapackage, which has no host "
        "variant: dependency omitted (a -devel package pulls no device code; depend on the "
        "-devel packages of its members instead)"
    ) in [n.message for n in p.notes if n.severity is Severity.WARNING]


def test_devel_is_never_gfxarch_and_says_so():
    p = plan(
        specs(*RUNTIME_SET, pkg("amdrocm-blas-devel", ["amdrocm-blas"], gfx=True)), TARGETS, "8.2.0"
    )
    family = p.family("amdrocm-blas-devel")
    assert [(x.key, x.kind) for x in family] == [
        ("amdrocm-blas-devel8.2", Kind.VERSIONED),
        ("amdrocm-blas-devel", Kind.NON_VERSIONED),
    ]
    assert any(
        "-devel packages are never gfxarch" in n.message and n.severity is Severity.INFO
        for n in p.notes
    )


DEVEL_SET = [
    *RUNTIME_SET,
    pkg("amdrocm-blas-devel", ["amdrocm-blas"]),
    pkg("amdrocm-rand-devel", ["amdrocm-rand"]),
    pkg("amdrocm-core", ["amdrocm-runtime", "amdrocm-blas"], gfx=True, meta=True),
]


def test_gfxarch_devel_meta_has_arch_metas_on_its_runtimes_arch_meta():
    """Like any Gfxarch=True metapackage: an arch meta per target, on the runtime's arch
    meta and the -devel packages; the generic meta on every arch meta."""
    devel_meta = pkg(
        "amdrocm-core-devel", ["amdrocm-blas-devel", "amdrocm-rand-devel"], gfx=True, meta=True
    )
    p = plan(specs(*DEVEL_SET, devel_meta), TARGETS, "8.2.0")
    assert [(x.name(DEB), x.kind) for x in p.family("amdrocm-core-devel")] == [
        ("amdrocm-core-dev8.2", Kind.GENERIC_META),
        ("amdrocm-core-dev8.2-gfx942", Kind.ARCH_META),
        ("amdrocm-core-dev8.2-gfx1100", Kind.ARCH_META),
        ("amdrocm-core-dev", Kind.NON_VERSIONED),
    ]
    assert depends(p, "amdrocm-core-dev8.2") == [
        "amdrocm-core-dev8.2-gfx942 (= 8.2.0-1)",
        "amdrocm-core-dev8.2-gfx1100 (= 8.2.0-1)",
    ]
    assert depends(p, "amdrocm-core-dev8.2-gfx942") == [
        "amdrocm-core8.2-gfx942 (= 8.2.0-1)",
        "amdrocm-blas-dev8.2 (= 8.2.0-1)",
        "amdrocm-rand-dev8.2 (= 8.2.0-1)",
    ]
    assert depends(p, "amdrocm-core-devel8.2-gfx1100", RPM)[0] == (
        "amdrocm-core8.2-gfx1100 = 8.2.0-1"
    )


def test_gfxarch_devel_meta_listing_its_runtime_meta_gets_its_arch_meta_once():
    devel_meta = pkg(
        "amdrocm-core-devel", ["amdrocm-core", "amdrocm-blas-devel"], gfx=True, meta=True
    )
    p = plan(specs(*DEVEL_SET, devel_meta), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-core-dev8.2-gfx1100") == [
        "amdrocm-core8.2-gfx1100 (= 8.2.0-1)",
        "amdrocm-blas-dev8.2 (= 8.2.0-1)",
    ]


def test_devel_meta_arch_meta_falls_back_to_its_runtimes_host_with_a_warning():
    """A devel meta's runtime may be a library without a device for some target: that arch
    meta gets the library's host package instead, as any arch meta does."""
    entries = [
        pkg("amdrocm-blas", gfx=True, Artifactory=[art("blas")]),
        pkg("amdrocm-app", gfx=True, Artifactory=[art("app")]),  # the tree's gfx1100 part
        pkg("amdrocm-blas-devel", gfx=True, meta=True),
    ]
    index = ArtifactIndex(["blas_lib_generic", "blas_lib_gfx942", "app_lib_gfx1100"])
    p = plan(specs(*entries), TARGETS, "8.2.0", artifacts=index)
    assert depends(p, "amdrocm-blas-dev8.2-gfx942") == ["amdrocm-blas8.2-gfx942 (= 8.2.0-1)"]
    assert depends(p, "amdrocm-blas-dev8.2-gfx1100") == ["amdrocm-blas-host8.2 (= 8.2.0-1)"]
    assert (
        "amdrocm-blas-devel8.2-gfx1100: amdrocm-blas has no gfx1100 device package: "
        "depending on amdrocm-blas-host8.2 instead"
    ) in [n.message for n in p.notes if n.severity is Severity.WARNING]


def test_versioned_devel_meta_depends_on_devels_and_its_runtime_meta():
    """A Gfxarch=False devel meta is a Gfxarch=False meta: full packages."""
    devel_meta = pkg("amdrocm-core-devel", ["amdrocm-blas-devel", "amdrocm-rand-devel"], meta=True)
    p = plan(specs(*DEVEL_SET, devel_meta), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-core-dev8.2") == [
        "amdrocm-core8.2 (= 8.2.0-1)",
        "amdrocm-blas-dev8.2 (= 8.2.0-1)",
        "amdrocm-rand-dev8.2 (= 8.2.0-1)",
    ]
    assert depends(p, "amdrocm-core-devel8.2", RPM)[0] == "amdrocm-core8.2 = 8.2.0-1"
    assert p.get("amdrocm-core-devel8.2").kind is Kind.VERSIONED_META
    assert len(p.family("amdrocm-core-devel")) == 2


def test_devel_meta_listing_its_runtime_meta_gets_it_once():
    entries = [
        *RUNTIME_SET,
        pkg("amdrocm-blas-devel", ["amdrocm-blas"]),
        pkg("amdrocm-core", ["amdrocm-blas"], gfx=True, meta=True),
        pkg("amdrocm-core-devel", ["amdrocm-core", "amdrocm-blas-devel"], meta=True),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-core-dev8.2") == [
        "amdrocm-core8.2 (= 8.2.0-1)",
        "amdrocm-blas-dev8.2 (= 8.2.0-1)",
    ]


def test_deb_dev_spelling_in_depends_resolves_to_the_devel_base():
    entries = [
        *RUNTIME_SET,
        pkg("amdrocm-blas-devel", ["amdrocm-blas"]),
        pkg("amdrocm-sdk", ["amdrocm-blas-dev"], meta=True),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-sdk8.2") == ["amdrocm-blas-dev8.2 (= 8.2.0-1)"]
    assert depends(p, "amdrocm-sdk8.2", RPM) == ["amdrocm-blas-devel8.2 = 8.2.0-1"]


# --- Decision 1: host -> host variant; device -> same arch ----------------------------


def test_host_and_device_rules():
    entries = [
        *RUNTIME_SET,
        pkg("amdrocm-fft", ["libc6", "amdrocm-runtime", "amdrocm-rand"], gfx=True),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-fft-host8.2") == [
        "libc6",
        "amdrocm-runtime8.2 (>= 8.2.0-1)",
        "amdrocm-rand-host8.2 (>= 8.2.0-1)",
    ]
    # Devices: own host (=), same-arch gfxarch deps (>=); no system or non-gfxarch deps.
    assert depends(p, "amdrocm-fft8.2-gfx942") == [
        "amdrocm-fft-host8.2 (= 8.2.0-1)",
        "amdrocm-rand8.2-gfx942 (>= 8.2.0-1)",
    ]


def test_non_gfxarch_versioned_on_gfxarch_dep_uses_its_host():
    p = plan(specs(*RUNTIME_SET, pkg("amdrocm-tool", ["amdrocm-blas"])), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-tool8.2") == ["amdrocm-blas-host8.2 (>= 8.2.0-1)"]


def test_recommends_and_suggests_follow_the_same_rules():
    entries = [
        *RUNTIME_SET,
        pkg(
            "amdrocm-fft",
            ["amdrocm-runtime"],
            gfx=True,
            DEBRecommends=["gcc", "amdrocm-rand"],
            DEBSuggests=["amdrocm-llvm"],
        ),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-fft-host8.2", field="recommends") == [
        "gcc",
        "amdrocm-rand-host8.2 (>= 8.2.0-1)",
    ]
    assert depends(p, "amdrocm-fft8.2-gfx1100", field="recommends") == [
        "amdrocm-rand8.2-gfx1100 (>= 8.2.0-1)"
    ]
    assert depends(p, "amdrocm-fft-host8.2", field="suggests") == ["amdrocm-llvm8.2 (>= 8.2.0-1)"]
    assert depends(p, "amdrocm-fft8.2-gfx1100", field="suggests") == []


def test_provides_conflicts_replaces_on_the_non_versioned_package_only():
    entries = [
        pkg(
            "amdrocm-runtime-devel",
            Provides=["hip-devel"],
            Conflicts=["hip-devel"],
            Replaces=["amdrocm-hip-devel"],
            Obsoletes=["amdrocm-hip-devel < 7.0"],
        )
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    alias = p.get("amdrocm-runtime-devel")
    assert [DEB.render(d) for d in alias.deb.replaces] == ["amdrocm-hip-dev"]
    assert [RPM.render(d) for d in alias.rpm.replaces] == ["amdrocm-hip-devel < 7.0"]
    assert [DEB.render(d) for d in alias.deb.provides] == ["hip-dev"]  # as upstream renames
    assert [RPM.render(d) for d in alias.rpm.conflicts] == ["hip-devel"]
    versioned = p.get("amdrocm-runtime-devel8.2")
    assert versioned.deb.provides == versioned.deb.conflicts == versioned.deb.replaces == ()


def test_system_alternatives_and_constraints_pass_verbatim():
    entries = [
        pkg(
            "amdrocm-llvm",
            DEBDepends=["libstdc++6|libstdc++8", "python3 (>= 3.6.8)"],
            RPMRequires=["(libstdc++ or compat-libstdc++)", "python3 >= 3.6.8"],
        )
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-llvm8.2") == ["libstdc++6 | libstdc++8", "python3 (>= 3.6.8)"]
    assert depends(p, "amdrocm-llvm8.2", RPM) == [
        "(libstdc++ or compat-libstdc++)",
        "python3 >= 3.6.8",
    ]


def test_alternatives_with_packages_resolve_member_by_member():
    entries = [
        *RUNTIME_SET,
        pkg(
            "amdrocm-app",
            ["amdrocm-blas | amdrocm-rand"],
            gfx=True,
            RPMRequires=["(amdrocm-blas or amdrocm-rand)"],
        ),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-app-host8.2") == [
        "amdrocm-blas-host8.2 (>= 8.2.0-1) | amdrocm-rand-host8.2 (>= 8.2.0-1)"
    ]
    assert depends(p, "amdrocm-app8.2-gfx942", RPM)[1] == (
        "(amdrocm-blas8.2-gfx942 >= 8.2.0-1 or amdrocm-rand8.2-gfx942 >= 8.2.0-1)"
    )


def test_version_constraint_on_a_package_dependency_is_replaced_with_a_warning():
    entries = [
        *RUNTIME_SET,
        pkg("amdrocm-app", ["amdrocm-runtime (>= 7.0)"], RPMRequires=["amdrocm-runtime >= 7.0"]),
    ]
    p = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(p, "amdrocm-app8.2") == ["amdrocm-runtime8.2 (>= 8.2.0-1)"]
    assert any("replaced by the family pin policy" in n.message for n in p.notes)


# --- Decision 3: no silent drops ---------------------------------------------------------


def test_undefined_and_disabled_dependencies_are_errors_naming_both():
    entries = [
        pkg("amdrocm-a", ["amdrocm-missing", "amdrocm-off"]),
        pkg("amdrocm-off", DisablePackaging="True"),
    ]
    with pytest.raises(PlanError) as caught:
        plan(specs(*entries), TARGETS, "8.2.0")
    assert str(caught.value).splitlines() == [
        "amdrocm-a (/0/DEBDepends/0) depends on amdrocm-missing, which package.json does not "
        "define",
        "amdrocm-a (/0/DEBDepends/1) depends on amdrocm-off, which is disabled (DisablePackaging)",
    ]


def test_missing_dependencies_can_be_downgraded_to_warnings():
    entries = [pkg("amdrocm-a", ["libc6", "amdrocm-missing"])]
    p = plan(
        specs(*entries),
        TARGETS,
        "8.2.0",
        options=PlanOptions(missing_dependencies=MissingDependencies.WARN),
    )
    assert depends(p, "amdrocm-a8.2") == ["libc6"]
    assert [n.severity for n in p.notes] == [Severity.WARNING]
    assert "amdrocm-missing" in p.notes[0].message and "omitted" in p.notes[0].message


def test_disabled_packages_are_not_built_and_reported():
    p = plan(specs(pkg("amdrocm-a"), pkg("amdrocm-b", DisablePackaging="True")), TARGETS, "8.2.0")
    assert "amdrocm-b" not in {x.base for x in p.packages}
    assert any(n.message.startswith("amdrocm-b is disabled") for n in p.notes)


# --- Decision 4: pins -------------------------------------------------------------------

BLAS = [
    *RUNTIME_SET,
    pkg("amdrocm-app", ["amdrocm-blas", "amdrocm-runtime"], gfx=True),
    pkg("amdrocm-core", ["amdrocm-app"], gfx=True, meta=True),
]


def _ops(p, name):
    return [(req.name, req.op) for dep in p.get(name).deb.depends for req in dep]


def test_family_pin_policy():
    p = plan(specs(*BLAS), TARGETS, "8.2.0", "12345")
    assert _ops(p, "amdrocm-app-host8.2") == [
        ("amdrocm-blas-host8.2", ">="),
        ("amdrocm-runtime8.2", ">="),
    ]
    assert _ops(p, "amdrocm-app8.2-gfx942") == [
        ("amdrocm-app-host8.2", "="),
        ("amdrocm-blas8.2-gfx942", ">="),
    ]
    assert {op for _, op in _ops(p, "amdrocm-app8.2")} == {"="}
    assert _ops(p, "amdrocm-app") == [("amdrocm-app8.2", "=")]
    assert {op for _, op in _ops(p, "amdrocm-core8.2-gfx942")} == {"="}
    assert depends(p, "amdrocm-app8.2-gfx942")[0] == "amdrocm-app-host8.2 (= 8.2.0-12345)"


@pytest.mark.parametrize(("policy", "op"), [(PinPolicy.EXACT, "="), (PinPolicy.MINIMUM, ">=")])
def test_uniform_pin_policies(policy, op):
    p = plan(specs(*BLAS), TARGETS, "8.2.0", options=PlanOptions(pin_policy=policy))
    ops = {req.op for x in p.packages for fmt in FORMATS for req in x.relations(fmt).edges()}
    assert ops == {op}


def test_upstream_pin_policy_pins_only_metapackages():
    p = plan(specs(*BLAS), TARGETS, "8.2.0", options=PlanOptions(pin_policy=PinPolicy.UPSTREAM))
    assert _ops(p, "amdrocm-app8.2-gfx942") == [
        ("amdrocm-app-host8.2", None),
        ("amdrocm-blas8.2-gfx942", None),
    ]
    assert _ops(p, "amdrocm-app") == [("amdrocm-app8.2", None)]
    assert _ops(p, "amdrocm-core") == [("amdrocm-core8.2", "=")]
    assert {op for _, op in _ops(p, "amdrocm-app8.2")} == {"="}


# --- Decision 5: prefix; Decision 10: ASAN and single-arch -----------------------------------


def test_default_and_custom_prefix():
    assert plan(specs(pkg("amdrocm-a")), TARGETS, "8.2.0").prefix == "/opt/rocm/core-8.2"
    custom = plan(
        specs(pkg("amdrocm-a")), TARGETS, "8.2.0", options=PlanOptions(install_prefix="/opt/rocm-x")
    )
    assert custom.prefix == "/opt/rocm-x"


def test_asan_variant_names_and_prefix():
    p = plan(specs(*BLAS), TARGETS, "7.15.0", options=PlanOptions(variant=Variant.ASAN))
    assert p.prefix == "/opt/rocm/core-asan-7.15"
    assert "amdrocm-app-host-asan7.15" in names(p)
    assert "amdrocm-app-asan7.15-gfx942" in names(p)
    assert "amdrocm-core-asan" in names(p)
    assert depends(p, "amdrocm-app-host-asan7.15")[1] == "amdrocm-runtime-asan7.15 (>= 7.15.0-1)"


def test_single_arch_mode_uses_the_first_target_with_upstream_names():
    p = plan(
        specs(*BLAS),
        ["gfx94X-dcgpu", "gfx110X-dgpu"],
        "8.2.0",
        options=PlanOptions(mode=Mode.SINGLE_ARCH),
    )
    assert names(p) == [
        "amdrocm-runtime8.2",
        "amdrocm-runtime",
        "amdrocm-llvm8.2",
        "amdrocm-llvm",
        "amdrocm-blas8.2-gfx94x",
        "amdrocm-blas-gfx94x",
        "amdrocm-rand8.2-gfx94x",
        "amdrocm-rand-gfx94x",
        "amdrocm-app8.2-gfx94x",
        "amdrocm-app-gfx94x",
        "amdrocm-core8.2-gfx94x",
        "amdrocm-core-gfx94x",
    ]
    assert depends(p, "amdrocm-app8.2-gfx94x") == [
        "amdrocm-blas8.2-gfx94x (>= 8.2.0-1)",
        "amdrocm-runtime8.2 (>= 8.2.0-1)",
    ]
    assert depends(p, "amdrocm-core8.2-gfx94x") == ["amdrocm-app8.2-gfx94x (= 8.2.0-1)"]
    assert p.targets == ("gfx94X-dcgpu",) and p.arches == ("gfx94x",)
    assert any("first target only" in n.message for n in p.notes)


# --- Decision 6: xnack targets merge; names never carry ':' -----------------------------------


def test_xnack_targets_merge_into_the_base_arch():
    p = plan(specs(*RUNTIME_SET), ["gfx942:xnack+", "gfx942", "gfx1100"], "8.2.0")
    assert p.targets == ("gfx942", "gfx1100")
    assert [x.key for x in p.family("amdrocm-blas") if x.kind is Kind.DEVICE] == [
        "amdrocm-blas8.2-gfx942",
        "amdrocm-blas8.2-gfx1100",
    ]
    assert not any(":" in name for fmt in FORMATS for name in names(p, fmt))


def test_two_targets_with_one_suffix_are_an_error_naming_both():
    # Two families cut to one suffix; no owner lists both (gfx1250 owns gfx1250-strict:
    # tests/scenarios/test_target_owners.py).
    with pytest.raises(
        PlanError, match="targets gfx110X-all and gfx110X-dgpu both map to the name suffix -gfx110x"
    ):
        plan(specs(*RUNTIME_SET), ["gfx110X-all", "gfx110X-dgpu"], "8.2.0")


def test_the_targets_of_one_owner_share_its_device_packages():
    p = plan(specs(*RUNTIME_SET), ["gfx1250-strict", "gfx942", "gfx1250"], "8.2.0")
    assert p.targets == ("gfx942", "gfx1250", "gfx1250-strict")
    assert p.arches == ("gfx942", "gfx1250")
    assert p.owners == {"gfx942": ("gfx942",), "gfx1250": ("gfx1250", "gfx1250-strict")}
    assert [x.key for x in p.family("amdrocm-blas") if x.kind is Kind.DEVICE] == [
        "amdrocm-blas8.2-gfx942",
        "amdrocm-blas8.2-gfx1250",
    ]
    assert not any("strict" in name for fmt in FORMATS for name in names(p, fmt))


# --- Decisions 8 and 9: artifacts decide gfxarch-ness and devices -----------------------------


def art(name, component="lib"):
    return {"Artifact": name, "Artifact_Subdir": [{"Name": name, "Components": [component]}]}


def test_gfxarch_without_per_arch_artifacts_is_built_simple_with_a_warning():
    entries = [
        pkg("amdrocm-ck", gfx=True, Artifactory=[art("composable-kernel")]),
        pkg("amdrocm-app", ["amdrocm-ck"], gfx=True, Artifactory=[art("app")]),
    ]
    index = ArtifactIndex(
        ["composable-kernel_lib_generic", "app_lib_generic", "app_lib_gfx942", "app_lib_gfx1100"]
    )
    p = plan(specs(*entries), TARGETS, "8.2.0", artifacts=index)
    assert [x.kind for x in p.family("amdrocm-ck")] == [Kind.VERSIONED, Kind.NON_VERSIONED]
    assert depends(p, "amdrocm-app-host8.2") == ["amdrocm-ck8.2 (>= 8.2.0-1)"]
    assert depends(p, "amdrocm-app8.2-gfx942") == ["amdrocm-app-host8.2 (= 8.2.0-1)"]
    (note,) = [n for n in p.notes if "Gfxarch is True but no per-arch" in n.message]
    assert note.message.startswith("amdrocm-ck: Gfxarch is True but no per-arch artifacts")


def test_target_without_artifacts_gets_no_device_and_the_meta_skips_it():
    entries = [
        pkg("amdrocm-blas", gfx=True, Artifactory=[art("blas")]),
        pkg("amdrocm-app", ["amdrocm-blas"], gfx=True, Artifactory=[art("app")]),
        pkg("amdrocm-core", ["amdrocm-blas"], gfx=True, meta=True),
    ]
    index = ArtifactIndex(
        [
            "blas_lib_generic",
            "blas_lib_gfx942",
            "app_lib_generic",
            "app_lib_gfx942",
            "app_lib_gfx1100:xnack-",
        ]
    )
    p = plan(specs(*entries), TARGETS, "8.2.0", artifacts=index)
    assert [x.key for x in p.family("amdrocm-blas")] == [
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
        "amdrocm-blas8.2",
        "amdrocm-blas",
    ]
    assert depends(p, "amdrocm-blas8.2") == [
        "amdrocm-blas-host8.2 (= 8.2.0-1)",
        "amdrocm-blas8.2-gfx942 (= 8.2.0-1)",
    ]
    # A device whose dependency has no device for its arch omits it, with a warning.
    assert depends(p, "amdrocm-app8.2-gfx1100") == ["amdrocm-app-host8.2 (= 8.2.0-1)"]
    # An arch meta falls back to the host variant, with a warning.
    assert depends(p, "amdrocm-core8.2-gfx1100") == ["amdrocm-blas-host8.2 (= 8.2.0-1)"]
    messages = [n.message for n in p.notes]
    assert (
        "amdrocm-blas: no artifacts for gfx1100: no device package for that target; "
        "its meta depends on the devices that exist" in messages
    )
    assert (
        "amdrocm-app8.2-gfx1100: amdrocm-blas has no gfx1100 device package: dependency "
        "omitted" in messages
    )
    assert (
        "amdrocm-core8.2-gfx1100: amdrocm-blas has no gfx1100 device package: depending on "
        "amdrocm-blas-host8.2 instead" in messages
    )


def test_artifact_gfxarch_false_content_does_not_make_devices():
    entry = pkg(
        "amdrocm-blas",
        gfx=True,
        Artifactory=[art("blas"), {**art("provider"), "Artifact_Gfxarch": "False"}],
    )
    index = ArtifactIndex(["blas_lib_generic", "provider_lib_gfx942"])
    p = plan(specs(entry), ["gfx942"], "8.2.0", artifacts=index)
    assert [x.kind for x in p.family("amdrocm-blas")] == [Kind.VERSIONED, Kind.NON_VERSIONED]


def test_base_without_artifacts_is_not_built_and_dependents_fail():
    entries = [
        pkg("amdrocm-a", ["amdrocm-b"], Artifactory=[art("a")]),
        pkg("amdrocm-b", Artifactory=[art("b")]),
    ]
    with pytest.raises(
        PlanError, match="depends on amdrocm-b, which has no artifacts and is not built"
    ):
        plan(specs(*entries), ["gfx942"], "8.2.0", artifacts=ArtifactIndex(["a_lib_gfx942"]))


# --- Decision 12: metapackages own no files ------------------------------------------------


def test_only_host_device_and_versioned_packages_have_files(seed_plan):
    with_files = {x.kind for x in seed_plan.packages if x.has_files}
    assert with_files == {Kind.HOST, Kind.DEVICE, Kind.VERSIONED}


def test_plan_is_deterministic(seed_specs):
    assert plan(seed_specs, TARGETS, "8.2.0") == plan(seed_specs, TARGETS, "8.2.0")
