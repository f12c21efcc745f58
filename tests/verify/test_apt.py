"""The system's apt-get and dpkg on the published example repository, served over HTTP."""

from __future__ import annotations

import subprocess

import pytest

from gfxpack.formats import DEB
from gfxpack.repo import publish
from gfxpack.verify import verify
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import bundled
from gfxpack.views import reachable
from tests.conftest import dpkg_root, run
from tests.verify.helpers import Apt, serve

pytestmark = pytest.mark.slow


def test_apt_plans_the_gfx942_set_and_agrees_with_libsolv(example_repo, example_release, tmp_path):
    with serve(example_repo / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb [trusted=yes] {url} stable main\n", bundled(DEB))
        apt.run("update")
        for target in ("amdrocm-core8.2-gfx942", "amdrocm-core"):
            planned = apt.simulate(target)
            expected = {p.deb.name for p in reachable(example_release.plan, target)}
            assert set(planned) == expected, target
            assert {action for action, _, _ in planned.values()} == {"install"}
            (report,) = verify(example_repo, [target], DEB)
            assert {s.name for s in report.resolution.steps} == set(planned), target
        assert {arch_of(n) for n in apt.simulate("amdrocm-core8.2-gfx942")} == {None, "gfx942"}


def test_apt_downloads_the_set_and_dpkg_installs_it(example_repo, example_release, tmp_path):
    with serve(example_repo / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb [trusted=yes] {url} stable main\n", bundled(DEB))
        apt.run("update")
        debs = apt.download("amdrocm-core8.2-gfx942")
    expected = {p.deb.name for p in reachable(example_release.plan, "amdrocm-core8.2-gfx942")}
    assert {d.name.split("_")[0] for d in debs} == expected
    # Byte for byte what was published.
    for deb in debs:
        assert deb.read_bytes() == (example_repo / "apt/pool/main" / deb.name).read_bytes()
    # The empty root has none of the system packages (libc6, python3, ...) the set
    # depends on: --force-depends says so. Maintainer scripts run chrootless.
    root = dpkg_root(tmp_path / "root")
    run(
        "dpkg",
        "--root",
        str(root),
        "--force-depends",
        "--force-script-chrootless",
        "-i",
        *map(str, debs),
    )
    status = run("dpkg-query", "--root", str(root), "-W", "-f=${Package} ${db:Status-Abbrev}\\n")
    installed = dict(line.split(" ", 1) for line in status.stdout.splitlines())
    assert set(installed) == expected
    assert all(state.startswith("ii") for state in installed.values())
    assert (root / "opt/rocm/core-8.2/.kpack/blas_lib_gfx942.kpack").is_file()
    assert not (root / "opt/rocm/core-8.2/.kpack/blas_lib_gfx950.kpack").exists()


def test_a_signed_repository_is_verified_by_apt(example_release, tmp_path, gnupg):
    home, fingerprint = gnupg
    root = tmp_path / "repo"
    # apt's side only: the example's RPMs are unsigned, which a signed repository takes
    # only when told (its setup then says gpgcheck=0).
    result = publish(example_release.out, root, "stable", 1_700_000_000, fingerprint, home,
                     allow_unsigned_packages=True)  # fmt: skip
    assert result.formats[0].signed
    dist = root / "apt/dists/stable"
    keyring = tmp_path / "archive-keyring.gpg"
    keyring.write_bytes(
        subprocess.run(
            ["gpg", "--homedir", home, "--export", fingerprint], capture_output=True, check=True
        ).stdout
    )
    run("gpgv", "--keyring", str(keyring), str(dist / "InRelease"))
    run("gpgv", "--keyring", str(keyring), str(dist / "Release.gpg"), str(dist / "Release"))
    with serve(root / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb [signed-by={keyring}] {url} stable main\n", bundled(DEB))
        apt.run("update")
        assert "amdrocm-core8.2-gfx942" in apt.simulate("amdrocm-core8.2-gfx942")
        # A Release changed after signing is refused (by a fresh apt, with nothing cached).
        for name in ("InRelease", "Release"):
            signed = dist / name
            signed.write_text(signed.read_text().replace("Label: gfxpack", "Label: tampered"))
        fresh = Apt(
            tmp_path / "apt2", f"deb [signed-by={keyring}] {url} stable main\n", bundled(DEB)
        )
        refused = fresh.run("update", check=False)
    assert refused.returncode != 0
    assert "BADSIG" in refused.stdout + refused.stderr


def test_an_unsigned_repository_needs_trusted_yes(example_repo, tmp_path):
    with serve(example_repo / "apt") as url:
        apt = Apt(tmp_path / "apt", f"deb {url} stable main\n", bundled(DEB))
        refused = apt.run("update", check=False)
    assert refused.returncode != 0
    assert "is not signed" in refused.stderr
