"""What starting gfxpack costs: each subcommand imports the libraries it uses and no other.

``python -X importtime`` lists every module an invocation imports; a subcommand's
``--help`` imports what running it would (its module and the modules that module
needs), so a heavy library there that the command never uses is start-up time
paid for nothing, on every call of a pipeline and every Tab of shell completion.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import click
import click.testing
import pytest

import gfxpack.cli
from gfxpack.cli import COMMANDS, cli
from gfxpack.cli.descriptors_cmd import descriptors_group
from gfxpack.cli.lazy import LazyGroup

# Libraries that take long to import, and which commands use each when they run.
HEAVY = ("jsonschema", "solv", "createrepo_c", "rich", "zstandard", "jinja2", "msgpack")
KPACK = {"msgpack", "zstandard"}  # .kpack archives: msgpack tables, zstd frames
USES: dict[str, set[str]] = {
    "build": {"zstandard"},  # rich only for the progress bar on a terminal
    "descriptors": {"jsonschema", *KPACK},
    "descriptors list-engines": KPACK,
    "descriptors lint": {"jsonschema", *KPACK},
    "descriptors pack": KPACK,
    "diff": {"solv", "zstandard"},  # repositories are read with libsolv, .debs with zstd
    "join": {"rich", *KPACK},
    "kpack": KPACK,
    "kpack create": KPACK,
    "kpack extract": KPACK,
    "kpack list": KPACK,
    "kpack resolve": KPACK,
    "kpack verify": KPACK,
    "merge": set(),
    "plan": {"rich"},
    "repo": {"createrepo_c", "zstandard"},
    "report": {"jinja2"},
    "sign": set(),
    "split": {"rich", *KPACK},
    "verify": {"rich", "solv", "zstandard"},
    "why": {"solv", "zstandard"},
}


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level names of every module ``gfxpack ARGS`` imports, beyond what the
    interpreter imports at start-up (site and its .pth hooks)."""
    return _imports("-m", "gfxpack", *args, env=env) - _imports("-c", "pass")


def _imports(*args: str, env: dict[str, str] | None = None) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert len(names) > 10, result.stderr[-2000:]
    return names


def third_party(names: set[str]) -> set[str]:
    """The installed libraries among ``names`` (not the standard library, not a name
    the standard library merely tries, such as copy's ``org.python.core``)."""
    found = set()
    for name in names - {"gfxpack", "click"}:
        spec = importlib.util.find_spec(name)
        origin = (spec.origin or "") if spec else ""
        if "-packages" in origin or (
            spec and any("-packages" in p for p in spec.submodule_search_locations or ())
        ):
            found.add(name)
    return found


def every_command() -> list[str]:
    """Every command and subcommand, as the words that name it."""
    found = []
    for name in COMMANDS:
        found.append(name)
        command = COMMANDS[name].load()
        if isinstance(command, click.Group):
            found += [f"{name} {sub}" for sub in command.list_commands(click.Context(command))]
    return found


def test_every_command_is_known_here() -> None:
    """A new command gets an entry in USES, so its imports are checked too."""
    assert sorted(every_command()) == sorted(USES)


@pytest.mark.parametrize("args", [["--version"], ["--help"]], ids=["version", "help"])
def test_top_level_imports_click_only(args: list[str]) -> None:
    names = imported(*args)
    assert {"click", "gfxpack"} <= names
    assert third_party(names) == set()


@pytest.mark.parametrize("words", ["gfxpack ", "gfxpack d", "gfxpack --"])
def test_completion_imports_click_only(words: str) -> None:
    env = {
        "_GFXPACK_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }
    names = imported(env=env)
    assert {"click", "gfxpack"} <= names
    assert third_party(names) == set()


def test_completion_lists_commands_without_importing_them() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gfxpack"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "_GFXPACK_COMPLETE": "bash_complete",
            "COMP_WORDS": "gfxpack ",
            "COMP_CWORD": "1",
        },
        check=True,
    )
    assert {"plain,build", "plain,descriptors", "plain,verify"} <= set(result.stdout.split())


@pytest.mark.parametrize("command", sorted(USES))
def test_command_imports_only_what_it_uses(command: str) -> None:
    heavy = imported(*command.split(), "--help") & set(HEAVY)
    assert heavy <= USES[command], f"gfxpack {command} imports {sorted(heavy - USES[command])}"


@pytest.mark.parametrize("group", [cli, descriptors_group], ids=["gfxpack", "gfxpack descriptors"])
def test_table_help_is_each_commands_own(group: LazyGroup) -> None:
    """--help and completion show the table's help; it must say what the command says."""
    assert group.subcommands
    for name, entry in group.subcommands.items():
        command = entry.load()
        assert command.name == name
        for limit in (45, 60, 200):
            assert entry.short_help(limit) == command.get_short_help_str(limit), (
                f"{name}: the table's help differs from the command's"
            )


def test_every_command_module_is_registered() -> None:
    """A command module nobody registers would never run: each is named in a table."""
    tables = [*COMMANDS.values(), *descriptors_group.subcommands.values()]
    registered = {entry.location.partition(":")[0].rpartition(".")[2] for entry in tables}
    modules = {path.stem for path in Path(gfxpack.cli.__file__).parent.glob("*_cmd.py")}
    # kpack resolve lives in its own module and joins the kpack group there.
    assert modules - registered == {"resolve_cmd"}


def test_help_lists_every_command() -> None:
    result = click.testing.CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = {
        line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()
    }
    assert listed == set(COMMANDS)
