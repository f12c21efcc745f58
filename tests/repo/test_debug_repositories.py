"""Debug-symbol packages are published where the repository's standard setup does not
resolve them, as Debian and Fedora do: apt's ``main/debug`` component and a separate
rpm-md repository at ``rpm/debug`` (its packages in the one pool). apt-get and dnf,
set up the standard way (``main``, ``baseurl=.../rpm``), do not see them; pointed at
the debug component or repository, they install X-dbgsym / X-debuginfo with X."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import createrepo_c as cr
import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB
from gfxpack.repo import RepositoryNames, publish
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.verify.system import bundled
from tests.scenarios.test_debug_symbols import compile_split, config, debug_tree
from tests.small_tree import build
from tests.verify.clients import Dnf, repo_section, shell_root, stub_system_repo
from tests.verify.helpers import Apt, serve

EPOCH = 1_700_000_000
HOST = "amdrocm-hello8.2"


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not all(shutil.which(t) for t in ("gcc", "objcopy", "readelf", "rpm")):
        pytest.skip("needs gcc, binutils and rpm (make system-tools)")
    tmp_path = tmp_path_factory.mktemp("debug-repo")
    artifacts = debug_tree(tmp_path / "artifacts", compile_split(tmp_path / "elf"))
    result = build(tmp_path, artifacts, config=config(tmp_path / "package.json"))
    assert result.exit_code == 0, result.output
    publish(tmp_path / "out", tmp_path / "repo", "stable", EPOCH)
    return tmp_path / "repo"


def packages_in(index: Path) -> list[str]:
    return sorted(s["Package"] for s in parse_stanzas(gzip.decompress(index.read_bytes()).decode()))


def test_apt_debug_packages_are_in_main_debug_only(repository):
    dist = repository / "apt/dists/stable"
    assert packages_in(dist / "main/binary-amd64/Packages.gz") == ["amdrocm-hello", HOST]
    assert packages_in(dist / "main/debug/binary-amd64/Packages.gz") == [f"{HOST}-dbgsym"]
    release = parse_stanzas((dist / "Release").read_text())[0]
    assert release["Components"] == "main main/debug"
    assert "main/debug/binary-amd64/Packages.gz" in release["SHA256"]


def rpm_names(repodata: Path) -> list[str]:
    """The packages a repodata's primary lists, read by createrepo_c."""
    metadata = cr.Metadata()
    metadata.locate_and_load_xml(str(repodata.parent))
    return sorted(metadata.get(key).name for key in metadata.keys())  # noqa: SIM118 (no iterator)


def test_rpm_debuginfo_packages_are_in_their_own_repository(repository):
    assert rpm_names(repository / "rpm/repodata") == ["amdrocm-hello", HOST]
    assert rpm_names(repository / "rpm/debug/repodata") == [f"{HOST}-debuginfo"]
    # One pool: the debuginfo repository locates its package there.
    primary = next((repository / "rpm/debug/repodata").glob("*-primary.xml.gz"))
    assert (
        f'href="../Packages/{HOST}-debuginfo-8.2.0-1.x86_64.rpm"'
        in gzip.decompress(primary.read_bytes()).decode()
    )


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get")
def test_apt_sees_the_dbgsym_package_only_through_main_debug(repository, tmp_path):
    with serve(repository) as url:
        standard = Apt(
            tmp_path / "main", f"deb [trusted=yes] {url}/apt stable main\n", bundled(DEB)
        )
        standard.run("update")
        refused = standard.run("install", "--simulate", "-y", f"{HOST}-dbgsym", check=False)
        assert refused.returncode != 0
        assert f"{HOST}-dbgsym" in refused.stdout + refused.stderr
        both = (
            f"deb [trusted=yes] {url}/apt stable main\n"
            f"deb [trusted=yes] {url}/apt stable main/debug\n"
        )
        debug = Apt(tmp_path / "debug", both, bundled(DEB))
        debug.run("update")
        planned = debug.simulate(f"{HOST}-dbgsym")
    assert planned.keys() == {HOST, f"{HOST}-dbgsym"}


@pytest.mark.skipif(shutil.which("dnf") is None, reason="needs dnf")
def test_dnf_installs_the_debuginfo_package_only_from_the_debug_repository(repository, tmp_path):
    # The library's package runs ldconfig: the system stand-ins provide it, and the
    # root has the real one to run.
    system = repo_section("system", stub_system_repo(tmp_path).as_uri(), None)
    root = shell_root(tmp_path / "root")
    with serve(repository) as url:
        standard = Dnf(tmp_path / "main", root, system + repo_section("gfx", f"{url}/rpm", None))
        refused = standard.run("install", f"{HOST}-debuginfo", check=False)
        assert refused.returncode != 0
        assert f"{HOST}-debuginfo" in refused.stdout + refused.stderr
        repos = system + repo_section("gfx", f"{url}/rpm", None)
        repos += repo_section("gfx-debuginfo", f"{url}/rpm/debug", None)
        debug = Dnf(tmp_path / "debug", root, repos)
        debug.run("install", f"{HOST}-debuginfo")
        installed = debug.installed()
    assert installed[HOST] == installed[f"{HOST}-debuginfo"] == "8.2.0-1"


def test_older_debuginfo_repodata_goes_with_its_generation(repository, tmp_path):
    """A second build published with one generation kept: the debuginfo repository's
    repodata is its repomd.xml's files only, and names the newer package."""
    out = tmp_path / "repo"
    shutil.copytree(repository, out)
    artifacts = debug_tree(tmp_path / "artifacts", compile_split(tmp_path / "elf"))
    result = build(tmp_path, artifacts, "--release", "2", config=config(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    publish(tmp_path / "out", out, "stable", EPOCH + 60, names=RepositoryNames(keep_generations=1))
    repodata = out / "rpm/debug/repodata"
    named = {Path(r.location_href).name for r in cr.Repomd(str(repodata / "repomd.xml")).records}
    assert {p.name for p in repodata.iterdir()} == named | {"repomd.xml"}
    primary = next(p for p in repodata.glob("*-primary.xml.gz"))
    text = gzip.decompress(primary.read_bytes()).decode()
    assert 'rel="2"' in text and 'rel="1"' in text  # both builds stay published
    assert rpm_names(out / "rpm/repodata") == ["amdrocm-hello", "amdrocm-hello", HOST, HOST]


def test_repo_says_where_the_debug_packages_are(repository, tmp_path):
    out = tmp_path / "repo"
    result = CliRunner().invoke(
        cli, ["repo", "--in", str(repository.parent / "out"), "--out", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    assert f"deb: 3 new, 3 in {out / 'apt'} (suite stable, debug symbols in main/debug)" in (
        result.output
    )
    assert f"rpm: 3 new, 3 in {out / 'rpm'} (debug symbols in debug)" in result.output
