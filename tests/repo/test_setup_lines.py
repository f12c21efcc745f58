"""The shell lines gfxpack repo prints are safe to paste: every value in them is checked
before use, quoted in them, and reaches the command it is meant for as it was given.

The lines are run by real shells (bash and dash) with PATH holding only stand-ins for
the commands they call (curl, tee, apt-get, dnf, cp, mktemp): each records its
arguments and what it read, so a test sees exactly what a pasted line would have done,
and nothing else can run (an unknown command is "not found")."""

from __future__ import annotations

import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.formats.package_format import shell_words
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.setup_package import (
    SetupPackage,
    check_base_url,
    setup_lines,
    write_setup_packages,
)
from gfxpack.repo.trust import PublicKey
from tests.verify.helpers import write_package

SHELLS = [shell for shell in ("bash", "dash") if shutil.which(shell)]
# The commands the printed lines call; each stand-in logs its name and arguments.
COMMANDS = ("curl", "tee", "apt-get", "dnf", "cp", "mktemp")
# Legitimate URLs whose characters a careless line would mangle or let the shell read.
TRICKY_URLS = [
    "https://repo.example.com:8443/a%2Fb/~user/c+d/with%20space/x=1",
    "http://127.0.0.1:8080/rocm",
    "https://user@repo.example.com/%24HOME/%27q%27/%25s",
    "file:///srv/my%20repo/~rocm",
]


def repo(*args: str):
    return CliRunner().invoke(cli, ["repo", *args])


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


def expected_calls(fmt, url: str, suite: str = "stable") -> tuple[list[list[str]], str]:
    """The calls the unsigned line of ``fmt`` makes for the repository at ``url``, and
    what tee writes."""
    if fmt is DEB:
        calls = [["tee", "/etc/apt/sources.list.d/gfxpack.list"], ["apt-get", "update"]]
        return calls, f"deb [trusted=yes] {url}/apt {suite} main\n"
    section = f"[gfxpack]\nname=gfxpack\nbaseurl={url}/rpm\ngpgcheck=0\n"
    return [["tee", "/etc/yum.repos.d/gfxpack.repo"]], section


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("url", TRICKY_URLS)
def test_printed_lines_pass_a_tricky_url_intact(tmp_path, stand_ins, shell, url):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    result = repo("--in", str(build), "--out", str(tmp_path / "repo"), "--base-url", url + "/")
    assert result.exit_code == 0, result.output
    printed = {line.split(":", 1)[0].strip(): line.split(":", 1)[1] for line in
               result.stdout.splitlines() if line.startswith("  ")}  # fmt: skip
    assert set(printed) == {"apt", "dnf"}
    for fmt in FORMATS:
        calls, written = expected_calls(fmt, url)
        assert stand_ins.run(shell, printed[fmt.client]) == calls
        assert stand_ins.tee_input() == written


