"""Small things users hit: whole help summaries, a typo's suggestion, shell completion,
quiet builds and splits, the licence, and a missing --config file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.cli.descriptors_cmd import descriptors_group
from gfxpack.cli.lazy import LazyGroup
from tests.conftest import ROOT, build_example_args
from tests.fatbin.conftest import build_once
from tests.test_cli_startup import imported_modules, third_party

pytestmark = pytest.mark.slow  # make check skips it: whole commands run in child processes

GFXPACK = Path(sys.executable).with_name("gfxpack")  # the installed console script


def gfxpack(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GFXPACK), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize(
    ("words", "group"),
    [([], cli), (["descriptors"], descriptors_group)],
    ids=["top", "descriptors"],
)
def test_help_shows_each_summary_whole(words: list[str], group: LazyGroup, width: int) -> None:
    result = CliRunner().invoke(cli, [*words, "--help"], terminal_width=width)
    assert result.exit_code == 0, result.output
    listing = result.output.split("Commands:")[1]
    assert "..." not in listing
    # Summaries wrap onto more lines when narrow, at spaces or after a hyphen.
    flat = "".join(listing.split())
    for name, entry in group.subcommands.items():
        summary = entry.load().get_short_help_str(limit=10_000)  # the command's own, uncut
        assert name + "".join(summary.split()) in flat, name


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["biuld"], "no such command 'biuld'. Did you mean 'build'?"),
        (["descriptors", "lnit"], "no such command 'lnit'. Did you mean 'lint'?"),
        (["rep"], "no such command 'rep'. (Did you mean one of: 'repo', 'report'?)"),
        (["zzzz"], "no such command 'zzzz'."),
    ],
)
def test_an_unknown_command_suggests_close_names(words: list[str], message: str) -> None:
    """One line, the suggestion in it (not click's usage, hint and error lines)."""
    result = CliRunner().invoke(cli, words)
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"


def test_a_suggestion_imports_no_command() -> None:
    modules = imported_modules("biuld", succeeds=False)
    assert "gfxpack.cli.lazy" in modules
    assert not {m for m in modules if m.endswith("_cmd")}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_clicks_own_script(shell: str) -> None:
    printed = gfxpack("completion", shell)
    assert (printed.returncode, printed.stderr) == (0, "")
    assert "_GFXPACK_COMPLETE" in printed.stdout and f"{shell}_complete" in printed.stdout
    clicks = gfxpack(env={"_GFXPACK_COMPLETE": f"{shell}_source"})
    assert printed.stdout == clicks.stdout


def test_completion_imports_click_only() -> None:
    modules = imported_modules("completion", "zsh")
    assert third_party({m.split(".")[0] for m in modules}) == set()


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["completion", "tcsh"])
    assert result.exit_code == 2
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in result.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    ("words", "expected"),
    [("gfxpack bu", ["build"]), ("gfxpack completion ", ["bash", "zsh", "fish"])],
)
def test_bash_completes_with_the_printed_script(words: str, expected: list[str]) -> None:
    """The script, sourced by a real bash, answers a Tab as bash-completion asks it."""
    script = gfxpack("completion", "bash").stdout
    typed = words.split(" ")
    tab = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in typed)}); COMP_CWORD={len(typed) - 1}\n"
        "_gfxpack_completion gfxpack\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    path = f"{GFXPACK.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "--norc", "-c", tab],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


def test_build_quiet_prints_one_line_and_no_notes(example_artifacts: Path, tmp_path: Path) -> None:
    """-q keeps the summary line only: not the table, not the note that an earlier
    build's files were removed, which a build without -q prints."""
    out = tmp_path / "out"
    runner = CliRunner()
    first = runner.invoke(cli, build_example_args(example_artifacts, out, "--format", "deb"))
    assert first.exit_code == 0, first.output
    index = json.loads((out / "index.json").read_text())
    total = first.stdout.splitlines()[-1].split()  # the table's last row counts index.json
    size = sum(f["size"] for f in index["files"])
    assert total[:3] == ["total", str(len(index["files"])), f"{size:,}"]
    narrowed = ("--format", "deb", "--target", "gfx942", "-q")
    quiet = runner.invoke(cli, build_example_args(example_artifacts, out, *narrowed))
    assert quiet.exit_code == 0, quiet.output
    index = json.loads((out / "index.json").read_text())
    assert index["targets"] == ["gfx942"]  # the build ran, and removed the other targets'
    assert quiet.stderr == ""
    (line,) = quiet.stdout.splitlines()
    assert line.startswith(f"{len(index['files'])} packages in {out} (")
    # The same build without -q reports what it removed.
    narrowed_loud = ("--format", "deb", "--target", "gfx950")
    loud = runner.invoke(cli, build_example_args(example_artifacts, out, *narrowed_loud))
    assert loud.exit_code == 0, loud.output
    assert "note: " in loud.stderr and len(loud.stdout.splitlines()) > 1


@pytest.mark.slow
def test_split_quiet_prints_one_line(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One fat library split and one kept whole (device code no wrapper points at):
    -q prints one line that counts both, and no note or table."""
    hip = build_once(tmp_path_factory)
    tree = tmp_path_factory.mktemp("tree")
    (tree / "lib").mkdir()
    shutil.copy2(hip.one_file, tree / "lib" / "libone.so")
    unwrapped = hip.one_file.read_bytes().replace(b".hipFatBinSegment\0", b".hipFatBinSegmenZ\0")
    (tree / "lib" / "libbad.so").write_bytes(unwrapped)
    out = tree.parent / f"{tree.name}-out"
    result = CliRunner().invoke(
        cli, ["split", str(tree), "--out", str(out), "--name", "a_lib", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout == (
        f"{out}: 1 fat binary split, archives for 3 GPU archs "
        "(1 note: run without -q to see them)\n"
    )
    assert sorted(p.name for p in out.glob("a_lib_*")) == [
        "a_lib_generic", "a_lib_gfx1030", "a_lib_gfx906", "a_lib_gfx90a"
    ]  # fmt: skip


def test_the_license_file_is_the_one_pyproject_declares() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert text.rstrip().endswith("OTHER DEALINGS IN THE\nSOFTWARE.")


def test_a_missing_config_is_not_found_without_a_pointer(tmp_path: Path) -> None:
    missing = tmp_path / "package.json"
    args = ["plan", "--config", str(missing), "--target", "gfx942", "--rocm-version", "8.2.0"]
    result = CliRunner().invoke(cli, args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"error: {missing}: file not found\n"
    # A problem inside the file still names its JSON pointer.
    missing.write_text('[{"Package": 7}]')
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {missing}: /0/Package: ")
