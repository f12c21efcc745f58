"""Release streams as their users see them (issue 30): a dry run needs no key and says
what it would do; a promotion target keeps its own settings; a refresh renews the
Valid-Until; a rerun remembers the base URL; stream list says what is on disk."""

from __future__ import annotations

import json
import shlex
import subprocess
from email.utils import formatdate
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.verify import verify
from tests.repo.nightlies import nightly
from tests.repo.signing import make_ed25519_key
from tests.verify.signed import Key

DAY = 86_400
EPOCH = 1_700_000_000


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    home = tmp_path_factory.mktemp("gnupg-stream")
    yield make_ed25519_key(home)
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)


@pytest.fixture(scope="module")
def nights(key, tmp_path_factory) -> dict[int, Path]:
    where = tmp_path_factory.mktemp("nights")
    return {night: nightly(where, night, key) for night in (1, 2, 3)}


def gfx(key: Key | None, *args: str, at: int = EPOCH):
    """The gfxpack CLI at SOURCE_DATE_EPOCH ``at``, with ``key``'s gpg home."""
    env = {"SOURCE_DATE_EPOCH": str(at), **({"GNUPGHOME": key.home} if key else {})}
    return CliRunner().invoke(cli, list(args), env=env)


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def _files(repo: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(repo)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(repo.rglob("*"))
        if p.is_file() and p.name != ".gfxpack-repo.lock"
    }


def _release(repo: Path) -> dict[str, str]:
    text = (repo / "apt/dists/stable/Release").read_text()
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def _signed_nightly(key: Key, nights: dict[int, Path], repo: Path, *extra: str) -> None:
    for night in sorted(nights):
        ok(gfx(key, "repo", "--in", str(nights[night]), "--out", str(repo), "--sign-key",
               key.fingerprint, "-q", *extra, at=EPOCH + night * DAY))  # fmt: skip


def test_a_dry_run_needs_no_key_and_says_would(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, nights, repo)
    before = _files(repo)
    # No --sign-key, no gpg home at all: a dry run signs nothing.
    result = gfx(None, "stream", "prune", "--repo", str(repo), "--retain", "1builds", "--dry-run")
    out = ok(result)
    assert "would remove build 8.2.1-1\nwould remove build 8.2.2-1\n" in out
    assert "removed" not in out
    result = gfx(None, "stream", "remove", "--repo", str(repo), "--version", "8.2.3-1",
                 "--dry-run")  # fmt: skip
    assert "would remove build 8.2.3-1" in ok(result)
    nothing = gfx(None, "stream", "prune", "--repo", str(repo), "--retain", "all", "--dry-run")
    assert ok(nothing) == "nothing to remove (dry run: nothing changed)\n"
    assert _files(repo) == before
    # The run itself still needs the key.
    refused = gfx(None, "stream", "prune", "--repo", str(repo), "--retain", "1builds")
    assert refused.exit_code == 1 and "its indexes are signed" in refused.output
    assert _files(repo) == before


def test_a_removal_that_finds_nothing_says_so(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, nights, repo)
    out = ok(gfx(key, "stream", "prune", "--repo", str(repo), "--retain", "all", "--sign-key",
                 key.fingerprint))  # fmt: skip
    assert out.startswith("nothing to remove\n")


def _setup_lines(output: str) -> dict[str, str]:
    pairs = [line.split(":", 1) for line in output.splitlines() if line.startswith("  ")]
    return {client.strip(): line.strip() for client, line in pairs}


def test_a_new_promotion_target_takes_its_own_settings(key, nights, tmp_path):
    """The nightly's --valid-for 7 and repository id stay the nightly's: a new weekly has
    no Valid-Until and its own id (its directory's name), and prints its own signed
    setup lines; options name it otherwise, and an existing target keeps what it has."""
    nightly_repo, weekly = tmp_path / "nightly", tmp_path / "weekly"
    _signed_nightly(key, nights, nightly_repo, "--valid-for", "7", "--repo-id", "rocm-nightly",
                    "--base-url", "https://repo.example.com/nightly")  # fmt: skip
    assert "Valid-Until" in _release(nightly_repo)
    promote = ("stream", "promote", "--sign-key", key.fingerprint)
    out = ok(gfx(key, *promote, "--from", str(nightly_repo), "--to", str(weekly),
                 "--version", "8.2.1-1", at=EPOCH + 9 * DAY))  # fmt: skip
    assert "Valid-Until" not in _release(weekly)
    assert "deb: 2 new, 2 in" in out and "(suite stable, signed)" in out
    lines = _setup_lines(out)
    assert set(lines) == {"apt", "dnf", "zypper"}
    assert "/etc/apt/sources.list.d/weekly.list" in lines["apt"]
    assert "signed-by=/usr/share/keyrings/weekly-archive-keyring.gpg" in lines["apt"]
    assert "/etc/yum.repos.d/weekly.repo" in lines["dnf"] and "gpgcheck=1" in lines["dnf"]
    assert "nightly" not in " ".join(lines.values())  # neither its id nor its URL
    # Options of promote name a new target; the second promotion keeps them.
    stable = tmp_path / "stable"
    ok(gfx(key, *promote, "--from", str(weekly), "--to", str(stable), "--version",
           "8.2.1-1", "--repo-id", "rocm-stable", "--valid-for",
           "30", "--origin", "AMD", "--label", "ROCm stable", "--repo-name", "ROCm (stable)",
           "--base-url", "https://repo.example.com/stable", at=EPOCH + 10 * DAY))  # fmt: skip
    ok(gfx(key, *promote, "--from", str(nightly_repo), "--to", str(weekly),
           "--version", "8.2.2-1", at=EPOCH + 11 * DAY))  # fmt: skip
    out = ok(gfx(key, *promote, "--from", str(weekly), "--to", str(stable),
                 "--version", "8.2.2-1", at=EPOCH + 12 * DAY))  # fmt: skip
    release = _release(stable)
    assert (release["Origin"], release["Label"]) == ("AMD", "ROCm stable")
    assert release["Valid-Until"] == formatdate(EPOCH + 42 * DAY, usegmt=True)  # its Date + 30
    lines = _setup_lines(out)
    assert "/etc/apt/sources.list.d/rocm-stable.list" in lines["apt"]
    assert "https://repo.example.com/stable/apt" in lines["apt"]
    assert "name=ROCm (stable)" in shlex.split(lines["dnf"])