def test_lines_for_a_local_repository_whose_path_has_spaces_and_quotes(tmp_path, stand_ins):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    out = tmp_path / "it's my $(repo) dir"
    result = repo("--in", str(build), "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = [line.split(":", 1)[1] for line in result.stdout.splitlines() if line.startswith("  ")]
    # OUT as a file: URL, percent-encoded: apt reads a space as a field separator.
    url = out.resolve().as_uri()
    assert "%20" in url and "%24%28repo%29" in url
    for fmt, line in zip(FORMATS, lines, strict=True):
        calls, written = expected_calls(fmt, url)
        assert stand_ins.run("bash", line) == calls
        assert stand_ins.tee_input() == written


def signed_lines(out: Path, base_url: str | None, with_setup: bool) -> dict:
    """setup_lines as gfxpack repo --sign-key [--setup-package] calls it."""
    key = PublicKey(binary=b"\x99key", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    keys = {fmt: fmt.key_path(out) for fmt in FORMATS}
    setup = SetupPackage("rocm-repo", base_url or "", "stable") if with_setup else None
    files = {fmt: Path(fmt.filename(setup.info(fmt, key, 0))) for fmt in FORMATS} if setup else {}
    return setup_lines(out, base_url, "stable", keys, setup, files, FORMATS)


@pytest.mark.parametrize("shell", SHELLS)
def test_signed_and_setup_package_lines_pass_a_tricky_url_intact(tmp_path, stand_ins, shell):
    url = TRICKY_URLS[0]
    check_base_url(url)
    lines = signed_lines(tmp_path / "repo", url, with_setup=False)
    keyring = "/usr/share/keyrings/gfxpack-archive-keyring.gpg"
    assert stand_ins.run(shell, lines[DEB]) == [
        ["curl", "-fsSLo", keyring, f"{url}/gfxpack-archive-keyring.gpg"],
        ["tee", "/etc/apt/sources.list.d/gfxpack.list"],
        ["apt-get", "update"],
    ]
    assert stand_ins.tee_input() == f"deb [signed-by={keyring}] {url}/apt stable main\n"
    assert stand_ins.run(shell, lines[RPM]) == [["tee", "/etc/yum.repos.d/gfxpack.repo"]]
    assert stand_ins.tee_input() == (
        f"[gfxpack]\nname=gfxpack\nbaseurl={url}/rpm\ngpgcheck=1\nrepo_gpgcheck=1\n"
        f"gpgkey={url}/rpm/RPM-GPG-KEY-gfxpack\n"
    )
    lines = signed_lines(tmp_path / "repo", url, with_setup=True)
    # The .deb is fetched into a new directory (mktemp), never a fixed name in /tmp.
    deb = f"{stand_ins.scratch}/rocm-repo_1.0-1_all.deb"
    assert stand_ins.run(shell, lines[DEB]) == [
        ["mktemp", "-d"],
        ["curl", "-fsSLo", deb, f"{url}/apt/pool/main/rocm-repo_1.0-1_all.deb"],
        ["apt-get", "install", "-y", deb],
        ["apt-get", "update"],
    ]
    assert stand_ins.run(shell, lines[RPM]) == [
        ["dnf", "install", "-y", f"{url}/rpm/Packages/rocm-repo-1.0-1.noarch.rpm"]
    ]


def test_a_local_signed_line_copies_the_published_keyring(tmp_path, stand_ins):
    out = tmp_path / "my repo"
    lines = signed_lines(out, None, with_setup=False)
    keyring = "/usr/share/keyrings/gfxpack-archive-keyring.gpg"
    calls = stand_ins.run("bash", lines[DEB])
    assert calls[0] == ["cp", str((out / "gfxpack-archive-keyring.gpg").resolve()), keyring]
    assert stand_ins.tee_input() == (
        f"deb [signed-by={keyring}] {out.resolve().as_uri()}/apt stable main\n"
    )


# --- quoting alone holds, even for a value no check would let through --------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_quoting_alone_keeps_the_shell_out_of_every_value(tmp_path, stand_ins, shell):
    """The lines' own quoting, with the checks bypassed: a command substitution, quotes,
    a ';', a backquote and a '%' in a URL, name or suite all reach the command as they
    are and nothing runs (a stand-in touch would make the sentinel)."""
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
        for fmt in FORMATS:
            line = fmt.setup_line(base, True, tmp_path, payload, tmp_path / "k.gpg", payload)
            calls = stand_ins.run(shell, line)
            assert not sentinel.exists(), (payload, line)
            if fmt is DEB:
                assert calls[0] == [
                    "curl",
                    "-fsSLo",
                    "/usr/share/keyrings/k.gpg",
                    f"{base}/gfxpack-archive-keyring.gpg",
                ]
                assert calls[1] == ["tee", f"/etc/apt/sources.list.d/{payload}.list"]
                expected = f"deb [signed-by=/usr/share/keyrings/k.gpg] {base}/apt {payload} main\n"
            else:
                assert calls == [["tee", f"/etc/yum.repos.d/{payload}.repo"]]
                expected = (
                    f"[{payload}]\nname={payload}\nbaseurl={base}/rpm\ngpgcheck=1\n"
                    f"repo_gpgcheck=1\ngpgkey={base}/rpm/RPM-GPG-KEY-gfxpack\n"
                )
            assert stand_ins.tee_input() == expected
            line = fmt.setup_package_line(base, "r_1.0-1_all.deb")
            calls = stand_ins.run(shell, line)
            assert not sentinel.exists(), (payload, line)
            url = f"{base}/{fmt.pool(Path(fmt.repo_dir)).as_posix()}/r_1.0-1_all.deb"
            assert any(url in call for call in calls), calls
    # The stand-in touch works: an unquoted substitution would have made the sentinel.
    assert stand_ins.run(shell, f"echo $(touch {shlex.quote(str(sentinel))})") == []
    assert sentinel.exists()


def test_shell_words_round_trip_through_shlex():
    words = ["printf", "%s\\n", "a b", "it's", "$(x)", "`y`", "~", "", "\\"]
    assert shlex.split(shell_words(*words)) == words
