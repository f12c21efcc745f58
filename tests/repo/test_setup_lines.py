"""The shell lines gfxpack repo prints are safe to paste: every value in them is checked
before use, quoted in them, and reaches the command it is meant for as it was given.

The lines are run by real shells (bash and dash) with PATH holding only stand-ins for
the commands they call (curl, tee, apt-get, dnf, zypper, rpm, cp, mktemp): each records
its arguments and what it read, so a test sees exactly what a pasted line would have
done, and nothing else can run (an unknown command is "not found")."""

from __future__ import annotations

import json
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.repo import publish
from gfxpack.repo.backends import backend, shell_words
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.setup_package import (
    SetupPackage,
    check_base_url,
    setup_lines,
    write_setup_packages,
)
from gfxpack.repo.trust import PublicKey, key_path
from tests.verify.helpers import write_package

# make check skips it: the printed setup lines run by a shell, apt and dnf.
pytestmark = pytest.mark.slow

SHELLS = [shell for shell in ("bash", "dash") if shutil.which(shell)]
# The commands the printed lines call; each stand-in logs its name and arguments.
COMMANDS = ("curl", "tee", "apt-get", "dnf", "zypper", "rpm", "cp", "mktemp")
# Legitimate URLs whose characters a careless line would mangle or let the shell read.
TRICKY_URLS = [
    "https://repo.example.com:8443/a%2Fb/~user/c+d/with%20space/x=1",
    "http://127.0.0.1:8080/rocm",
    "https://user@repo.example.com/%24HOME/%27q%27/%25s",
    "file:///srv/my%20repo/~rocm",
]


def repo(*args: str):
    return CliRunner().invoke(cli, ["repo", *args])


def printed_lines(output: str) -> dict[str, str]:
    """Package manager -> the setup line gfxpack repo printed for it."""
    lines = [line.split(":", 1) for line in output.splitlines() if line.startswith("  ")]
    return {client.strip(): line.strip() for client, line in lines}


def one_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    return errors[0]


