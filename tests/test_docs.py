"""The generated documentation is current, and the README's links lead somewhere.

docs/reference/cli.md and man/gfxpack*.1 are regenerated in memory from the click
commands and compared with the files in the tree: a changed option, help text or
command fails here until ``python -m gfxpack.cli.reference`` is run. ``make docs``
(part of ``make test``) builds the site with ``--strict``, which checks every link
and anchor inside docs/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gfxpack.cli.reference import DOC_PAGE, MAN_DIR, cli_markdown, generated, walk
from tests.conftest import ROOT

REGENERATE = "stale: run python -m gfxpack.cli.reference"


def test_cli_reference_and_man_pages_are_current():
    files = generated(ROOT)
    assert ROOT / DOC_PAGE in files
    assert ROOT / MAN_DIR / "gfxpack-kpack-resolve.1" in files
    for path, text in files.items():
        assert path.is_file(), f"{path.relative_to(ROOT)} missing: {REGENERATE}"
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(ROOT)} {REGENERATE}"
    # A page of a command that no longer exists is stale too.
    assert set((ROOT / MAN_DIR).glob("gfxpack*.1")) == {p for p in files if p.suffix == ".1"}


def test_the_reference_covers_every_command_and_option():
    entries = list(walk())
    page = cli_markdown(entries)
    names = {entry.name for entry in entries}
    assert {
        "gfxpack",
        "gfxpack build",
        "gfxpack descriptors pack",
        "gfxpack kpack resolve",
    } <= names
    for entry in entries:
        assert f"\n## {entry.name}\n" in page
        for param in entry.command.params:
            for option in param.opts:
                if option.startswith("-"):
                    assert option in page, f"{entry.name}: {option}"


def test_the_help_text_does_not_depend_on_the_terminal(monkeypatch):
    first = cli_markdown(list(walk()))
    monkeypatch.setenv("COLUMNS", "40")
    assert cli_markdown(list(walk())) == first


def test_man_pages_are_installed_with_the_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data_files = config["tool"]["setuptools"]["data-files"]
    assert data_files["share/man/man1"] == [f"{MAN_DIR}/*.1"]
    assert len(list((ROOT / MAN_DIR).glob("*.1"))) > 20


def test_man_gfxpack_works_in_the_venv_make_creates():
    """An editable install leaves data-files out, so make links man/ into
    .venv/share/man/man1; man-db looks there for a bin/ on PATH (an activated venv)."""
    venv = ROOT / ".venv"
    if Path(sys.prefix) != venv or shutil.which("man") is None:
        pytest.skip("not run from the .venv make creates, or man is not installed")
    environment = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    environment["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    found = subprocess.run(
        ["man", "-w", "gfxpack-kpack-resolve"], env=environment, capture_output=True, text=True
    )
    assert found.stdout.strip() == str(venv / "share/man/man1/gfxpack-kpack-resolve.1"), (
        found.stderr
    )
    assert (
        Path(found.stdout.strip()).read_text()
        == (ROOT / MAN_DIR / "gfxpack-kpack-resolve.1").read_text()
    )


def test_readme_is_one_screen_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 50
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/reference/cli.md" in links
    for link in links:
        assert (ROOT / link).is_file(), f"README.md links to a missing {link}"


def test_every_docs_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(
        path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md")
    )
    assert "guides/release-engineer.md" in pages
    for page in pages:
        assert f": {page}\n" in nav, f"docs/{page} is not in mkdocs.yml's nav"
