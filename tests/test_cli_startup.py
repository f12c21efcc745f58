"""What starting gfxpack costs: each subcommand imports the libraries it uses and no other.

``python -X importtime`` lists every module an invocation imports. Shell completion
and ``--help`` of any command need its options only, so they import no library
beyond click: they run on every Tab. A command that runs imports what it uses,
and a heavy library it never uses is start-up time paid for nothing on every call
of a pipeline.
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
from tests.conftest import EXAMPLE_CONFIG

pytestmark = pytest.mark.slow  # make check skips it: a fresh interpreter started per subcommand

# Libraries that take long to import, and which commands use each when they run.
HEAVY = ("jsonschema", "solv", "createrepo_c", "rich", "zstandard", "jinja2", "msgpack")
KPACK = {"msgpack", "zstandard"}  # .kpack archives: msgpack tables, zstd frames
USES: dict[str, set[str]] = {
    "build": {"zstandard"},  # rich only for the progress bar on a terminal
    "completion": set(),
    "descriptors": set(),  # a group: its subcommands import what they use
    "descriptors list-engines": KPACK,
    "descriptors lint": {"jsonschema", *KPACK},
    "descriptors pack": KPACK,
    "detect": set(),
    "diff": {"solv", "zstandard"},  # repositories are read with libsolv, .debs with zstd
    "image": {"solv", "zstandard", "createrepo_c"},  # reads the repository as verify
    "index": set(),  # packaging only
    "init": set(),
    "join": {"rich", *KPACK},
    "kpack": set(),
    "kpack create": KPACK,
    "kpack extract": KPACK,
    "kpack list": KPACK,
    "kpack resolve": KPACK,
    "kpack verify": KPACK,
    "merge": set(),
    "plan": {"rich"},  # for the summary only (its JSON and trees do not: see below)
    "probe": KPACK,  # split binaries' references and archives
    "repo": {"createrepo_c", "zstandard"},
    "report": {"jinja2"},
    "sign": set(),
    "split": {"rich", *KPACK},
    "stream": set(),  # a group: its subcommands import what they use
    "stream list": set(),  # the record only
    "stream promote": {"createrepo_c", "zstandard"},
    "stream prune": {"createrepo_c", "zstandard"},
    "stream refresh": {"createrepo_c", "zstandard"},
    "stream remove": {"createrepo_c", "zstandard"},
    "try-install": {"solv", "zstandard", "createrepo_c"},  # reads the repository as verify
    "verify": {"solv", "zstandard"},  # rich only for the progress bar on a terminal
    "why": {"solv", "zstandard"},
}


def imported(*args: str, env: dict[str, str] | None = None, succeeds: bool = True) -> set[str]:
    """The top-level names of every module ``gfxpack ARGS`` imports, beyond what the
    interpreter imports at start-up (site and its .pth hooks). With ``succeeds`` false
    the command may end with an error of its own (one ``error:`` line), not a bug."""
    modules = imported_modules(*args, env=env, succeeds=succeeds)
    return {name.split(".")[0] for name in modules}


def imported_modules(
    *args: str, env: dict[str, str] | None = None, succeeds: bool = True
) -> set[str]:
    """Like :func:`imported`, the dotted name of every module."""
    return _imports("-m", "gfxpack", *args, env=env, succeeds=succeeds) - _imports("-c", "pass")


def _imports(*args: str, env: dict[str, str] | None = None, succeeds: bool = True) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if succeeds:
        assert result.returncode == 0, result.stderr[-2000:]
    else:
        assert result.returncode in (0, 1, 2), result.stderr[-2000:]
        assert "unexpected" not in result.stderr and "Traceback" not in result.stderr
    names = {
        line.rsplit("|", 1)[1].strip()
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


def completing(words: str) -> dict[str, str]:
    """The environment in which bash's completion runs gfxpack on Tab after ``words``."""
    return {
        "_GFXPACK_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }


@pytest.mark.parametrize("words", ["gfxpack ", "gfxpack d", "gfxpack --"])
def test_completion_imports_click_only(words: str) -> None:
    names = imported(env=completing(words))
    assert {"click", "gfxpack"} <= names
    assert third_party(names) == set()


def test_completion_lists_commands_without_importing_them() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gfxpack"],
        capture_output=True,
        text=True,
        env={**os.environ, **completing("gfxpack ")},
        check=True,
    )
    assert {"plain,build", "plain,descriptors", "plain,verify"} <= set(result.stdout.split())