def test_a_base_url_given_once_is_remembered(key, nights, tmp_path):
    repo = tmp_path / "repo"
    ok(gfx(key, "repo", "--in", str(nights[1]), "--out", str(repo), "--sign-key",
           key.fingerprint, "--base-url", "https://repo.example.com/rocm"))  # fmt: skip
    out = ok(gfx(key, "repo", "--in", str(nights[2]), "--out", str(repo), "--sign-key",
                 key.fingerprint))  # fmt: skip
    lines = _setup_lines(out)
    assert "https://repo.example.com/rocm/apt stable main" in lines["apt"]
    assert "baseurl=https://repo.example.com/rocm/rpm" in shlex.split(lines["dnf"])
    assert "file:" not in out
    # Given again, it changes.
    out = ok(gfx(key, "repo", "--in", str(nights[3]), "--out", str(repo), "--sign-key",
                 key.fingerprint, "--base-url", "https://mirror.example.com/rocm"))  # fmt: skip
    assert "https://mirror.example.com/rocm/apt" in _setup_lines(out)["apt"]


def test_refresh_renews_the_valid_until_and_publishes_nothing(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, nights, repo, "--valid-for", "7")  # the last on EPOCH + 3 days
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_bytes()
    pool = {p.name: p.stat().st_mtime_ns for p in (repo / "apt/pool/main").iterdir()}
    (report,) = verify(repo, [], suite=None, fmt=None, expires_within=3, now=EPOCH + 8 * DAY)[:1]
    assert any("expires" in w and "--expires-within 3" in w for w in report.warnings)
    later = EPOCH + 8 * DAY
    out = ok(gfx(key, "stream", "refresh", "--repo", str(repo), "--sign-key", key.fingerprint,
                 at=later))  # fmt: skip
    assert "apt's Release is valid until 2023-11-29 22:13 UTC" in out and "signed" in out
    assert _release(repo)["Valid-Until"] == "Wed, 29 Nov 2023 22:13:20 GMT"
    assert (repo / "apt/dists/stable/main/binary-amd64/Packages").read_bytes() == packages
    assert {p.name: p.stat().st_mtime_ns for p in (repo / "apt/pool/main").iterdir()} == pool
    (report,) = verify(repo, [], fmt=None, expires_within=3, now=later)[:1]
    assert not [w for w in report.warnings if "Valid-Until" in w]
    # gpgv: the new Release is signed by the key.
    keyring = key.export(tmp_path / "key.gpg")
    inrelease = repo / "apt/dists/stable/InRelease"
    gpgv = ["gpgv", "--keyring", str(keyring), str(inrelease)]
    subprocess.run(gpgv, check=True, capture_output=True)
    # A signed repository's refresh needs its key, as every run that signs.
    refused = gfx(None, "stream", "refresh", "--repo", str(repo), at=later)
    assert refused.exit_code == 1 and "its indexes are signed" in refused.output


def test_verify_warns_when_a_repository_expires_within_the_days_asked(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, {1: nights[1]}, repo, "--valid-for", "7")  # until EPOCH + 8 days
    warnings = {
        now: [w for r in verify(repo, [], expires_within=2, now=now) for w in r.warnings]
        for now in (EPOCH + 2 * DAY, EPOCH + 7 * DAY, EPOCH + 9 * DAY)
    }
    assert warnings[EPOCH + 2 * DAY] == []
    (soon,) = warnings[EPOCH + 7 * DAY]
    assert "expires 2023-11-22 22:13 UTC (Valid-Until), within --expires-within 2" in soon
    (past,) = warnings[EPOCH + 9 * DAY]
    assert "expired 2023-11-22" in past and "gfxpack stream refresh" in past
    # The command line, on today's clock: long expired.
    result = CliRunner().invoke(cli, ["verify", "--repo", str(repo), "--expires-within", "1"])
    assert result.exit_code == 0 and "expired 2023-11-22" in result.stderr


