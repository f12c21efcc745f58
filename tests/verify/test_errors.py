"""Bad input to gfxpack repo and gfxpack verify: one clear error line, exit status 1,
no traceback, and nothing half-written."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from tests.verify.helpers import gfxarch_set, make_repo, write_package


def fails(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [
        line for line in result.stderr.strip().splitlines() if not line.startswith("warning: ")
    ]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def both(tmp_path) -> Path:
    """One repository root with an apt and an rpm-md repository of the same set."""
    root = tmp_path / "repo"
    for fmt in FORMATS:
        built = make_repo(tmp_path / fmt.name, fmt, gfxarch_set())
        shutil.copytree(built / fmt.repo_dir, root / fmt.repo_dir)
    return root


def test_verify_a_missing_directory(tmp_path):
    assert "not a directory" in fails("verify", "--repo", str(tmp_path / "nope"))


def test_verify_a_directory_without_a_repository(tmp_path):
    assert "neither an apt repository (dists/) nor an rpm-md one" in fails(
        "verify", "--repo", str(tmp_path)
    )


def test_verify_a_format_the_repository_lacks(tmp_path):
    root = make_repo(tmp_path, DEB, gfxarch_set())
    assert fails("verify", "--repo", str(root), "--format", "rpm") == (
        f"error: {root}: no rpm repository here (there is: deb)"
    )


def test_verify_an_unknown_package_suggests_close_names(both):
    message = fails("verify", "--repo", str(both), "--install", "amdrocm-blas8.2-gfx94")
    assert "amdrocm-blas8.2-gfx94: no package of that name" in message
    assert "did you mean amdrocm-blas8.2-gfx942" in message


def test_verify_several_suites_need_a_choice(tmp_path):
    root = make_repo(tmp_path, DEB, gfxarch_set())
    shutil.copytree(root / "apt/dists/stable", root / "apt/dists/testing")
    assert "2 suites (stable, testing); choose one with --suite" in fails(
        "verify", "--repo", str(root)
    )
    assert "no suite 'unstable' (there are: stable, testing)" in fails(
        "verify", "--repo", str(root), "--suite", "unstable"
    )
    result = CliRunner().invoke(cli, ["verify", "--repo", str(root), "--suite", "testing"])
    assert result.exit_code == 0, result.output


def test_verify_a_packages_index_that_release_does_not_vouch_for(tmp_path):
    root = make_repo(tmp_path, DEB, gfxarch_set())
    packages = root / "apt/dists/stable/main/binary-amd64/Packages"
    packages.write_text(packages.read_text().replace("8.2.0-1", "8.2.0-2"))
    assert f"{packages}: does not match the digest" in fails("verify", "--repo", str(root))


def test_verify_a_primary_that_repomd_does_not_vouch_for(tmp_path):
    root = make_repo(tmp_path, RPM, gfxarch_set())
    (primary,) = (root / "rpm/repodata").glob("*-primary.xml.gz")
    primary.write_bytes(gzip.compress(gzip.decompress(primary.read_bytes()) + b"\n"))
    assert f"{primary}: does not match the checksum" in fails("verify", "--repo", str(root))


def test_verify_a_system_file_for_two_formats(both, tmp_path):
    system = tmp_path / "status"
    system.write_text("Package: libc6\nVersion: 2.36-9\n")
    assert "--system describes one format's packages: add --format deb or rpm" in fails(
        "verify", "--repo", str(both), "--system", str(system)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Package: libc6\nVersion: 2.36\n\nPackage: python3\n",
            "stanza 2 (python3): expected 'Package:' and 'Version:' fields",
        ),
        (
            "Package: libc6\nVersion: 2.36\nDepends: libgcc-s1 (>> )\n",
            "package libc6: Depends: 'libgcc-s1 (>> )' is not a Debian relation",
        ),
    ],
)
def test_verify_a_bad_system_file(both, tmp_path, text, expected):
    system = tmp_path / "status"
    system.write_text(text)
    message = fails("verify", "--repo", str(both), "--format", "deb", "--system", str(system))
    assert message.startswith(f"error: {system}: ") and expected in message


def test_verify_an_unreadable_system_file(both, tmp_path):
    assert (
        fails("verify", "--repo", str(both), "--format", "rpm", "--system", str(tmp_path / "none"))
        == f"error: {tmp_path / 'none'}: file not found"
    )


def test_repo_from_a_missing_build(tmp_path):
    assert "not a directory (give the --out directory of gfxpack build)" in fails(
        "repo", "--in", str(tmp_path / "nope"), "--out", str(tmp_path / "repo")
    )
    assert not (tmp_path / "repo").exists()


def test_repo_from_an_empty_build(tmp_path):
    (tmp_path / "build").mkdir()
    assert "no .deb or .rpm files and no index.json" in fails(
        "repo", "--in", str(tmp_path / "build"), "--out", str(tmp_path / "repo")
    )


def test_repo_from_an_index_listing_missing_files(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "index.json").write_text(
        '{"files": [{"file": "a_1-1_amd64.deb", "size": 1, "sha256": "%s"}]}' % ("0" * 64)
    )
    assert "lists 1 file(s) that are not there, e.g. a_1-1_amd64.deb" in fails(
        "repo", "--in", str(build), "--out", str(tmp_path / "repo")
    )
    (build / "index.json").write_text('{"packages": []}')
    assert "not a gfxpack build index" in fails(
        "repo", "--in", str(build), "--out", str(tmp_path / "repo")
    )


def test_repo_refuses_to_change_a_published_file(tmp_path):
    root = make_repo(tmp_path, DEB, {"tool": {}})
    packages = (root / "apt/dists/stable/main/binary-amd64/Packages").read_bytes()
    rebuilt = tmp_path / "rebuilt"
    write_package(rebuilt, DEB, "tool", files=("/opt/tool",))
    result = CliRunner().invoke(cli, ["repo", "--in", str(rebuilt), "--out", str(root)])
    assert result.exit_code == 1
    # A directory gfxpack did not build is published with a warning, then refused.
    warning, error = result.stderr.splitlines()
    assert warning.startswith(f"warning: {rebuilt}: no index.json")
    assert error.startswith("error: ") and "is already published with different contents" in error
    assert (root / "apt/dists/stable/main/binary-amd64/Packages").read_bytes() == packages
    assert not list((root / "apt/pool/main").glob(".*partial"))


def test_repo_with_a_key_gpg_does_not_have(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    result = CliRunner(env={"GNUPGHOME": str(home)}).invoke(
        cli,
        [
            "repo",
            "--in",
            str(build),
            "--out",
            str(tmp_path / "repo"),
            "--sign-key",
            "nobody@example.invalid",
        ],
    )
    assert result.exit_code == 1
    # Found when the public key to publish is exported, before anything is signed.
    assert "gpg has no public key" in result.stderr and "nobody@example.invalid" in result.stderr


@pytest.mark.parametrize("kind", ["primary", "filelists"])
def test_verify_an_index_swapped_for_a_fifo_does_not_hang(tmp_path, kind):
    """repomd.xml gives no size to check first: the index is opened only when it is a
    regular file (a FIFO's read would wait for a writer forever)."""
    root = make_repo(tmp_path, RPM, gfxarch_set())
    (index,) = (root / "rpm/repodata").glob(f"*-{kind}.xml.gz")
    index.unlink()
    os.mkfifo(index)
    result = subprocess.run(
        [sys.executable, "-m", "gfxpack", "verify", "--repo", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {index}: not a regular file (a FIFO) ({root}/rpm/repodata/repomd.xml lists it)"
    ]