def run_args(command: str, tmp: Path) -> list[str]:
    """Arguments that get ``gfxpack COMMAND`` past its options into its work, which then
    stops at its first check (an input that is not there), having imported what it uses."""
    missing, out = str(tmp / "missing"), str(tmp / "out")
    (tmp / "empty").mkdir(exist_ok=True)
    empty = str(tmp / "empty")
    release = ["--rocm-version", "8.2.0"]
    return {
        "build": ["--config", missing, "--artifacts", missing, "--out", out, *release],
        "completion": ["bash"],
        "descriptors": ["--help"],
        "descriptors list-engines": ["--root", missing],
        "descriptors lint": ["--root", missing],
        "descriptors pack": ["--descriptors", missing, "--kernels", missing,
                             "--code-objects", missing, "--out", out],
        "detect": ["--sysfs", empty],
        "diff": [missing, missing],
        "image": ["--repo", missing, "--base", missing, "--out", out, "x"],
        "index": ["--wheels", missing, "--out", out],
        "init": ["--artifacts", missing, "--out", out],
        "join": [empty, "--out", out],
        "kpack": ["--help"],
        "kpack create": [out, missing, "--group", "g", "--arch", "gfx942"],
        "kpack extract": [missing, "key", "-o", out],
        "kpack list": [missing],
        "kpack resolve": [missing, "--arch", "gfx942"],
        "kpack verify": [missing],
        "merge": [missing, "--out", out],
        "plan": ["--config", str(EXAMPLE_CONFIG), "--target", "gfx942", *release, "-q"],
        "probe": ["--root", missing, "--device", "gfx942"],
        "repo": ["--in", missing, "--out", out],
        "report": ["--build", missing, "--json"],
        "sign": [missing, "--key", "nobody"],
        "split": [empty, "--out", out],
        "stream": ["--help"],
        "stream list": ["--repo", missing],
        "stream promote": ["--from", missing, "--to", out, "--version", "8.2.0-1"],
        "stream prune": ["--repo", missing, "--retain", "nightly"],
        "stream refresh": ["--repo", missing],
        "stream remove": ["--repo", missing, "--version", "8.2.0-1"],
        "try-install": ["--repo", missing, "x"],
        "verify": ["--repo", missing],
        "why": ["--repo", missing, "--install", "x", "x"],
    }[command]  # fmt: skip


@pytest.mark.parametrize("command", sorted(USES))
def test_command_imports_only_what_it_uses(command: str, tmp_path: Path) -> None:
    heavy = imported(*command.split(), *run_args(command, tmp_path), succeeds=False) & set(HEAVY)
    assert heavy <= USES[command], f"gfxpack {command} imports {sorted(heavy - USES[command])}"


def declaring(modules: set[str]) -> set[str]:
    """The gfxpack modules among ``modules`` that are more than the command line's own
    (gfxpack.cli) and its error type: the formats, the planner, the pipeline..."""
    return {
        m
        for m in modules
        if m.startswith("gfxpack.") and m != "gfxpack.errors" and not m.startswith("gfxpack.cli")
    }


@pytest.mark.parametrize("command", sorted(USES))
def test_help_and_completion_of_a_command_load_only_its_options(command: str) -> None:
    """Completing a command's options, or showing its help, imports click and the
    command line's own modules: no library, and none of gfxpack's formats, planner
    or pipeline, which only running the command needs."""
    words = f"gfxpack {command} --"
    for what, modules in (
        (f"completing {words!r}", imported_modules(env=completing(words))),
        (f"gfxpack {command} --help", imported_modules(*command.split(), "--help")),
    ):
        assert third_party({m.split(".")[0] for m in modules}) == set(), what
        assert declaring(modules) == set(), what


def test_declaring_a_command_can_be_told_from_running_it(tmp_path: Path) -> None:
    """The check above sees the planner and the formats when a command does load them."""
    run = imported_modules("plan", *run_args("plan", tmp_path), succeeds=False)
    assert {"gfxpack.plan", "gfxpack.formats"} <= declaring(run)


def test_the_options_offer_what_the_library_knows() -> None:
    """The choices and defaults spelled in the command line (so that declaring a
    command needs no library) are the library's own."""
    from gfxpack import kpack
    from gfxpack.cli import build_cmd, common, kpack_cmd
    from gfxpack.formats import FORMATS
    from gfxpack.formats.compress import Compression
    from gfxpack.plan import Mode, PinPolicy, Variant

    assert tuple(fmt.name for fmt in FORMATS) == common.FORMAT_NAMES
    assert tuple(mode.value for mode in Mode) == common.MODES
    assert tuple(policy.value for policy in PinPolicy) == common.PIN_POLICIES
    assert tuple(variant.value for variant in Variant) == common.VARIANTS
    assert str(Compression()) == build_cmd.DEFAULT_COMPRESSION
    assert tuple(sorted(kpack.SCHEMES)) == kpack_cmd.SCHEMES
    assert kpack_cmd.DEFAULT_LEVEL == kpack.DEFAULT_LEVEL
    size = next(p for p in kpack_cmd.kpack_list.params if p.name == "max_object_size")
    assert size.type_cast_value(click.Context(kpack_cmd.kpack_list), size.default) == (
        kpack.DEFAULT_MAX_OBJECT_SIZE
    )


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
    lines = result.output.split("Commands:")[1].splitlines()
    # A name starts its row; a long summary continues on lines indented further.
    listed = {line.split()[0] for line in lines if line.strip() and not line.startswith("   ")}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize(
    ("output", "uses_rich"), [("json", False), ("tree", False), ("summary", True)]
)
def test_plan_imports_rich_only_for_its_summary(output: str, uses_rich: bool) -> None:
    """A pipeline's plan (JSON for a script) does not pay for the summary's table."""
    args = ("--config", str(EXAMPLE_CONFIG), "--target", "gfx942", "--rocm-version", "8.2.0")
    names = imported("plan", *args, "--format", output, "--package", "amdrocm-blas", "-q")
    assert ("rich" in names) is uses_rich
