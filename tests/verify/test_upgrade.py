"""Releases over time in one repository: 8.2.1 upgrades 8.2.0 in place, and 8.2 and 8.3
install side by side, shown by apt-get, dpkg, rpm and libsolv."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.repo import publish
from gfxpack.verify import verify
from gfxpack.verify.system import bundled
from gfxpack.views import reachable
from tests.conftest import build_example, dpkg_root, run
from tests.verify.helpers import Apt, rpm_files, serve

pytestmark = pytest.mark.slow
EPOCH = 1_700_000_000
GFX942 = {"8.2": "amdrocm-core8.2-gfx942", "8.3": "amdrocm-core8.3-gfx942"}


@pytest.fixture(scope="module")
def releases(example_artifacts, tmp_path_factory):
    """The example built as 8.2.0, 8.2.1 and 8.3.0, published one after another."""
    base = tmp_path_factory.mktemp("releases")
    built = {
        v: build_example(example_artifacts, base / v, version=v)
        for v in ("8.2.0", "8.2.1", "8.3.0")
    }
    repo = base / "repo"
    results = {v: publish(built[v].out, repo, "stable", EPOCH) for v in built}
    return built, repo, results


def gfx942_set(release, fmt=DEB):
    """Package names the release's amdrocm-coreX.Y-gfx942 reaches, by the plan."""
    xy = ".".join(release.plan.rocm_version.split(".")[:2])
    return {p.relations(fmt).name for p in reachable(release.plan, GFX942[xy], fmt)}


def files_of(release, fmt, names):
    return [
        f
        for key, f in release.files(fmt).items()
        if release.plan.by_key[key].relations(fmt).name in names
    ]


def test_publishing_is_incremental(releases, tmp_path):
    built, repo, results = releases
    per_release = len(built["8.2.0"].files("deb"))
    assert [len(results[v].formats[0].added) for v in built] == [per_release] * 3
    deb, rpm = results["8.3.0"].formats
    assert deb.packages == rpm.packages == 3 * per_release
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    for version in ("8.2.0-1", "8.2.1-1"):
        assert f"Package: amdrocm-core8.2-gfx942\nVersion: {version}\n" in packages
    assert "Package: amdrocm-core8.3-gfx942\nVersion: 8.3.0-1\n" in packages
    # Publishing a build again adds nothing and changes no index.
    before = {p: p.read_bytes() for p in (repo / "apt/dists").rglob("*") if p.is_file()}
    again = publish(built["8.2.1"].out, repo, "stable", EPOCH)
    assert [r.added for r in again.formats] == [(), ()]
    assert {p: p.read_bytes() for p in (repo / "apt/dists").rglob("*") if p.is_file()} == before


@pytest.fixture(scope="module")
def deb_root_with_8_2_0(releases, tmp_path_factory):
    """A dpkg root with the 8.2.0 gfx942 set (system packages absent: --force-depends)."""
    built, _, _ = releases
    root = dpkg_root(tmp_path_factory.mktemp("deb") / "root")
    old = built["8.2.0"]
    dpkg(root, "-i", *files_of(old, DEB, gfx942_set(old)))
    return root


def dpkg(root: Path, *args) -> None:
    run(
        "dpkg", "--root", str(root), "--force-depends", "--force-script-chrootless", *map(str, args)
    )


def installed_debs(root: Path) -> dict[str, str]:
    listing = run("dpkg-query", "--root", str(root), "-W", "-f=${Package} ${Version}\\n")
    return dict(line.split(" ") for line in listing.stdout.splitlines())


def system_with(root: Path, tmp_path: Path) -> Path:
    """The bundled system packages plus what dpkg installed under ``root``."""
    status = tmp_path / "status"
    status.write_text(bundled(DEB) + "\n" + (root / "var/lib/dpkg/status").read_text())
    return status