class StandIns:
    """A directory of stand-in commands and what they were called with."""

    def __init__(self, where: Path) -> None:
        self.bin = where / "bin"
        self.log = where / "log"
        self.scratch = where / "scratch"
        self.bin.mkdir(parents=True)
        self.scratch.mkdir()
        for name in COMMANDS:
            # One record per call: the name, the argument count, the arguments, NUL after
            # each; tee also logs what it read.
            body = 'printf "%s\\0" "${0##*/}" "$#" "$@" >> "$LOG"\n'
            if name == "tee":
                body += f'{shutil.which("cat")} > "$LOG.stdin"\n'
            if name == "mktemp":
                body += 'echo "$SCRATCH"\n'
            script = self.bin / name
            script.write_text("#!/bin/sh\n" + body)
            script.chmod(0o755)

    def run(self, shell: str, line: str) -> list[list[str]]:
        """Run ``line`` in ``shell``; the calls it made, each [name, args...]."""
        self.log.unlink(missing_ok=True)
        env = {"PATH": str(self.bin), "LOG": str(self.log), "SCRATCH": str(self.scratch)}
        done = subprocess.run(
            [shutil.which(shell) or shell, "-c", line],
            env=env,
            cwd=self.scratch,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        logged = self.log.read_bytes() if self.log.exists() else b""
        fields = logged.decode().split("\0")[:-1]
        calls = []
        while fields:
            name, count = fields[0], int(fields[1])
            calls.append([name, *fields[2 : 2 + count]])
            fields = fields[2 + count :]
        return calls

    def tee_input(self) -> str:
        return Path(f"{self.log}.stdin").read_text()


@pytest.fixture
def stand_ins(tmp_path) -> StandIns:
    return StandIns(tmp_path / "stand-ins")


def planted(tmp_path: Path) -> tuple[Path, tuple[int, int, bytes]]:
    """A file outside OUT that a hostile value names, and what it must stay."""
    target = tmp_path / "planted"
    target.write_bytes(b"keep me\n")
    return target, state(target)


def state(path: Path) -> tuple[int, int, bytes]:
    info = path.stat()
    return info.st_ino, info.st_nlink, path.read_bytes()


# --- hostile values: one error, before anything is written -------------------------------


def hostile_urls(sentinel: Path) -> list[str]:
    return [
        f"https://repo.example.com/x';touch {sentinel};'",
        f"https://repo.example.com/$(touch {sentinel})",
        f"https://repo.example.com/`touch {sentinel}`",
        f'https://repo.example.com/x" && touch {sentinel} && "',
        "https://repo.example.com/a b",
        "https://repo.example.com/a\nb",
        "https://repo.example.com/a\tb",
        "https://repo.example.com/\x1b[31mred",
        "https://repo.example.com/\x7f",
        "https://repo.example.com/é",
        "https://repo.example.com/a,https://evil.example.com",
        "https://repo.example.com/a?x=1",
        "https://repo.example.com/a#frag",
        "https://repo.example.com/a\\b",
        "https://repo.example.com/%zz",
        "https://repo.example.com:99999/",
        "https://repo.example.com:port/",
        "https:///no-host",
        "https://user@/no-host",
        "file://host.example.com/srv/repo",
        "ftp://repo.example.com/",
        "HTTPS://repo.example.com/",
        "repo.example.com/rocm",
        "",
    ]


def test_each_hostile_base_url_is_one_error_naming_the_option(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    target, before = planted(tmp_path)
    sentinel = tmp_path / "ran"
    out = tmp_path / "repo"
    for url in hostile_urls(sentinel):
        result = repo("--in", str(build), "--out", str(out), "--base-url", url)
        message = one_error(result)
        assert result.stdout == ""  # no line to paste
        assert message.startswith(f"error: --base-url {url!r}: an http://, https:// or file:// ")
        assert not out.exists(), url
    assert not sentinel.exists() and state(target) == before


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--suite", "stable\nSigned-By: /tmp/evil.gpg", "--suite 'stable\\nSigned-By"),
        ("--suite", "stable';touch {sentinel};'", "--suite \"stable';touch"),
        ("--suite", "$(touch {sentinel})", "--suite '$(touch"),
        ("--setup-package", "r;touch {sentinel}", "--setup-package 'r;touch"),
        ("--setup-package", "$(touch {sentinel})", "--setup-package '$(touch"),
        ("--setup-package", "rocm+repo", "--setup-package 'rocm+repo'"),
        ("--setup-package", "Rocm-repo", "--setup-package 'Rocm-repo'"),
        ("--setup-package", "r" * 101, "at most 100 characters"),
        ("--setup-version", "1.0';touch {sentinel};'", "--setup-version \"1.0';touch"),
        ("--setup-version", "1.0\n", "--setup-version '1.0\\n'"),
        ("--setup-version", "1:2.0", "--setup-version '1:2.0'"),
        ("--setup-version", "1.0-2", "--setup-version '1.0-2'"),
        ("--setup-version", "v1.0", "--setup-version 'v1.0'"),
        ("--setup-version", "1" * 101, "at most 100 characters"),
    ],
)
def test_hostile_suite_and_setup_package_values_are_one_error(tmp_path, option, value, expected):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    target, before = planted(tmp_path)
    sentinel = tmp_path / "ran"
    value = value.format(sentinel=sentinel)
    out = tmp_path / "repo"
    # Checked before the key is looked for: no gpg is needed to be refused.
    setup = ["--setup-package", "rocm-repo", "--sign-key", "NO-SUCH-KEY"]
    args = ["--in", str(build), "--out", str(out), "--base-url", "https://repo.example.com/r"]
    result = repo(*args, *setup, option, value)
    assert expected in one_error(result)
    assert not out.exists() and not sentinel.exists() and state(target) == before


