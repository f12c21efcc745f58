"""gfxpack stream prune and promote killed at each of their renames and unlinks
(tests/repo/killed.py), then run again: the signed repository verifies deeply against
its key, and no index a client can reach (the current ones and every generation kept
for clients that read an older top file) names a file that is not there."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import FORMATS
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.state import State
from gfxpack.repo.stream import read_builds
from tests.repo.killed import KILLED, killed_run
from tests.verify.helpers import write_package

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("strace") is None, reason="needs strace (apt-get install strace)"
    ),
]
NAMES = ("tool", "lib")
VERSIONS = ("8.2.0", "8.2.1")
EPOCH = "1700000000"


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """An RSA key, and a signed nightly repository of two small builds (two packages of
    each format, and an index.json naming them, so each is a build of the stream)."""
    from tests.verify.signed import make_key, signed_build

    base = tmp_path_factory.mktemp("faults")
    key = make_key(base / "gnupg", "rsa4096")
    nightly = base / "nightly"
    for version in VERSIONS:
        build = _build(base / f"unsigned-{version}", version)
        build = signed_build(key, build, base / f"build-{version}")
        _gfxpack(key, "repo", "--in", str(build), "--out", str(nightly),
                 "--sign-key", key.fingerprint)  # fmt: skip
    yield key, nightly, key.export(base / "key.gpg")
    subprocess.run(["gpgconf", "--homedir", str(key.home), "--kill", "all"], check=False)


def _build(build: Path, version: str) -> Path:
    files = [
        write_package(build, fmt, name, version=version, files=(f"/opt/{name}-{version}",))
        for name in NAMES
        for fmt in FORMATS
    ]
    listed = []
    for path in files:
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        listed.append({"file": path.name, "format": path.suffix[1:], "size": len(data),
                       "sha256": digest})  # fmt: skip
    index = {"rocm_version": version, "release": "1", "files": listed}
    (build / "index.json").write_text(json.dumps(index))
    return build


def _env(key) -> dict[str, str]:
    return {"GNUPGHOME": str(key.home), "SOURCE_DATE_EPOCH": EPOCH}


def _gfxpack(key, *args: str) -> None:
    result = CliRunner().invoke(cli, list(args), env=_env(key))
    assert result.exit_code == 0, result.output + result.stderr


def _missing(repo: Path) -> list[str]:
    """Each file an index names that is not there: the current Packages' pool files and
    InRelease's indexes (as themselves and by hash), repomd.xml's files and primary's
    packages, and every file of a kept generation."""
    missing = []
    dist = repo / "apt/dists/stable"
    release = parse_stanzas((dist / "InRelease").read_text().split("\n\n", 1)[1])[0]
    for line in release["SHA256"].strip().splitlines():
        digest, _, name = line.split()
        directory = (dist / name).parent
        missing += [str(p) for p in (dist / name, directory / "by-hash/SHA256" / digest)
                    if not p.is_file()]  # fmt: skip
    packages = parse_stanzas((dist / "main/binary-amd64/Packages").read_text())
    missing += [s["Filename"] for s in packages if not (repo / "apt" / s["Filename"]).is_file()]
    rpm = repo / "rpm"
    repomd = (rpm / "repodata/repomd.xml").read_text()
    hrefs = re.findall(r'<location href="([^"]+)"', repomd)
    missing += [h for h in hrefs if not (rpm / h).is_file()]
    (primary,) = [h for h in hrefs if h.endswith("primary.xml.gz")]
    listed = re.findall(
        r'<location href="([^"]+)"', gzip.decompress((rpm / primary).read_bytes()).decode()
    )
    missing += [h for h in listed if not (rpm / h).is_file()]
    # Every file of a kept generation, and every package its Packages or primary names.
    with State.open(repo, create=False) as state:
        kept = {fmt.name: state.generations(fmt.name) for fmt in FORMATS}
    for fmt_name, directory in (("deb", dist), ("rpm", rpm / "repodata")):
        assert kept[fmt_name], fmt_name
        for _, paths in kept[fmt_name]:
            for name in paths:
                path = directory / name
                if not path.is_file():
                    missing.append(str(path))
                elif fmt_name == "deb" and "binary-" in name:
                    text = _text(path.read_bytes())
                    if text.startswith("Package:"):
                        for stanza in parse_stanzas(text):
                            if not (repo / "apt" / stanza["Filename"]).is_file():
                                missing.append(stanza["Filename"])
                elif name.endswith("-primary.xml.gz"):
                    xml = gzip.decompress(path.read_bytes()).decode()
                    for href in re.findall(r'<location href="([^"]+)"', xml):
                        if not (rpm / href).is_file():
                            missing.append(href)
    return missing


def _text(data: bytes) -> str:
    """A Packages index's text, whether that file is gzip-compressed or not."""
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def _every_step(tmp_path: Path, key, keyring: Path, base: Path, args, syscall: str) -> int:
    """Run gfxpack ``args(out)`` on a copy ``out`` of ``base``, killed at its 1st, 2nd, ...
    rename until a run finishes; after each kill the same command run again finishes,
    and what it left verifies and names no missing file. The steps killed."""
    for nth in range(1, 200):
        out = tmp_path / f"run-{nth}"
        shutil.copytree(base, out)
        status = killed_run(args(out), nth, env={**os.environ, **_env(key)}, syscall=syscall)
        if status == 0:
            return nth - 1  # every earlier run was killed (asserted below)
        assert status in KILLED, f"step {nth}: exit status {status}"
        _gfxpack(key, *args(out))
        verify = CliRunner().invoke(
            cli, ["verify", "--repo", str(out), "--deep", "--keyring", str(keyring)],
            env=_env(key),
        )  # fmt: skip
        assert verify.exit_code == 0, f"step {nth}: {verify.output}{verify.stderr}"
        assert _missing(out) == [], f"step {nth}"
        _check_result(out, args(out))
        shutil.rmtree(out)
    raise AssertionError(f"the command never finished in 200 calls of {syscall}")


