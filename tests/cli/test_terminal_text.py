"""What a hostile file holds never reaches the terminal as control characters: record
text that ``gfxpack stream list`` prints, and every error and warning line (cli/common.py's
terminal_line, the one place messages are escaped)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors, terminal_line
from gfxpack.errors import GfxpackError
from gfxpack.formats import DEB
from gfxpack.repo.state import DATABASE
from tests.verify.helpers import write_package

# Sets the terminal's title, then rings the bell: what a planted version did.
TITLE = "\x1b]0;pwned\x07"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of one package, published by gfxpack repo."""
    base = tmp_path_factory.mktemp("terminal")
    write_package(base / "build", DEB, "amdrocm-a")
    out = base / "repo"
    result = CliRunner().invoke(cli, ["repo", "--in", str(base / "build"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def planted(repo: Path, tmp_path: Path, version: str, promoted: str | None = None) -> Path:
    """A copy of ``repo`` whose record holds one more build, written with sqlite3 as an
    attacker with write access to OUT would."""
    copy = tmp_path / "planted"
    shutil.copytree(repo, copy, symlinks=True)
    with sqlite3.connect(copy / DATABASE) as db:
        db.execute(
            "INSERT INTO builds(version, published, promoted_from) VALUES (?, ?, ?)",
            (version, 1_700_000_000, promoted),
        )
    db.close()
    return copy


def stream_list(repo: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["stream", "list", "--repo", str(repo)])
    return result.exit_code, result.stdout + result.stderr


def test_a_planted_build_is_listed(published: Path, tmp_path: Path) -> None:
    """The planting works: a well-formed row is a build stream list shows."""
    code, output = stream_list(planted(published, tmp_path, "8.2.0-1"))
    assert code == 0, output
    assert "\n  8.2.0-1 " in output


@pytest.mark.parametrize(
    ("version", "promoted"),
    [
        (f"8.2.0-1{TITLE}", None),
        (f"8.2.0{TITLE}-1", None),
        ("8.2.0-1", json.dumps({"stream": f"nightly{TITLE}", "published": 1_700_000_000})),
        ("8.2.0-1", json.dumps({"stream": "nightly\u202egnp.exe", "published": 1_700_000_000})),
    ],
    ids=["release", "rocm-version", "stream", "bidi-stream"],
)
def test_record_text_reaches_the_terminal_escaped(
    published: Path, tmp_path: Path, version: str, promoted: str | None
) -> None:
    code, output = stream_list(planted(published, tmp_path, version, promoted))
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert code == 1
    [line] = output.splitlines()
    assert line.startswith(f"error: {tmp_path / 'planted' / DATABASE}: ")
    assert "\\x1b]0;pwned\\x07" in line or "\\u202e" in line  # named, escaped


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"version 1{TITLE}", "version 1\\x1b]0;pwned\\x07"),
        ("name \u202eexe.txt", "name \\u202eexe.txt"),
        ("tab\there", "tab\\there"),
        ("plain text, 'quoted' and ünïcode", "plain text, 'quoted' and ünïcode"),
    ],
)
def test_terminal_line(text: str, shown: str) -> None:
    assert terminal_line(text) == shown


def test_every_error_line_is_escaped() -> None:
    """An error that quotes hostile text (say a package name read from an index) as it
    is: the line printed holds the escapes, not the characters."""

    @click.command()
    @reports_errors
    def failing() -> None:
        raise GfxpackError(f"amdrocm-x{TITLE}: no such package\nsecond line \u202e")

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: amdrocm-x\\x1b]0;pwned\\x07: no such package",
        "error: second line \\u202e",
    ]


def test_verify_prints_a_hostile_index_escaped(tmp_path: Path) -> None:
    """A repository whose Packages index (vouched for by its Release: the repository
    itself is the hostile input) names a version with a terminal sequence: verify's
    report spells it with escapes."""
    from tests.verify.helpers import make_repo

    root = make_repo(tmp_path, DEB, {"amdrocm-a": {}})
    suite = root / "apt/dists/stable"
    packages = suite / "main/binary-amd64/Packages"
    data = packages.read_bytes().replace(
        b"Version: 8.2.0-1\n", f"Version: 8.2.0-1{TITLE}\n".encode()
    )
    assert TITLE.encode() in data
    packages.write_bytes(data)
    digest = f" {hashlib.sha256(data).hexdigest()} {len(data)} main/binary-amd64/Packages\n"
    release = suite / "Release"
    text = re.sub(r"(?m)^ \S+ +\d+ main/binary-amd64/Packages\n", digest, release.read_text())
    release.write_text(text)
    result = CliRunner().invoke(cli, ["verify", "--repo", str(root), "--install", "amdrocm-a"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "    install   amdrocm-a  8.2.0-1\\x1b]0;pwned\\x07\n" in result.stdout