def test_verify_json_carries_the_valid_until_and_whether_it_is_near(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, {1: nights[1]}, repo, "--valid-for", "7")  # until EPOCH + 8 days
    judged = {
        now: {r.fmt.name: r.as_dict() for r in verify(repo, [], expires_within=2, now=now)}
        for now in (EPOCH + 2 * DAY, EPOCH + 7 * DAY)
    }
    far, near = judged[EPOCH + 2 * DAY]["deb"], judged[EPOCH + 7 * DAY]["deb"]
    assert far["valid_until"] == near["valid_until"] == "2023-11-22T22:13:20Z"
    assert (far["expiring"], near["expiring"]) == (False, True)
    # rpm-md has no Valid-Until: it never expires.
    assert judged[EPOCH + 7 * DAY]["rpm"]["valid_until"] is None
    assert judged[EPOCH + 7 * DAY]["rpm"]["expiring"] is False
    # The command line, on today's clock: long expired; not asked, not judged.
    for asked, expiring in ((["--expires-within", "1"], True), ([], None)):
        result = CliRunner().invoke(cli, ["verify", "--repo", str(repo), "--json", *asked])
        assert result.exit_code == 0, result.output
        deb = {r["format"]: r for r in json.loads(result.stdout)}["deb"]
        assert (deb["valid_until"], deb["expiring"]) == ("2023-11-22T22:13:20Z", expiring)


def test_stream_list_says_what_is_on_disk(key, nights, tmp_path):
    repo = tmp_path / "nightly"
    _signed_nightly(key, nights, repo, "--keep-generations", "3")
    ok(gfx(key, "stream", "prune", "--repo", str(repo), "--retain", "2builds", "--sign-key",
           key.fingerprint, at=EPOCH + 4 * DAY))  # fmt: skip
    listing = json.loads(ok(gfx(None, "stream", "list", "--repo", str(repo), "--json")))
    pools = {p.name: p.stat().st_size for d in ("apt/pool/main", "rpm/Packages")
             for p in (repo / d).iterdir()}  # fmt: skip
    for build in listing["builds"]:
        assert build["bytes"] == sum(pools[name] for name in build["files"]) > 0
    # 8.2.1's four files left the indexes and stay for the older generations naming them.
    pruned = {name: size for name, size in pools.items() if "8.2.1-1" in name}
    assert len(pruned) == 4
    older = listing["kept_for_older_indexes"]
    assert {fmt: (o["files"], o["bytes"]) for fmt, o in older.items()} == {
        fmt: (2, sum(s for n, s in pruned.items() if n.endswith(fmt))) for fmt in ("deb", "rpm")
    }
    # Retired at generation 4 (publishes 1 to 3, then the prune), kept for 3 generations.
    assert {o["generation"] for o in older.values()} == {4}
    assert {o["until_generation"] for o in older.values()} == {6}
    on_disk = sum(p.lstat().st_size for p in repo.rglob("*") if p.is_file() and not p.is_symlink())
    assert listing["bytes_on_disk"] == on_disk
    text = ok(gfx(None, "stream", "list", "--repo", str(repo)))
    from gfxpack.units import human

    assert f"4 files, {human(listing['builds'][0]['bytes'])}" in text
    assert (f"  deb: 2 pool files, {human(older['deb']['bytes'])}, kept only for older indexes "
            "(generation 4 now), until generation 6 is published") in text  # fmt: skip
    assert text.rstrip().endswith(f"{human(on_disk)} on disk in all")


def test_what_promote_and_refresh_refuse(key, nights, tmp_path):
    nightly_repo, weekly = tmp_path / "nightly", tmp_path / "weekly"
    _signed_nightly(key, {1: nights[1]}, nightly_repo)
    promote = ["stream", "promote", "--from", str(nightly_repo), "--to", str(weekly),
               "--version", "8.2.1-1", "--sign-key", key.fingerprint]  # fmt: skip
    for extra, message in [
        (("--repo-id", "bad id"), "--repo-id 'bad id': "),
        (("--label", "a,b"), "--label 'a,b': "),
        (("--base-url", "ftp://x"), "--base-url 'ftp://x': "),
    ]:
        result = gfx(key, *promote, *extra)
        assert result.exit_code == 1, result.output
        (line,) = result.output.splitlines()
        assert line.startswith("error: ") and message in line
        assert not (weekly / "apt").exists() and not (weekly / "rpm").exists()
    refused = gfx(key, "stream", "refresh", "--repo", str(tmp_path / "none"))
    assert refused.exit_code == 1 and "no repository gfxpack published is there" in refused.output
    assert not (tmp_path / "none").exists()
