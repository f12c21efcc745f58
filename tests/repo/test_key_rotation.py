"""A key rotation's other key (--extra-key) is recorded with the repository (repo/settings.py):
every later repo and stream run publishes it beside the signing key and takes RPMs it
signed, until the rotation is ended (--drop-extra-keys). gpg --show-keys and rpmkeys
(--import, -K) are the referees of what a machine set up from the published key files
trusts."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from gfxpack.repo.state import DATABASE
from tests.conftest import run
from tests.repo.test_package_signatures import build, error_line, gfxpack
from tests.verify.signed import Key, make_key
from tests.verify.test_sqv import keys_in

# Where a repository publishes its public keys: apt's keyring, the armored key of the
# rpm-md repository, and the one beside repomd.xml that the printed dnf lines import.
KEY_FILES = (
    "gfxpack-archive-keyring.gpg",
    "rpm/RPM-GPG-KEY-gfxpack",
    "rpm/repodata/repomd.xml.key",
)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The signer (the repository's key, with the rotation's other public key in its gpg
    home) and the other key."""
    base = tmp_path_factory.mktemp("key-rotation")
    ours, other = make_key(base / "ours", "ed25519"), make_key(base / "other", "ed25519")
    home = base / "signer"
    shutil.copytree(ours.home, home, ignore=shutil.ignore_patterns("S.*"))
    run("gpg", "--batch", "--homedir", str(home), "--import",
        str(other.export(base / "other.gpg")))  # fmt: skip
    yield {"signer": Key(str(home), ours.fingerprint), "ours": ours, "other": other}
    for key in (ours, other):
        key.stop_agent()
    Key(str(home), "").stop_agent()


def versioned(where: Path, name: str, release: str, signed_by: Key) -> Path:
    """A build of one package of each format, its RPM signed by ``signed_by``, that is
    version 8.2.0-``release`` of a stream."""
    build(where, name, signed_by=signed_by)
    index = json.loads((where / "index.json").read_text())
    (where / "index.json").write_text(json.dumps({**index, "release": release}))
    return where


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return str(result.output)


def published_keys(out: Path) -> set[str]:
    """The keys the published key files hold (their long key ids, as gpg reads them): the
    same in each, or the test fails."""
    found = {name: keys_in(out / name) for name in KEY_FILES}
    assert len({frozenset(held) for held in found.values()}) == 1, found
    return found[KEY_FILES[0]]


