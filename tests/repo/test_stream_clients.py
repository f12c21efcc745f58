"""Ten nights of a release stream as machines see it (issue 30): a nightly repository
signed, pruned and published every night, a weekly and a stable one promoted from it,
and apt-get, dnf and zypper in throwaway roots, each set up from the lines the
repository printed (its own keys, signatures checked). Every client upgrades every
night; 30 days on (faketime), apt refuses the nightly, whose Release says Valid-Until
7 days, while every client still installs from stable, which a promotion did not give
the nightly's Valid-Until."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack import trial
from gfxpack.cli import cli
from tests.conftest import dpkg_root
from tests.repo.nightlies import LIB, TOOL, nightly, version
from tests.repo.signing import make_ed25519_key
from tests.verify.clients import Dnf
from tests.verify.signed import Key
from tests.verify.test_setup_lines import printed, stand_ins

TOOLS = ("apt-get", "dnf", "zypper", "rpm", "faketime")
pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in TOOLS),
    reason=f"needs {', '.join(TOOLS)} (Debian packages apt, dnf, zypper, rpm, faketime)",
)
NIGHTS = 10
LATER = ("faketime", "-f", "+30d")  # the clock of every client 30 days on


def gfxpack(key: Key, *args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"GNUPGHOME": key.home})
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def _run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args}:\n{done.stdout}\n{done.stderr}"
    return str(done.stdout)


class Client:
    """One package manager with its own configuration, installing into its own root,
    set up by the line a repository printed for it; ``clock`` runs it at another time."""

    def __init__(self, kind: str, home: Path, clock: tuple[str, ...] = ()) -> None:
        self.kind, self.home, self.clock = kind, home, clock
        self.root = home / "root"
        self.root.mkdir(parents=True)
        if kind == "apt":
            status = dpkg_root(self.root) / "var/lib/dpkg/status"
            # As apt checks by default: this machine's apt.conf.d may turn it off.
            checks = ["-oAcquire::Check-Valid-Until=true", "-oAcquire::Check-Date=true"]
            self.options = [*trial.apt_options(home / "apt", status, self.root), *checks]
        elif kind == "dnf":
            dnf = Dnf(home / "dnf", self.root, "")
            (dnf.reposdir / "test.repo").unlink()
            self.options = [*dnf.options, "--refresh", "--setopt=tsflags=noscripts"]
            _ok(_run(["rpm", "--root", str(self.root), "--initdb"]))
        else:
            self.options = ["--non-interactive", "--root", str(self.root)]

    def set_up(self, line: str) -> None:
        """Run the printed line of this client's package manager, what it writes to /etc
        written where this client reads it."""
        if self.kind == "apt":
            self._set_up_apt(line)
            return
        repos = self.home / "dnf/repos.d" if self.kind == "dnf" else self.root / "etc/zypp/repos.d"
        repos.mkdir(parents=True, exist_ok=True)
        env = stand_ins(self.home / "bin", self.root, repos)
        _ok(_run([*self.clock, "bash", "-c", line], env))
        (written,) = repos.glob("*.repo")
        text = written.read_text()
        assert "gpgcheck=1" in text and "repo_gpgcheck=1" in text

    def _set_up_apt(self, line: str) -> None:
        """apt's line: its keyring fetched from the repository's URL, its sources entry
        (signed-by that keyring) written; both where this client's apt reads them."""
        words = shlex.split(line)
        installed_at, key_url = words[words.index("-fsSLo") + 1 : words.index("-fsSLo") + 3]
        entry = words[words.index("printf") + 2]
        assert entry.startswith(f"deb [signed-by={installed_at}] ")
        keyring = self.home / Path(installed_at).name
        with urllib.request.urlopen(key_url) as response:
            keyring.write_bytes(response.read())
        sources = self.home / "apt/sources.list"
        sources.write_text(entry.replace(installed_at, str(keyring)) + "\n")

    def run(self, *args: str) -> subprocess.CompletedProcess:
        command = {"apt": ["apt-get", *self.options, "-q", "-y"], "dnf": ["dnf", *self.options],
                   "zypper": ["zypper", *self.options]}[self.kind]  # fmt: skip
        return _run([*self.clock, *command, *args])

    def update(self) -> None:
        """Install the tool the first time, upgrade after: each client's own words. The
        indexes are fetched again first (dnf's --refresh): a night here is seconds, less
        than dnf's and zypper's metadata expiry."""
        if self.kind != "dnf":
            _ok(self.run("update" if self.kind == "apt" else "refresh"))
        verb = {"apt": "upgrade", "dnf": "upgrade", "zypper": "update"}[self.kind]
        _ok(self.run(*((verb,) if self.installed() else ("install", TOOL))))

    def installed(self) -> dict[str, str]:
        if self.kind == "apt":
            command = ["dpkg-query", "--root", str(self.root), "-W", "-f=${Package} ${Version}\\n"]
        else:
            command = ["rpm", "--root", str(self.root), "-qa", "--qf",
                       "%{NAME} %{VERSION}-%{RELEASE}\\n"]  # fmt: skip
        listing = _ok(_run(command))
        return {
            name: v
            for name, v in (line.split(" ") for line in listing.splitlines())
            if name != "gpg-pubkey"
        }


