"""The example release published as repositories, shared by the verify tests."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from gfxpack.build import BuildOptions
from gfxpack.release import ReleaseOptions, build_release
from gfxpack.repo import publish
from tests.conftest import EXAMPLE_CONFIG, run


@pytest.fixture(scope="session")
def example_repo(example_release, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("published") / "repo"
    publish(example_release.out, root, "stable", 1_700_000_000)
    return root


def leaky_config(path: Path) -> Path:
    """The example's package.json plus a leak nothing else installs: ``amdrocm-suite``
    (a gfxarch meta) depends on ``amdrocm-bench``, a meta of no arch that depends on the
    full ``amdrocm-core``, so each ``amdrocm-suite8.2-<arch>`` pulls in every arch."""
    entries = json.loads(EXAMPLE_CONFIG.read_text(encoding="utf-8"))
    template = next(e for e in entries if e["Package"] == "amdrocm-developer-tools")

    def meta(name: str, gfxarch: str, depends: list[str]) -> dict:
        entry = copy.deepcopy(template)
        entry.update(Package=name, Gfxarch=gfxarch, DEBDepends=depends, RPMRequires=depends)
        return entry

    entries += [
        meta("amdrocm-bench", "False", ["amdrocm-core"]),
        meta("amdrocm-suite", "True", ["amdrocm-bench", "amdrocm-blas"]),
    ]
    path.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def leaky_repo(example_artifacts, tmp_path_factory) -> Path:
    """The example release with :func:`leaky_config`'s leak, published (both formats)."""
    base = tmp_path_factory.mktemp("leaky")
    config = leaky_config(base / "package.json")
    options = ReleaseOptions("8.2.0", build=BuildOptions(jobs=2))
    build_release(config, example_artifacts, base / "packages", options)
    publish(base / "packages", base / "repo", "stable", 1_700_000_000)
    return base / "repo"


@pytest.fixture
def gnupg(tmp_path):
    """A throwaway gpg home with one signing key; yields (home, fingerprint)."""
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = {"GNUPGHOME": str(home)}
    gpg = ["gpg", "--batch", "--homedir", str(home)]
    run(
        *gpg,
        "--passphrase",
        "",
        "--quick-gen-key",
        "gfxpack test <test@example.invalid>",
        "ed25519",
        "sign",
        "never",
        env=env,
    )
    listing = run(*gpg, "--with-colons", "--list-secret-keys", env=env).stdout
    fingerprint = next(
        line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
    )
    yield str(home), fingerprint
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)


def export_key(home: str, fingerprint: str, path: Path, armor: bool = False) -> Path:
    """The public key of ``fingerprint`` as a keyring file (what apt's signed-by takes)."""
    command = ["gpg", "--homedir", home, "--export", *(["--armor"] if armor else []), fingerprint]
    path.write_bytes(subprocess.run(command, capture_output=True, check=True).stdout)
    return path


@pytest.fixture(scope="session")
def rsa_key(tmp_path_factory):
    """A throwaway gpg home with an RSA signing key; yields a tests.verify.signed.Key."""
    from tests.verify.signed import make_key

    home = tmp_path_factory.mktemp("gnupg-rsa")
    yield make_key(home, "rsa4096")
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)


@pytest.fixture(scope="session")
def signed_repo(rsa_key, example_release, tmp_path_factory):
    """The example 8.2.0 with signed RPMs, published with --sign-key, --setup-package
    and --base-url, served on 127.0.0.1; yields (url, repository root). A test may
    publish a later release into it."""
    from tests.verify.helpers import serve
    from tests.verify.signed import publish_signed, signed_build

    base = tmp_path_factory.mktemp("signed-repo")
    repo = base / "repo"
    repo.mkdir()
    with serve(repo) as url:
        build = signed_build(rsa_key, example_release.out, base / "build-8.2.0")
        publish_signed(rsa_key, build, repo, url)
        yield url, repo


@pytest.fixture(scope="session")
def therock_repo(therock_release, tmp_path_factory) -> Path:
    """TheRock's package.json built (both formats) from a generated artifacts tree
    (tests/conftest.py) and published."""
    repo = tmp_path_factory.mktemp("therock") / "repo"
    publish(therock_release.out, repo, "stable", 1_700_000_000)
    return repo
