"""ROCm 10 and beyond: ``--rocm-version 10.1.0`` and ``14.0.0`` name, prefix and pin
every package as the rules say (spec packaging.md sections 6, 7 and 10), on TheRock's
own package.json (skipped without ../shared); TheRock's release built at 10.1.0 passes
``verify --install amdrocm-core10.1-gfx942``; the example release built at 10.1
installs with dpkg and rpm, registering /opt/rocm/core-10; and one stream holding
10.1 and 14.0 installs both side by side with apt and dnf, 14.0 winning
/opt/rocm/core while each keeps its /opt/rocm/core-<major>."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack import trial
from gfxpack.alternatives import priority
from gfxpack.artifacts import route, scan
from gfxpack.build import BuildOptions, build
from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.formats import DEB, RPM
from gfxpack.plan import Kind, plan
from gfxpack.repo import publish
from gfxpack.repo.stream import read_builds
from gfxpack.verify.rules import arch_of
from gfxpack.views import reachable
from tests.conftest import (
    build_example,
    dpkg_root,
    generate_example,
    load_generator,
    run,
    shared_path,
)
from tests.verify.clients import shell_root

TARGETS = ("gfx942", "gfx1100")


@pytest.fixture(scope="module")
def therock_specs():
    return load_config(shared_path("fixtures", "therock", "package.json")).packages


@pytest.mark.parametrize(("version", "xy"), [("10.1.0", "10.1"), ("14.0.0", "14.0")])
def test_names_prefix_and_pins_carry_the_whole_major(therock_specs, version, xy):
    release = plan(therock_specs, TARGETS, version)
    assert release.prefix == f"/opt/rocm/core-{xy}"
    pin = f"{version}-1"

    def depends(key, fmt):
        relations = release.by_key[key].relations(fmt)
        return relations.name, [fmt.render(d) for d in relations.depends]

    assert depends(f"amdrocm-blas-host{xy}", DEB) == (
        f"amdrocm-blas-host{xy}",
        [
            "libc6",
            f"amdrocm-runtime{xy} (>= {pin})",
            f"amdrocm-solver-host{xy} (>= {pin})",
            f"amdrocm-profiler-base{xy} (>= {pin})",
        ],
    )
    assert depends(f"amdrocm-blas{xy}-gfx942", RPM) == (
        f"amdrocm-blas{xy}-gfx942",
        [f"amdrocm-blas-host{xy} = {pin}", f"amdrocm-solver{xy}-gfx942 >= {pin}"],
    )
    name, deps = depends(f"amdrocm-core-devel{xy}-gfx942", DEB)
    assert name == f"amdrocm-core-dev{xy}-gfx942"
    assert deps[0] == f"amdrocm-core{xy}-gfx942 (= {pin})"
    assert depends("amdrocm-blas", DEB) == ("amdrocm-blas", [f"amdrocm-blas{xy} (= {pin})"])
    # Every versioned name carries the whole X.Y, never a cut major.
    whole = re.compile(rf"(?<![0-9.]){re.escape(xy)}(-|$)")
    for package in release.packages:
        if package.kind is not Kind.NON_VERSIONED:
            for fmt in (DEB, RPM):
                assert whole.search(package.name(fmt)), package.name(fmt)


@pytest.mark.slow
def test_therock_built_at_10_1_verifies_the_gfx942_install(tmp_path):
    config = shared_path("fixtures", "therock", "package.json")
    artifacts = tmp_path / "artifacts"
    load_generator().generate(artifacts, config, list(TARGETS), 0.002, seed=7)
    tree = scan(artifacts)
    release = plan(load_config(config).packages, TARGETS, "10.1.0", artifacts=tree.index)
    options = BuildOptions(formats=(DEB,), jobs=2)
    built = build(release, route(release, tree, options.epoch), tmp_path / "out", options)
    assert any(b.package == "amdrocm-core10.1-gfx942" for b in built)
    runner = CliRunner()
    repo = tmp_path / "repo"
    published = runner.invoke(cli, ["repo", "--in", str(tmp_path / "out"), "--out", str(repo)])
    assert published.exit_code == 0, published.output
    verified = runner.invoke(
        cli, ["verify", "--repo", str(repo), "--install", "amdrocm-core10.1-gfx942", "--json"]
    )
    assert verified.exit_code == 0, verified.stdout[:2000]
    (report,) = json.loads(verified.stdout)
    closure = {p["name"] for p in report["closure"]}
    assert {"amdrocm-core10.1-gfx942", "amdrocm-blas10.1-gfx942", "amdrocm-blas-host10.1"} <= (
        closure
    )
    assert {arch_of(name) for name in closure} == {None, "gfx942"}


@pytest.fixture(scope="module")
def example_at_10_1(example_artifacts, tmp_path_factory):
    return build_example(
        example_artifacts, tmp_path_factory.mktemp("ten") / "packages", 2, "10.1.0"
    )


def closure(release, fmt) -> list[str]:
    names = {p.key for p in reachable(release.plan, "amdrocm-core10.1-gfx942", fmt)}
    return [str(path) for key, path in release.files(fmt).items() if key in names]


def assert_registered(root: Path) -> None:
    assert os.readlink(root / "etc/alternatives/rocm-core") == "/opt/rocm/core-10.1"
    assert_registered_major(root)


def assert_registered_major(root: Path) -> None:
    """/opt/rocm/core-10 leads to 10.1, through a group of its own."""
    assert os.readlink(root / "etc/alternatives/rocm-core-10") == "/opt/rocm/core-10.1"
    assert os.readlink(root / "opt/rocm/core-10") == "/etc/alternatives/rocm-core-10"
    assert (root / "var/lib/dpkg/alternatives/rocm-core-10").is_file()


@pytest.mark.slow
def test_the_example_release_at_10_1_installs_with_dpkg(example_at_10_1, tmp_path):
    root = dpkg_root(tmp_path / "root")
    dpkg = ["dpkg", "--root", str(root), "--force-script-chrootless", "--force-depends"]
    run(*dpkg, "-i", *closure(example_at_10_1, DEB))
    assert_registered(root)
    assert (root / "opt/rocm/core-10.1").is_dir()


@pytest.mark.slow
def test_the_example_release_at_10_1_installs_with_rpm(example_at_10_1, tmp_path):
    root = shell_root(tmp_path / "root")
    run("rpm", "--root", str(root), "-i", "--nodeps", *closure(example_at_10_1, RPM))
    assert_registered(root)
    script = run("rpm", "--root", str(root), "-q", "--scripts", "amdrocm-core10.1-gfx942").stdout
    # A release's priority does not depend on the build's date.
    assert f'"$PREFIX" {priority("10.1.0", 0)} ' in script


@pytest.mark.slow
def test_10_1_by_rpm_beside_releases_an_older_gfxpack_registered_keeps_every_major(
    example_at_10_1, tmp_path
):
    """An older gfxpack registered 10.0 and 14.0 with /opt/rocm/core-<major> a slave of
    rocm-core; update-alternatives makes no slave a master, so 10.1's %post first
    moves those slaves into groups of their own: 14.0 wins /opt/rocm/core and keeps
    /opt/rocm/core-14, 10.1 wins /opt/rocm/core-10 over 10.0."""
    root = shell_root(tmp_path / "root")
    ua = ("update-alternatives", "--root", str(root))
    for version in ("10.0.0", "14.0.0"):
        prefix = f"/opt/rocm/core-{version[:-2]}"
        major = version.split(".")[0]
        (root / prefix.lstrip("/") / "lib").mkdir(parents=True)
        rank = str(priority(version, 0))
        slave = ("--slave", f"/opt/rocm/core-{major}", f"rocm-core-{major}", prefix)
        run(*ua, "--install", "/opt/rocm/core", "rocm-core", prefix, rank, *slave)
    run("rpm", "--root", str(root), "-i", "--nodeps", *closure(example_at_10_1, RPM))
    assert os.readlink(root / "etc/alternatives/rocm-core") == "/opt/rocm/core-14.0"
    assert os.readlink(root / "etc/alternatives/rocm-core-14") == "/opt/rocm/core-14.0"
    assert_registered_major(root)
    assert "rocm-core-" not in run(*ua, "--query", "rocm-core").stdout
    assert "/opt/rocm/core-10.0" in run(*ua, "--query", "rocm-core-10").stdout


@pytest.fixture(scope="module")
def stream_10_and_14(tmp_path_factory) -> Path:
    """One stream repository holding the example built (small) at 10.1.0, then 14.0.0."""
    base = tmp_path_factory.mktemp("stream")
    artifacts = generate_example(base / "artifacts", 0.02)
    repo = base / "repo"
    for day, version in enumerate(("10.1.0", "14.0.0")):
        built = build_example(artifacts, base / version, version=version)
        publish(built.out, repo, "stable", 1_700_000_000 + day * 86_400)
    return repo


@pytest.mark.slow
@pytest.mark.parametrize("client", ["apt", "dnf"])
def test_a_stream_installs_10_1_and_14_0_side_by_side_and_14_wins(stream_10_and_14, client):
    if shutil.which("apt-get" if client == "apt" else client) is None:
        pytest.skip(f"needs {client}")
    assert [b.version for b in read_builds(stream_10_and_14)] == ["10.1.0-1", "14.0.0-1"]
    names = ["amdrocm-core10.1-gfx942", "amdrocm-core14.0-gfx942"]
    report = trial.try_install(stream_10_and_14, names, client)
    assert report.ok, report.failure()
    assert report.alternatives["rocm-core"] == "/opt/rocm/core-14.0"
    assert report.alternatives["rocm-core-14"] == "/opt/rocm/core-14.0"
    # 10.1, still installed, keeps its own major's link.
    assert report.alternatives["rocm-core-10"] == "/opt/rocm/core-10.1"
    assert report.alternatives["rocm-lib"] == "/opt/rocm/core-14.0/lib"
