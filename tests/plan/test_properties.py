"""Property tests over random package sets, target lists and artifact trees."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gfxpack.config import ArtifactSource, ArtifactSubdir, PackageSpec, Relations
from gfxpack.formats import FORMATS
from gfxpack.plan import ArtifactIndex, Kind, plan
from gfxpack.relations import parse_deb, parse_rpm

pytestmark = pytest.mark.slow  # make check skips it: hypothesis property tests

ARCH_POOL = [
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1200",
    "gfx1201",
]
SYSTEM = ["libc6", "libstdc++6|libstdc++8", "python3 (>= 3.6.8)"]


@st.composite
def releases(draw):
    """(specs, targets, artifact index or None, per-base arches with content)."""
    targets = draw(st.lists(st.sampled_from(ARCH_POOL), min_size=1, max_size=6, unique=True))
    count = draw(st.integers(1, 14))
    with_index = draw(st.booleans())
    specs, dirs, content = [], [], {}
    for i in range(count):
        devel = draw(st.booleans()) and i > 0
        name = f"amdrocm-p{i}" + ("-devel" if devel else "")
        # Dependencies point at earlier bases only, so the graph has no cycle.
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=4)) if i else []
        meta = bool(deps) and draw(st.booleans())
        gfx = draw(st.booleans())
        system = [] if meta else draw(st.lists(st.sampled_from(SYSTEM), unique=True, max_size=2))
        dep_names = [specs[j].name for j in deps]
        arches = ()
        if not meta:
            arches = tuple(draw(st.lists(st.sampled_from(targets), unique=True)))
            dirs.append(f"a{i}_lib_generic")
            dirs += [f"a{i}_lib_{arch}" for arch in arches]
        content[name] = arches
        specs.append(
            PackageSpec(
                name=name,
                index=i,
                gfxarch=gfx,
                metapackage=meta,
                deb=Relations(depends=tuple(parse_deb(d) for d in system + dep_names)),
                rpm=Relations(depends=tuple(parse_rpm(d) for d in dep_names)),
                artifactory=()
                if meta
                else (ArtifactSource(f"a{i}", (ArtifactSubdir("x", ("lib",)),)),),
            )
        )
    # A tree holds per-arch artifacts of every requested target (a target it has none of
    # is refused); an artifact of no package provides them where no base has that arch.
    dirs += [f"other_lib_{arch}" for arch in targets]
    return specs, targets, ArtifactIndex(dirs) if with_index else None, content


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(releases())
def test_no_cross_arch_edge(release):
    specs, targets, index, _ = release
    result = plan(specs, targets, "8.2.0", artifacts=index)
    crossing = [
        (package.key, req.target)
        for package in result.packages
        if package.kind in (Kind.DEVICE, Kind.ARCH_META)
        for fmt in FORMATS
        for req in package.relations(fmt).edges()
        if result.by_key[req.target].arch not in (None, package.arch)
    ]
    assert crossing == []


@SETTINGS
@given(releases())
def test_every_amdrocm_edge_resolves_inside_the_plan(release):
    specs, targets, index, _ = release
    result = plan(specs, targets, "8.2.0", artifacts=index)
    assert result.packages  # every buildable base yields at least two
    for package in result.packages:
        for fmt in FORMATS:
            for _, deps in package.relations(fmt).dependency_lists():
                for req in (r for dep in deps for r in dep):
                    if req.name.startswith("amdrocm"):
                        assert req.target in result.by_key
                        assert result.by_key[req.target].name(fmt) == req.name
                    else:
                        assert req.target is None


@SETTINGS
@given(releases())
def test_package_counts_per_type(release):
    specs, targets, index, content = release
    result = plan(specs, targets, "8.2.0", artifacts=index)
    n = len(targets)
    assert {p.base for p in result.packages} == {spec.name for spec in specs}
    for spec in specs:
        family = result.family(spec.name)
        kinds = [p.kind for p in family]
        gfxarch = (
            spec.gfxarch
            and (spec.metapackage or not spec.is_devel)  # a devel meta is like any meta
            and (index is None or spec.metapackage or bool(content[spec.name]))
        )
        if not gfxarch:
            assert len(family) == 2
        elif spec.metapackage:
            assert len(family) == n + 2
            assert kinds.count(Kind.ARCH_META) == n
        else:
            devices = n if index is None else len(content[spec.name])
            assert len(family) == devices + 3
            assert kinds.count(Kind.DEVICE) == devices


@SETTINGS
@given(releases())
def test_devices_depend_on_their_own_host_exactly(release):
    specs, targets, index, _ = release
    result = plan(specs, targets, "8.2.0", artifacts=index)
    devices = [p for p in result.packages if p.kind is Kind.DEVICE]
    pins = []
    for package in devices:
        (first,) = package.rpm.depends[0]
        host = result.by_key[first.target]
        pins.append((host.kind, host.base, first.op))
    assert pins == [(Kind.HOST, package.base, "=") for package in devices]
