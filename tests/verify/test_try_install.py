"""gfxpack try-install: the example release installed by apt-get, dnf and zypper into
throwaway roots, with stand-ins for the system packages and the scripts run; what
was installed reported, and any file of another GPU arch a failure."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack import trial
from gfxpack.cli import cli
from gfxpack.cli.try_install_cmd import CLIENT_NAMES, DEFAULT_TIMEOUT
from gfxpack.formats import DEB, RPM
from gfxpack.verify.system import read_system
from gfxpack.views import reachable
from tests.doc_commands import doc_block, gfxpack_shell

TARGET = "amdrocm-core8.2-gfx942"
PREFIX = "/opt/rocm/core-8.2"


def try_install(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["try-install", *args], env=env)


def fails(*args: str, env: dict[str, str] | None = None) -> str:
    """The one error line of a try-install that fails before installing anything."""
    result = try_install(*args, env=env)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def files_naming(root: Path, *words: str) -> set[str]:
    """'/path' of every regular file the packages put under ``root``/opt whose path holds
    one of ``words``."""
    found = set()
    for directory, _, names in os.walk(root / "opt"):
        for name in names:
            path = Path(directory) / name
            relative = "/" + path.relative_to(root).as_posix()
            if path.is_file() and not path.is_symlink() and any(w in relative for w in words):
                found.add(relative)
    return found


def leftover_roots() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("gfxpack-try-install-*"))


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_each_client_installs_the_gfx942_closure_and_runs_its_scripts(
    client, example_repo, example_release, tmp_path
):
    fmt = DEB if client == "apt" else RPM
    root = tmp_path / "root"
    result = try_install(
        "--repo", str(example_repo), "--client", client, "--root", str(root), "--json", TARGET
    )
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    expected = {p.relations(fmt).name for p in reachable(example_release.plan, TARGET, fmt)}
    assert {p["name"] for p in report["packages"]} == expected
    assert report["archs"] == ["gfx942"] and report["ok"] is True
    assert report["sandboxed"] is True and report["scripts"] is True
    # The client's cache and logs were in its own directory beside the root, not in it.
    scratch = {"hawkey.log", "dnf.log", "dnf.librepo.log", "zypper.log", "solv", "raw"}
    assert [p for p in root.rglob("*") if p.name in scratch or "try-install-client" in p.name] == []
    assert report["other_arch"] == {"packages": [], "files": []}
    # Nothing of another arch is in the root, looked at without the report.
    assert files_naming(root, "gfx1100", "gfx950") == set()
    assert files_naming(root, "blas_lib_gfx942.kpack")
    # Sizes are the bytes of each package's files as installed.
    sizes = {p["name"]: p["size"] for p in report["packages"]}
    blas = f"{PREFIX}/.kpack/blas_lib_gfx942.kpack"
    assert sizes["amdrocm-blas8.2-gfx942"] >= (root / blas.lstrip("/")).stat().st_size > 0
    assert sizes[TARGET] == 0  # a metapackage installs no file
    assert report["total_size"] == sum(sizes.values()) > 0
    assert all(p["size"] > 0 for p in report["packages"] if p["files"])
    # The stand-ins are the bundled system list, installed first and reported apart.
    _, system = read_system(None, fmt)
    stand_ins = {s["name"] for s in report["stand_ins"]}
    assert stand_ins == {p.name for p in system} and not stand_ins & set(sizes)
    # The scripts ran: update-alternatives registered the release's prefix.
    assert report["alternatives"]["rocm-core"] == PREFIX
    assert os.readlink(root / "opt/rocm/core") == "/etc/alternatives/rocm-core"
    assert os.readlink(root / "etc/alternatives/rocm-core") == PREFIX
    if fmt is RPM:
        assert (root / "etc/ld.so.cache").is_file()  # the %post ldconfig ran, chrooted
    assert report["root"] == str(root.resolve()) and report["kept"] and root.is_dir()


def test_the_command_offers_the_librarys_clients():
    assert tuple(trial.CLIENTS) == CLIENT_NAMES


def test_the_commands_default_timeout_is_the_librarys():
    assert DEFAULT_TIMEOUT == trial.DEFAULT_TIMEOUT == 1800


@pytest.mark.slow
def test_a_file_of_another_arch_is_reported_with_its_package_and_fails(example_repo, tmp_path):
    root = tmp_path / "root"
    result = try_install(
        *("--repo", str(example_repo), "--client", "apt", "--root", str(root)),
        *("--arch", "gfx942", TARGET, "amdrocm-blas8.2-gfx1100"),
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: installing {TARGET} amdrocm-blas8.2-gfx1100 brought 3 packages and 19 files "
        "of another arch than gfx942 (gfx1100)"
    ]
    text = result.stdout
    assert (
        "of another arch than gfx942:\n"
        "  amdrocm-blas8.2-gfx1100 (a package of another arch)\n"
        f"    {PREFIX}/.kpack/blas_lib_gfx1100.kpack (gfx1100)\n"
    ) in text
    # Every gfx1100 file in the root is listed, and nothing else.
    listed = {line.split()[0] for line in text.splitlines() if line.endswith(" (gfx1100)")}
    assert listed == files_naming(root, "gfx1100") and len(listed) == 19


@pytest.mark.slow
def test_a_package_that_pulls_every_arch_fails_without_naming_an_arch(leaky_repo, tmp_path):
    """amdrocm-suite8.2-gfx942 depends on a meta of no arch that pulls the full
    amdrocm-core: dnf installs every arch, which gfx942 (its suffix) does not allow."""
    before = leftover_roots()
    result = try_install("--repo", str(leaky_repo), "--json", "amdrocm-suite8.2-gfx942")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["client"] == "dnf" and report["archs"] == ["gfx942"]
    found = report["other_arch"]["files"]
    assert {f["arch"] for f in found} == {"gfx950", "gfx1100"}
    assert {
        "path": f"{PREFIX}/.kpack/blas_lib_gfx950.kpack",
        "package": "amdrocm-blas8.2-gfx950",
        "arch": "gfx950",
    } in found
    assert "amdrocm-core8.2-gfx1100" in report["other_arch"]["packages"]
    assert result.stderr.strip().endswith("of another arch than gfx942 (gfx950, gfx1100)")
    # The temporary root is gone (and what killed runs left before, if anything).
    assert not report["kept"] and not Path(report["root"]).exists()
    assert leftover_roots() <= before


@pytest.mark.slow
def test_keep_keeps_the_temporary_root_and_a_rerun_replaces_it(example_repo):
    before = leftover_roots()
    kept = try_install("--repo", str(example_repo), "--keep", TARGET)
    assert kept.exit_code == 0, kept.output + kept.stderr
    (root,) = leftover_roots() - before
    try:
        assert kept.stdout.startswith(f"dnf installed 21 packages into {root}:\n")
        assert (root / "opt/rocm/core-8.2/.kpack/blas_lib_gfx942.kpack").is_file()
        # A try-install root given as --root is replaced as a whole.
        (root / "leftover").write_text("from the first run")
        again = try_install("--repo", str(example_repo), "--root", str(root), TARGET)
        assert again.exit_code == 0, again.output + again.stderr
        assert not (root / "leftover").exists() and (root / "opt/rocm/core").is_symlink()
    finally:
        shutil.rmtree(root)


def test_a_missing_package_is_one_error_before_anything_is_made(example_repo, tmp_path):
    root = tmp_path / "root"
    message = fails("--repo", str(example_repo), "--root", str(root), "amdrocm-core8.2-gfx94")
    assert message.startswith("error: amdrocm-core8.2-gfx94: no package of that name in ")
    assert "did you mean amdrocm-core8.2-gfx942" in message
    assert not root.exists()


def test_a_missing_client_says_how_to_install_it(example_repo, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").symlink_to("/usr/bin/apt-get")
    message = fails("--repo", str(example_repo), TARGET, env={"PATH": str(bin_dir)})
    assert message == "error: dnf not found: install it with apt-get install dnf"


@pytest.mark.parametrize("kind", ["directory with files", "symlink"])
def test_a_root_try_install_did_not_make_is_left_alone(kind, example_repo, tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_text("keep me")
    before = (precious / "data").stat()
    root = precious
    if kind == "symlink":
        root = tmp_path / "link"
        root.symlink_to(precious)
    message = fails("--repo", str(example_repo), "--root", str(root), TARGET)
    assert message.startswith(f"error: {root}: ")
    assert ("is a symlink" if kind == "symlink" else "holds files try-install did not") in message
    after = (precious / "data").stat()
    assert (after.st_ino, after.st_nlink, (precious / "data").read_text()) == (
        before.st_ino,
        1,
        "keep me",
    )
    assert sorted(p.name for p in precious.iterdir()) == ["data"]


def test_a_system_list_that_names_a_path_is_refused(example_repo, tmp_path):
    system = tmp_path / "system.txt"
    system.write_text("Package: ../../planted\nVersion: 1.0-1\nArchitecture: amd64\n")
    before = leftover_roots()
    message = fails(
        *("--repo", str(example_repo), "--client", "apt", "--system", str(system), TARGET)
    )
    assert message == (
        f"error: {system}: package '../../planted': name '../../planted' is not one dpkg "
        "accepts, so no stand-in can be made for it"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["system.txt"]
    assert not (tmp_path.parent / "planted").exists()
    assert leftover_roots() <= before


def test_an_unknown_arch_is_refused_with_a_suggestion(example_repo):
    message = fails("--repo", str(example_repo), "--arch", "gfx9420", TARGET)
    assert message == (
        "error: --arch: 'gfx9420' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"
    )


def test_it_needs_root(example_repo, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(trial.TrialError, match=r"^try-install needs root: dnf installs as root"):
        trial.try_install(example_repo, [TARGET])


@pytest.mark.slow
def test_the_readme_commands_work_as_written(example_repo, tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build/repo").symlink_to(example_repo)
    result = gfxpack_shell(
        tmp_path,
        doc_block("guides/release-engineer.md", "### Trying an install: `gfxpack try-install`"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first, _, json_text = result.stdout.partition("\n{")
    assert first.startswith("dnf installed 21 packages into ")
    report = json.loads("{" + json_text)
    assert report["client"] == "apt" and report["ok"] and len(report["packages"]) == 21
    assert (tmp_path / "build/root-deb/opt/rocm/core").is_symlink()
