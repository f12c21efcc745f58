"""What users read speaks for itself: no message, help text or documentation line names
the project's internal documents; the diagnostics reference explains every descriptor
diagnostic code."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.plan import plan
from tests.conftest import EXAMPLE_CONFIG, ROOT

INTERNAL = re.compile(
    r"seed ?0{3}|\bseeds?\b|Decisions? \d|§|\bsection \d|(?<![\w-])spec/|\.\./shared/spec"
)


def commands(group=cli, path=()):
    # list_commands/get_command: the groups import their commands only when asked.
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def test_every_command_is_checked():
    assert {"build", ("descriptors", "pack"), ("kpack", "resolve")} <= {
        c[0] if len(c) == 1 else c for c in commands()
    }


@pytest.mark.parametrize("command", sorted(commands()))
def test_help_names_no_internal_document(command):
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0
    assert INTERNAL.search(result.stdout) is None, result.stdout


# Every page a user reads: the README, the documentation site and the benchmark figures.
USER_PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "bench/README.md",
        *(ROOT / "docs").rglob("*.md"),
    ]
)
DIAGNOSTICS_PAGE = ROOT / "docs/reference/descriptor-diagnostics.md"


def test_user_pages_name_no_internal_document():
    assert DIAGNOSTICS_PAGE in USER_PAGES and len(USER_PAGES) > 8
    for page in USER_PAGES:
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            assert INTERNAL.search(line) is None, f"{page.relative_to(ROOT)}:{number}: {line}"


def test_plan_notes_name_no_internal_document():
    config = load_config(EXAMPLE_CONFIG)
    # xnack variants, a -devel flagged Gfxarch and targets without artifacts all make notes.
    release = plan(config.packages, ["gfx942:xnack+", "gfx1100"], "8.2.0")
    assert release.notes
    for note in release.notes:
        assert INTERNAL.search(note.message) is None, note.message


def test_internal_pattern_still_catches_what_it_is_for():
    for text in ("as seed 000 draws", "(Decision 9)", "spec §7.1", "see spec/packaging.md"):
        assert INTERNAL.search(text), text


def test_diagnostics_reference_explains_every_descriptor_code():
    source = "\n".join(path.read_text() for path in (ROOT / "src/gfxpack/descriptors").glob("*.py"))
    codes = sorted(set(re.findall(r'"(D\d{3})"', source)))
    assert len(codes) > 50
    table = [
        line for line in DIAGNOSTICS_PAGE.read_text().splitlines() if re.match(r"\| D\d", line)
    ]
    explained: set[str] = set()
    for row in table:
        cell = row.split("|")[1]
        for first, last in re.findall(r"D(\d{3})(?:–D(\d{3}))?", cell):
            explained.update(f"D{n}" for n in range(int(first), int(last or first) + 1))
        assert len(row.split("|")) == 6, row  # code, severity, meaning, what to do
    assert set(codes) <= explained, sorted(set(codes) - explained)