def test_apt_and_libsolv_upgrade_8_2_0_in_place(releases, deb_root_with_8_2_0, tmp_path):
    built, repo, _ = releases
    root = copy_root(deb_root_with_8_2_0, tmp_path)
    members = gfx942_set(built["8.2.1"])
    assert set(installed_debs(root)) == members
    status = system_with(root, tmp_path)
    with serve(repo / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb [trusted=yes] {url} stable main\n", status.read_text())
        apt.run("update")
        planned = apt.simulate(GFX942["8.2"])
        debs = apt.download(GFX942["8.2"])
    assert planned == {name: ("upgrade", "8.2.0-1", "8.2.1-1") for name in members}
    (report,) = verify(repo, [GFX942["8.2"]], DEB, status)
    assert report.ok, report.violations
    assert {(s.action, s.name, s.old_version, s.version) for s in report.resolution.steps} == {
        ("upgrade", name, "8.2.0-1", "8.2.1-1") for name in members
    }
    dpkg(root, "-i", *debs)
    assert installed_debs(root) == dict.fromkeys(members, "8.2.1-1")


def test_apt_and_libsolv_install_8_3_beside_8_2(releases, deb_root_with_8_2_0, tmp_path):
    built, repo, _ = releases
    root = copy_root(deb_root_with_8_2_0, tmp_path)
    new = gfx942_set(built["8.3.0"])
    status = system_with(root, tmp_path)
    with serve(repo / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb [trusted=yes] {url} stable main\n", status.read_text())
        apt.run("update")
        planned = apt.simulate(GFX942["8.3"])
    assert planned == {name: ("install", None, "8.3.0-1") for name in new}
    (report,) = verify(repo, [GFX942["8.3"]], DEB, status)
    assert report.ok, report.violations
    assert {(s.action, s.name) for s in report.resolution.steps} == {
        ("install", name) for name in new
    }
    # dpkg refuses to overwrite another package's file: installing both proves none is shared.
    dpkg(root, "-i", *files_of(built["8.3.0"], DEB, new))
    versions = installed_debs(root)
    assert versions[GFX942["8.2"]] == "8.2.0-1" and versions[GFX942["8.3"]] == "8.3.0-1"
    for xy in ("8.2", "8.3"):
        assert (root / f"opt/rocm/core-{xy}/.kpack/blas_lib_gfx942.kpack").is_file()


def test_both_releases_together_share_no_file(releases):
    _, repo, _ = releases
    reports = verify(repo, [GFX942["8.2"], GFX942["8.3"]])
    assert [report.fmt for report in reports] == list(FORMATS)
    for report in reports:
        assert report.ok, report.violations
        assert report.checked["file-conflict"] > 0
        names = {s.name for s in report.resolution.steps}
        assert GFX942["8.2"] in names and GFX942["8.3"] in names


def copy_root(root: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(root, copy, symlinks=True)
    return copy


# --- rpm ----------------------------------------------------------------------------------


def rpm_root_with(release, tmp_path: Path) -> Path:
    root = tmp_path / "rpmroot"
    run("rpm", "--root", str(root), "--initdb")
    rpm(root, "-i", *files_of(release, RPM, gfx942_set(release, RPM)))
    return root


def rpm(root: Path, *args) -> None:
    # The root has no system packages (numactl-libs, python3): --nodeps.
    run("rpm", "--root", str(root), "--nodeps", "--noscripts", *map(str, args))


def rpm_system(root: Path, tmp_path: Path) -> Path:
    """The bundled system plus the root's rpm database, as `rpm -qa` describes it."""
    query = run(
        "rpm",
        "--root",
        str(root),
        "-qa",
        "--qf",
        "Package: %{NAME}\\nVersion: %{EVR}\\nArchitecture: %{ARCH}\\n"
        "Provides: [%{PROVIDENEVRS}, ]\\nDepends: [%{REQUIRENEVRS}, ]\\n\\n",
    )
    system = tmp_path / "rpm-system"
    system.write_text(bundled(RPM) + "\n" + query.stdout)
    return system


def test_libsolv_and_rpm_upgrade_8_2_0_in_place(releases, tmp_path):
    built, repo, _ = releases
    root = rpm_root_with(built["8.2.0"], tmp_path)
    members = gfx942_set(built["8.2.1"], RPM)
    system = rpm_system(root, tmp_path)
    (report,) = verify(repo, [GFX942["8.2"]], RPM, system)
    assert report.ok, report.violations
    assert {(s.action, s.name, s.old_version, s.version) for s in report.resolution.steps} == {
        ("upgrade", name, "8.2.0-1", "8.2.1-1") for name in members
    }
    files = rpm_files(repo, report.resolution.steps)
    rpm(root, "-U", *files)
    listing = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\\n")
    assert dict(line.split() for line in listing.stdout.splitlines()) == dict.fromkeys(
        members, "8.2.1-1"
    )


def test_rpm_installs_8_3_beside_8_2(releases, tmp_path):
    built, repo, _ = releases
    root = rpm_root_with(built["8.2.0"], tmp_path)
    system = rpm_system(root, tmp_path)
    (report,) = verify(repo, [GFX942["8.3"]], RPM, system)
    assert report.ok, report.violations
    assert {s.action for s in report.resolution.steps} == {"install"}
    # rpm checks file conflicts itself: this fails if 8.3 shared a file with 8.2.
    rpm(root, "-i", *files_of(built["8.3.0"], RPM, gfx942_set(built["8.3.0"], RPM)))
    names = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout.split()
    assert GFX942["8.2"] in names and GFX942["8.3"] in names