@pytest.mark.slow
def test_ten_nightlies_weekly_and_stable_on_real_clients(tmp_path):
    key = make_ed25519_key(tmp_path / "gnupg")
    served = tmp_path / "srv"
    repos = {stream: served / stream for stream in ("nightly", "weekly", "stable")}
    served.mkdir()
    fpr = key.fingerprint
    try:
        with trial.serve(served) as url:
            clients: dict[str, Client] = {}
            for night in range(1, NIGHTS + 1):
                build = nightly(tmp_path / "builds", night, key)
                out = gfxpack(
                    key, "repo", "--in", str(build), "--out", str(repos["nightly"]),
                    "--sign-key", fpr, "--base-url", f"{url}/nightly", "--repo-id",
                    "rocm-nightly", "--valid-for", "7", "--retain", "4builds",
                    "--keep-generations", "2",
                )  # fmt: skip
                if night == 1:
                    nightly_lines = printed(out)
                    for kind in ("apt", "dnf", "zypper"):
                        clients[kind] = Client(kind, tmp_path / "nightly" / kind)
                        clients[kind].set_up(nightly_lines[kind])
                for client in clients.values():
                    client.update()
                    expected = f"{version(night)}-1"
                    assert client.installed() == {LIB: expected, TOOL: expected}, client.kind
                # A weekly from night 3 and night 7, a stable from each weekly.
                if night in (3, 7):
                    promoted = f"{version(night)}-1"
                    gfxpack(key, "stream", "promote", "--from", str(repos["nightly"]), "--to",
                            str(repos["weekly"]), "--version", promoted, "--sign-key", fpr,
                            "--base-url", f"{url}/weekly", "--retain", "weekly")  # fmt: skip
                    stable = gfxpack(
                        key, "stream", "promote", "--from", str(repos["weekly"]), "--to",
                        str(repos["stable"]), "--version", promoted, "--sign-key", fpr,
                        "--base-url", f"{url}/stable", "--repo-id", "rocm-stable",
                    )  # fmt: skip
                    stable_lines = printed(stable)
                    assert "(suite stable, signed)" in stable
            listed = gfxpack(key, "stream", "list", "--repo", str(repos["nightly"]))
            nightly_builds = [line.split()[0] for line in listed.splitlines() if " UTC " in line]
            assert nightly_builds == [f"{version(n)}-1" for n in range(7, 11)]  # 4builds kept
            release = (repos["stable"] / "apt/dists/stable/Release").read_text()
            assert "Valid-Until" not in release
            assert "Valid-Until" in (repos["nightly"] / "apt/dists/stable/Release").read_text()
            # 30 days on: apt refuses the nightly's expired Release (the clock moved) ...
            refused = Client("apt", tmp_path / "later-nightly", LATER)
            refused.set_up(nightly_lines["apt"])
            done = refused.run("update")
            assert "is expired" in done.stdout + done.stderr, done.stdout + done.stderr
            # ... and every client set up for stable then installs its newest build.
            for kind in ("apt", "dnf", "zypper"):
                client = Client(kind, tmp_path / "stable" / kind, LATER)
                assert "rocm-stable" in stable_lines[kind]
                client.set_up(stable_lines[kind])
                client.update()
                assert client.installed() == {LIB: "8.2.7-1", TOOL: "8.2.7-1"}, kind
    finally:
        key.stop_agent()