def test_the_setup_package_checks_its_own_values(tmp_path):
    """The library call checks too, not only the command line: its suite goes into the
    sources file it installs."""
    key = PublicKey(binary=b"\x99key", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    setup = SetupPackage("rocm-repo", "https://repo.example.com", "stable\nSigned-By: /x")
    with pytest.raises(RepoError, match=r"--suite 'stable\\nSigned-By: /x'"):
        write_setup_packages(setup, key, FORMATS, tmp_path / "made", 0)
    assert not (tmp_path / "made").exists()


# --- legitimate values arrive intact ------------------------------------------------------


def section(url: str, key_url: str | None = None, zypper: bool = False, **names) -> str:
    """The .repo section a line writes for the repository at ``url``."""
    repo_id = names.get("repo_id", "gfxpack")
    lines = [f"[{repo_id}]", f"name={names.get('repo_name', repo_id)}", f"baseurl={url}/rpm"]
    lines += ["type=rpm-md", "enabled=1", "autorefresh=1"] if zypper else []
    lines += ["gpgcheck=1", "repo_gpgcheck=1", f"gpgkey={key_url}"] if key_url else ["gpgcheck=0"]
    return "".join(f"{line}\n" for line in lines)


def expected_calls(client: str, url: str, suite: str = "stable", repo_id: str = "gfxpack"):
    """The calls the unsigned line for ``client`` makes for the repository at ``url``,
    and what its tee writes."""
    if client == "apt":
        calls = [["tee", f"/etc/apt/sources.list.d/{repo_id}.list"], ["apt-get", "update"]]
        return calls, f"deb [trusted=yes] {url}/apt {suite} main\n"
    if client == "dnf":
        return [["tee", f"/etc/yum.repos.d/{repo_id}.repo"]], section(url, repo_id=repo_id)
    calls = [["tee", f"/etc/zypp/repos.d/{repo_id}.repo"], ["zypper", "refresh", repo_id]]
    return calls, section(url, zypper=True, repo_id=repo_id)


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("url", TRICKY_URLS)
def test_printed_lines_pass_a_tricky_url_intact(tmp_path, stand_ins, shell, url):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    result = repo("--in", str(build), "--out", str(tmp_path / "repo"), "--base-url", url + "/")
    assert result.exit_code == 0, result.output
    printed = printed_lines(result.stdout)
    assert list(printed) == ["apt", "dnf", "zypper"]
    for client, line in printed.items():
        calls, written = expected_calls(client, url)
        assert stand_ins.run(shell, line) == calls
        assert stand_ins.tee_input() == written


def test_lines_for_a_local_repository_whose_path_has_spaces_and_quotes(tmp_path, stand_ins):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    out = tmp_path / "it's my $(repo) dir"
    result = repo("--in", str(build), "--out", str(out))
    assert result.exit_code == 0, result.output
    printed = printed_lines(result.stdout)
    # OUT as a file: URL, percent-encoded: apt reads a space as a field separator.
    url = out.resolve().as_uri()
    assert "%20" in url and "%24%28repo%29" in url
    assert list(printed) == ["apt", "dnf", "zypper"]
    for client, line in printed.items():
        calls, written = expected_calls(client, url)
        assert stand_ins.run("bash", line) == calls
        assert stand_ins.tee_input() == written


def signed_lines(out: Path, base_url: str | None, with_setup: bool, **names) -> dict:
    """setup_lines as gfxpack repo --sign-key [--setup-package] calls it; package
    manager -> its line."""
    key = PublicKey(binary=b"\x99key", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    keys = {fmt: key_path(fmt, out) for fmt in FORMATS}
    setup = SetupPackage("rocm-repo", base_url or "", "stable") if with_setup else None
    files = {fmt: Path(fmt.filename(setup.info(fmt, key, 0))) for fmt in FORMATS} if setup else {}
    by_format = setup_lines(out, base_url, "stable", keys, files, FORMATS, RepositoryNames(**names))
    return {client: line for lines in by_format.values() for client, line in lines.items()}


@pytest.mark.parametrize("shell", SHELLS)
def test_signed_and_setup_package_lines_pass_a_tricky_url_intact(tmp_path, stand_ins, shell):
    url = TRICKY_URLS[0]
    check_base_url(url)
    lines = signed_lines(tmp_path / "repo", url, with_setup=False)
    keyring = "/usr/share/keyrings/gfxpack-archive-keyring.gpg"
    assert stand_ins.run(shell, lines["apt"]) == [
        ["curl", "-fsSLo", keyring, f"{url}/gfxpack-archive-keyring.gpg"],
        ["tee", "/etc/apt/sources.list.d/gfxpack.list"],
        ["apt-get", "update"],
    ]
    assert stand_ins.tee_input() == f"deb [signed-by={keyring}] {url}/apt stable main\n"
    # dnf and zypper check the repository with the key beside repomd.xml's signature.
    key_url = f"{url}/rpm/repodata/repomd.xml.key"
    assert stand_ins.run(shell, lines["dnf"]) == [["tee", "/etc/yum.repos.d/gfxpack.repo"]]
    assert stand_ins.tee_input() == section(url, key_url)
    assert stand_ins.run(shell, lines["zypper"]) == [
        ["rpm", "--import", key_url],
        ["tee", "/etc/zypp/repos.d/gfxpack.repo"],
        ["zypper", "refresh", "gfxpack"],
    ]
    assert stand_ins.tee_input() == section(url, key_url, zypper=True)
    lines = signed_lines(tmp_path / "repo", url, with_setup=True)
    # The .deb is fetched into a new directory (mktemp), never a fixed name in /tmp.
    deb = f"{stand_ins.scratch}/rocm-repo_1.0-1_all.deb"
    assert stand_ins.run(shell, lines["apt"]) == [
        ["mktemp", "-d"],
        ["curl", "-fsSLo", deb, f"{url}/apt/pool/main/rocm-repo_1.0-1_all.deb"],
        ["apt-get", "install", "-y", deb],
        ["apt-get", "update"],
    ]
    rpm = f"{url}/rpm/Packages/rocm-repo-1.0-1.noarch.rpm"
    assert stand_ins.run(shell, lines["dnf"]) == [["dnf", "install", "-y", rpm]]
    # zypper checks the setup package's signature: the key is imported first.
    assert stand_ins.run(shell, lines["zypper"]) == [
        ["rpm", "--import", key_url],
        ["zypper", "install", "-y", rpm],
    ]


def test_a_local_signed_line_copies_the_published_keyring(tmp_path, stand_ins):
    out = tmp_path / "my repo"
    lines = signed_lines(out, None, with_setup=False)
    keyring = "/usr/share/keyrings/gfxpack-archive-keyring.gpg"
    calls = stand_ins.run("bash", lines["apt"])
    assert calls[0] == ["cp", str((out / "gfxpack-archive-keyring.gpg").resolve()), keyring]
    assert stand_ins.tee_input() == (
        f"deb [signed-by={keyring}] {out.resolve().as_uri()}/apt stable main\n"
    )
    # rpm --import reads a file: URL without decoding its %20: the path it is given.
    calls = stand_ins.run("bash", lines["zypper"])
    assert calls[0] == ["rpm", "--import", str((out / "rpm/repodata/repomd.xml.key").resolve())]


# --- the names users' machines see ----------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_the_repository_id_and_name_reach_every_line(tmp_path, stand_ins, shell):
    """--repo-id names the files each line writes and zypper's alias; --repo-name is what
    dnf and zypper show, as it was given (quotes, '$', '%' and spaces in it)."""
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    url = "https://repo.example.com/rocm"
    title = "ROCm 8.2 — it's $HOME's 100% \\ `x`"
    result = repo(
        "--in", str(build), "--out", str(tmp_path / "repo"), "--base-url", url,
        "--repo-id", "rocm-8.2_main", "--repo-name", title,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    printed = printed_lines(result.stdout)
    assert list(printed) == ["apt", "dnf", "zypper"]
    calls, written = expected_calls("apt", url, repo_id="rocm-8.2_main")
    assert stand_ins.run(shell, printed["apt"]) == calls
    assert stand_ins.tee_input() == written
    names = {"repo_id": "rocm-8.2_main", "repo_name": title}
    assert stand_ins.run(shell, printed["dnf"]) == [["tee", "/etc/yum.repos.d/rocm-8.2_main.repo"]]
    assert stand_ins.tee_input() == section(url, **names)
    assert stand_ins.run(shell, printed["zypper"]) == [
        ["tee", "/etc/zypp/repos.d/rocm-8.2_main.repo"],
        ["zypper", "refresh", "rocm-8.2_main"],
    ]
    assert stand_ins.tee_input() == section(url, zypper=True, **names)


def test_json_gives_each_formats_lines_by_package_manager(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    result = repo("--in", str(build), "--out", str(tmp_path / "repo"), "--json")
    assert result.exit_code == 0, result.output
    by_format = {r["format"]: r["setup"] for r in json.loads(result.stdout)}
    assert {fmt: list(lines) for fmt, lines in by_format.items()} == {
        "deb": ["apt"],
        "rpm": ["dnf", "zypper"],
    }
    assert by_format["rpm"]["zypper"].endswith("&& zypper refresh gfxpack")


def test_a_signed_line_installs_the_keyring_under_the_repository_id(tmp_path, stand_ins):
    lines = signed_lines(tmp_path / "repo", "https://r.example.com", False, repo_id="rocm")
    keyring = "/usr/share/keyrings/rocm-archive-keyring.gpg"
    assert stand_ins.run("bash", lines["apt"])[:2] == [
        ["curl", "-fsSLo", keyring, "https://r.example.com/gfxpack-archive-keyring.gpg"],
        ["tee", "/etc/apt/sources.list.d/rocm.list"],
    ]
    assert f"[signed-by={keyring}]" in stand_ins.tee_input()


def test_the_setup_package_installs_files_named_by_the_repository_id(tmp_path):
    key = PublicKey(binary=b"\x99key", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    setup = SetupPackage("rocm-repo", "https://r.example.com", "stable", "1.0", "rocm", "ROCm")
    assert [path for path, _ in backend(DEB).setup_files(setup, key)] == [
        "/etc/apt/sources.list.d/rocm.sources",
        "/usr/share/keyrings/rocm-archive-keyring.gpg",
    ]
    rpm_files = dict(backend(RPM).setup_files(setup, key))
    assert list(rpm_files) == [
        "/etc/yum.repos.d/rocm.repo",
        "/etc/zypp/repos.d/rocm.repo",
        "/etc/pki/rpm-gpg/RPM-GPG-KEY-rocm",
    ]
    assert rpm_files["/etc/zypp/repos.d/rocm.repo"].startswith(b"[rocm]\nname=ROCm\n")
    # The package keeps its own name.
    assert DEB.filename(setup.info(DEB, key, 0)) == "rocm-repo_1.0-1_all.deb"


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        (
            "--origin",
            "ROCm\nLabel: evil",
            "--origin 'ROCm\\nLabel: evil': a newline is not allowed",
        ),
        (
            "--origin",
            "a,b",
            "--origin 'a,b': expected one line of printable characters without ','",
        ),
        ("--origin", " ROCm", "not beginning or ending with a space"),
        ("--origin", "", "--origin '': expected one line"),
        ("--origin", "x" * 101, "101 characters are too many"),
        ("--label", "ROCm\x1b[31m", "--label 'ROCm\\x1b[31m': an escape character is not allowed"),
        ("--label", "l=x,o=y", "--label 'l=x,o=y': expected one line"),
        ("--label", "ROCm\u202e", "the bidirectional control U+202E is not allowed"),
        ("--repo-id", "../../etc/evil", "--repo-id '../../etc/evil': expected a repository id"),
        ("--repo-id", "rocm;touch {sentinel}", "--repo-id 'rocm;touch"),
        ("--repo-id", "-rf", "--repo-id '-rf': expected a repository id"),
        ("--repo-id", "rocm repo", "--repo-id 'rocm repo'"),
        ("--repo-id", "rocm+1", "--repo-id 'rocm+1'"),
        ("--repo-id", "", "--repo-id ''"),
        ("--repo-name", "ROCm\n[evil]", "--repo-name 'ROCm\\n[evil]': a newline is not allowed"),
        ("--repo-name", "ROCm\r", "a carriage return is not allowed"),
        ("--repo-name", " ", "--repo-name ' ': expected one line of printable characters"),
        ("--repo-name", "x" * 201, "201 characters are too many"),
    ],
)
def test_hostile_names_are_one_error_before_anything_is_written(tmp_path, option, value, expected):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    target, before = planted(tmp_path)
    sentinel = tmp_path / "ran"
    out = tmp_path / "repo"
    value = value.format(sentinel=sentinel)
    for setup in ((), ("--setup-package", "rocm-repo", "--sign-key", "NO-SUCH-KEY")):
        args = ["--in", str(build), "--out", str(out), "--base-url", "https://r.example.com"]
        result = repo(*args, *setup, option, value)
        assert expected in one_error(result), setup
        assert result.stdout == ""
        assert not out.exists() and not sentinel.exists() and state(target) == before


def test_the_library_checks_the_names_too(tmp_path):
    """publish and setup_lines refuse what the command line would: the Release they
    write and the lines they print hold the names as they are."""
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    with pytest.raises(RepoError, match=r"--origin 'a\\nb': a newline is not allowed"):
        publish(build, tmp_path / "repo", "stable", 0, names=RepositoryNames(origin="a\nb"))
    assert not (tmp_path / "repo").exists()
    with pytest.raises(RepoError, match=r"--repo-id 'a/b'"):
        setup_lines(tmp_path, None, "stable", {}, {}, FORMATS, RepositoryNames(repo_id="a/b"))
    setup = SetupPackage("rocm-repo", "https://r.example.com", "stable", repo_name="a\nb")
    key = PublicKey(binary=b"\x99key", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    with pytest.raises(RepoError, match=r"--repo-name 'a\\nb'"):
        write_setup_packages(setup, key, FORMATS, tmp_path / "made", 0)
    assert not (tmp_path / "made").exists()


# --- quoting alone holds, even for a value no check would let through --------------------


def quoted_calls(client: str, payload: str) -> tuple[str, list[list[str]], str]:
    """What the signed line for ``client`` calls and writes when the URL path, suite, id
    and name are all ``payload``."""
    base = f"https://repo.example.com/{payload}"
    key_url = f"{base}/rpm/repodata/repomd.xml.key"
    names = {"repo_id": payload, "repo_name": payload}
    if client == "apt":
        keyring = f"/usr/share/keyrings/{payload}-archive-keyring.gpg"
        return (
            client,
            [
                ["curl", "-fsSLo", keyring, f"{base}/gfxpack-archive-keyring.gpg"],
                ["tee", f"/etc/apt/sources.list.d/{payload}.list"],
                ["apt-get", "update"],
            ],
            f"deb [signed-by={keyring}] {base}/apt {payload} main\n",
        )
    if client == "dnf":
        calls = [["tee", f"/etc/yum.repos.d/{payload}.repo"]]
        return client, calls, section(base, key_url, **names)
    calls = [
        ["rpm", "--import", key_url],
        ["tee", f"/etc/zypp/repos.d/{payload}.repo"],
        ["zypper", "refresh", payload],
    ]
    return client, calls, section(base, key_url, zypper=True, **names)


@pytest.mark.parametrize("shell", SHELLS)
def test_quoting_alone_keeps_the_shell_out_of_every_value(tmp_path, stand_ins, shell):
    """The lines' own quoting, with the checks bypassed: a command substitution, quotes,
    a ';', a backquote and a '%' in a URL, id, name or suite all reach the command as
    they are and nothing runs (a stand-in touch would make the sentinel)."""
    sentinel = tmp_path / "ran"
    touch = stand_ins.bin / "touch"
    touch.write_text(f'#!/bin/sh\nexec {shutil.which("touch")} "$@"\n')
    touch.chmod(touch.stat().st_mode | stat.S_IXUSR)
    payloads = (
        f"$(touch {sentinel})",
        f"`touch {sentinel}`",
        f"';touch {sentinel};'",
        f'";touch {sentinel};"',
        f"\\';touch {sentinel};#",
        f"$({shutil.which('touch')} {sentinel})",  # no PATH needed
        "%s%n%2F\\n",
        "-e -n",
    )
    for payload in payloads:
        base = f"https://repo.example.com/{payload}"
        names = RepositoryNames(payload, payload, payload, payload)
        for fmt in FORMATS:
            lines = backend(fmt).setup_lines(
                base, True, tmp_path, payload, tmp_path / "k.gpg", names
            )
            for client, line in lines.items():
                calls = stand_ins.run(shell, line)
                assert not sentinel.exists(), (payload, line)
                assert (client, calls, stand_ins.tee_input()) == quoted_calls(client, payload)
            for client, line in backend(fmt).setup_package_lines(base, "r_1.0-1_all.deb").items():
                calls = stand_ins.run(shell, line)
                assert not sentinel.exists(), (payload, line)
                url = f"{base}/{backend(fmt).pool(Path(fmt.repo_dir)).as_posix()}/r_1.0-1_all.deb"
                assert any(url in call for call in calls), (client, calls)
    # The stand-in touch works: an unquoted substitution would have made the sentinel.
    assert stand_ins.run(shell, f"echo $(touch {shlex.quote(str(sentinel))})") == []
    assert sentinel.exists()


def test_shell_words_round_trip_through_shlex():
    words = ["printf", "%s\\n", "a b", "it's", "$(x)", "`y`", "~", "", "\\"]
    assert shlex.split(shell_words(*words)) == words