def _check_result(out: Path, args: list[str]) -> None:
    """The run's result: the builds the record keeps, and only their packages indexed."""
    builds = [b.version for b in read_builds(out)]
    assert builds == ["8.2.1-1"], builds
    packages = parse_stanzas((out / "apt/dists/stable/main/binary-amd64/Packages").read_text())
    assert {s["Version"] for s in packages} == {"8.2.1-1"}
    repomd = (out / "rpm/repodata/repomd.xml").read_text()
    (primary,) = re.findall(r'<location href="([^"]+-primary.xml.gz)"', repomd)
    listed = re.findall(
        r'<location href="Packages/([^"]+)"',
        gzip.decompress((out / "rpm" / primary).read_bytes()).decode(),
    )
    assert sorted(listed) == [f"{name}-8.2.1-1.x86_64.rpm" for name in sorted(NAMES)]
    # The pruned build's files stay while a kept generation names them (_missing).
    pool = {p.name for p in (out / "rpm/Packages").glob("*.rpm")}
    assert set(listed) <= pool <= set(listed) | {f"{n}-8.2.0-1.x86_64.rpm" for n in NAMES}


# Renames: the indexes, Release and its signatures, the repodata files, repomd.xml and its
# signature and key. Unlinks: the record's commits (SQLite's journal), the scratch
# directory, older indexes and signatures, the pool files no kept index names.
STEPS = {"rename": 12, "unlink": 6}


@pytest.mark.parametrize("syscall", sorted(STEPS))
def test_prune_killed_at_each_step_is_healed_by_the_next(signed, tmp_path, syscall):
    key, nightly, keyring = signed
    args = lambda out: ["stream", "prune", "--repo", str(out), "--retain", "1builds",  # noqa: E731
                        "--sign-key", key.fingerprint]  # fmt: skip
    assert _every_step(tmp_path, key, keyring, nightly, args, syscall) >= STEPS[syscall]


@pytest.mark.parametrize("syscall", sorted(STEPS))
def test_promote_killed_at_each_step_is_healed_by_the_next(signed, tmp_path, syscall):
    key, nightly, keyring = signed
    weekly = tmp_path / "weekly"
    _gfxpack(key, "stream", "promote", "--from", str(nightly), "--to", str(weekly),
             "--version", "8.2.0-1", "--sign-key", key.fingerprint)  # fmt: skip
    args = lambda out: ["stream", "promote", "--from", str(nightly), "--to", str(out),  # noqa: E731
                        "--version", "8.2.1-1", "--retain", "1builds",
                        "--sign-key", key.fingerprint]  # fmt: skip
    copies = 4 if syscall == "rename" else 0  # and the pool copies, renamed in
    assert _every_step(tmp_path, key, keyring, weekly, args, syscall) >= STEPS[syscall] + copies