def installs(out: Path, rpm: Path, db: Path) -> bool:
    """Whether a machine whose rpm imported the repository's repomd.xml.key (as the
    printed dnf line does) finds ``rpm``'s signatures good: what dnf's gpgcheck asks."""
    db.mkdir()
    run("rpmkeys", "--dbpath", str(db), "--import", str(out / "rpm/repodata/repomd.xml.key"))
    checked = subprocess.run(["rpmkeys", "--dbpath", str(db), "-K", str(rpm)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    return checked.returncode == 0 and checked.stdout.strip().endswith("signatures OK")


def test_the_extra_key_outlives_prune_and_refresh_until_the_rotation_ends(keys, tmp_path):
    signer, other, out = keys["signer"], keys["other"], tmp_path / "repo"
    sign = ("--sign-key", signer.fingerprint)
    both = {signer.fingerprint[-16:], other.fingerprint[-16:]}
    # Step 1 of the guide: the other key published beside the signing key, once.
    first = versioned(tmp_path / "b1", "tool", "1", keys["ours"])
    theirs = versioned(tmp_path / "b2", "next", "2", other)
    ok(gfxpack(signer, "repo", "--in", str(first), "--out", str(out), *sign,
               "--extra-key", other.fingerprint.lower()))  # fmt: skip
    ok(gfxpack(signer, "repo", "--in", str(theirs), "--out", str(out), *sign))
    assert published_keys(out) == both
    # A prune that removes a build writes every key file again: still both keys.
    pruned = ok(gfxpack(signer, "stream", "prune", "--repo", str(out), "--retain", "1builds",
                        *sign))  # fmt: skip
    assert "removed build 8.2.0-1" in pruned
    assert published_keys(out) == both
    ok(gfxpack(signer, "stream", "refresh", "--repo", str(out), *sign))
    assert published_keys(out) == both
    # stream list says which keys are published beside the signing key.
    listed = json.loads(ok(gfxpack(signer, "stream", "list", "--repo", str(out), "--json")))
    assert listed["extra_keys"] == [other.fingerprint]
    assert f"also publishing {other.fingerprint}" in ok(
        gfxpack(signer, "stream", "list", "--repo", str(out))
    )
    next_rpm = out / "rpm/Packages/next-8.2.0-1.x86_64.rpm"
    assert installs(out, next_rpm, tmp_path / "machine-1")
    # A later repo run, told nothing of the rotation, still takes the other key's RPMs.
    later = versioned(tmp_path / "b3", "more", "3", other)
    ok(gfxpack(signer, "repo", "--in", str(later), "--out", str(out), *sign))
    assert published_keys(out) == both
    # The last step ends it: the signing key alone, from then on.
    last = versioned(tmp_path / "b4", "last", "4", keys["ours"])
    ok(gfxpack(signer, "repo", "--in", str(last), "--out", str(out), *sign,
               "--drop-extra-keys"))  # fmt: skip
    ours_only = {signer.fingerprint[-16:]}
    assert published_keys(out) == ours_only
    ok(gfxpack(signer, "stream", "refresh", "--repo", str(out), *sign))
    assert published_keys(out) == ours_only
    listed = json.loads(ok(gfxpack(signer, "stream", "list", "--repo", str(out), "--json")))
    assert listed["extra_keys"] == []
    assert not installs(out, next_rpm, tmp_path / "machine-2")
    refused = versioned(tmp_path / "b5", "late", "5", other)
    line = error_line(gfxpack(signer, "repo", "--in", str(refused), "--out", str(out), *sign))
    assert "not a good signature by the repository's keys" in line


def test_an_extra_key_given_again_replaces_the_recorded_ones(keys, tmp_path):
    """--extra-key given again says which keys are published beside the signing key from
    then on (the guide's step 2: the keys swap places), never more keys."""
    signer, other, out = keys["signer"], keys["other"], tmp_path / "repo"
    ok(gfxpack(signer, "repo", "--in", str(versioned(tmp_path / "b1", "tool", "1", other)),
               "--out", str(out), "--sign-key", signer.fingerprint,
               "--extra-key", other.fingerprint))  # fmt: skip
    ok(gfxpack(signer, "repo", "--in", str(versioned(tmp_path / "b2", "next", "2", keys["ours"])),
               "--out", str(out), "--sign-key", signer.fingerprint,
               "--extra-key", signer.fingerprint))  # fmt: skip
    assert published_keys(out) == {signer.fingerprint[-16:]}


def test_promote_gives_a_target_the_extra_keys_it_is_told(keys, tmp_path):
    signer, other = keys["signer"], keys["other"]
    nightly, weekly = tmp_path / "nightly", tmp_path / "weekly"
    sign = ("--sign-key", signer.fingerprint)
    ok(gfxpack(signer, "repo", "--in", str(versioned(tmp_path / "b1", "tool", "1", other)),
               "--in", str(versioned(tmp_path / "b2", "next", "2", other)),
               "--out", str(nightly), *sign, "--extra-key", other.fingerprint))  # fmt: skip
    promote = ("stream", "promote", "--from", str(nightly), "--to", str(weekly), *sign)
    # A new target never takes the source's rotation: the other key's RPMs are refused.
    line = error_line(gfxpack(signer, *promote, "--version", "8.2.0-1"))
    assert "not a good signature by the repository's keys" in line
    assert not (weekly / "rpm/Packages").exists()
    ok(gfxpack(signer, *promote, "--version", "8.2.0-1", "--extra-key", other.fingerprint))
    both = {signer.fingerprint[-16:], other.fingerprint[-16:]}
    assert published_keys(weekly) == both
    # An existing target keeps its own.
    ok(gfxpack(signer, *promote, "--version", "8.2.0-2"))
    assert published_keys(weekly) == both
    assert installs(weekly, weekly / "rpm/Packages/next-8.2.0-1.x86_64.rpm", tmp_path / "db")


def test_what_the_extra_key_options_refuse(keys, tmp_path):
    signer, out = keys["signer"], tmp_path / "repo"
    inputs = str(versioned(tmp_path / "b1", "tool", "1", keys["ours"]))
    sign = ("--sign-key", signer.fingerprint)
    line = error_line(gfxpack(signer, "repo", "--in", inputs, "--out", str(out), *sign,
                              "--extra-key", "gfxpack other"))  # fmt: skip
    assert line == (
        "error: --extra-key 'gfxpack other': expected a key's fingerprint (40 hexadecimal "
        "digits), as gpg --list-keys prints it"
    )
    line = error_line(gfxpack(signer, "repo", "--in", inputs, "--out", str(out), *sign,
                              "--extra-key", keys["other"].fingerprint,
                              "--drop-extra-keys"))  # fmt: skip
    assert "--extra-key and --drop-extra-keys: give one" in line
    assert not out.exists()


def test_a_planted_extra_key_is_refused_as_damage(keys, tmp_path):
    """The record is a file in OUT: a value that is no fingerprint would have gpg look a
    name up, and publish whatever key it found, to every machine set up from it."""
    signer, out = keys["signer"], tmp_path / "repo"
    ok(gfxpack(signer, "repo", "--in", str(versioned(tmp_path / "b1", "tool", "1",
                                                     keys["ours"])),
               "--out", str(out), "--sign-key", signer.fingerprint,
               "--extra-key", keys["other"].fingerprint))  # fmt: skip
    before = published_keys(out)
    with sqlite3.connect(out / DATABASE) as db:
        db.execute("UPDATE settings SET value = 'attacker@example.invalid' "
                   "WHERE key = 'extra_keys'")  # fmt: skip
    for command in (["stream", "refresh", "--repo", str(out), "--sign-key", signer.fingerprint],
                    ["stream", "list", "--repo", str(out)]):  # fmt: skip
        line = error_line(gfxpack(signer, *command))
        assert line.startswith(f"error: {out / DATABASE}: not a record of a published ")
        assert "extra keys 'attacker@example.invalid': expected fingerprints" in line
    assert published_keys(out) == before


def test_a_run_whose_gpg_lacks_the_remembered_key_says_so(keys, tmp_path):
    """A job that lost the other key from its gpg home would otherwise publish the
    keyrings without it, and machines set up from them refuse that key's packages."""
    signer, other, out = keys["signer"], keys["other"], tmp_path / "repo"
    first = versioned(tmp_path / "b1", "tool", "1", keys["ours"])
    ok(gfxpack(signer, "repo", "--in", str(first), "--out", str(out),
               "--sign-key", signer.fingerprint, "--extra-key", other.fingerprint))  # fmt: skip
    before = {name: (out / name).read_bytes() for name in KEY_FILES}
    lacking = keys["ours"]  # the signing key's gpg home, without the other key
    refresh = ["stream", "refresh", "--repo", str(out), "--sign-key", signer.fingerprint]
    line = error_line(gfxpack(lacking, *refresh))
    assert line.startswith(f"error: --extra-key {other.fingerprint} (remembered until gfxpack")
    assert "gpg has no public key" in line
    later = versioned(tmp_path / "b2", "next", "2", keys["ours"])
    line = error_line(gfxpack(lacking, "repo", "--in", str(later), "--out", str(out),
                              "--sign-key", signer.fingerprint))  # fmt: skip
    assert f"gpg has no public key {other.fingerprint} to publish" in line
    assert "remembered until --drop-extra-keys" in line
    assert {name: (out / name).read_bytes() for name in KEY_FILES} == before
