"""The one error contract (docs/reference/errors.md): a usage error is one ``error:``
line naming the option, exit 2; with ``--json`` every failure is one JSON object on
stdout, ``{"error", "reason", "option", ...}``, exit 1 (2 for usage).

The commands come from the click tree: a new command is covered without a line here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors
from gfxpack.cli.error_output import (
    BUG,
    INTERRUPTED,
    INVALID_INPUT,
    USAGE,
    takes_json,
    usage_message,
)
from gfxpack.errors import GfxpackError
from tests.test_cli_startup import every_command

MISSING = "/nonexistent-gfxpack-input/x"  # what a command is given for each required value
EMPTY = "{empty directory}"  # replaced by one
# Commands the default failing input (every required value a path that does not exist)
# does not fail with an error of their own (exit 1): their failing input, and why.
FAILING: dict[str, list[str]] = {
    # Without these, what they read is this machine's (its GPUs, its descriptors).
    "detect": ["--sysfs", MISSING],
    "descriptors list-engines": ["--root", MISSING],
    # Their input must exist (click checks it: a usage error).
    "descriptors pack": ["--descriptors", EMPTY, "--kernels", MISSING, "--out", MISSING,
                         "--code-objects", EMPTY],
    "join": [EMPTY, "--out", MISSING],
    "split": [EMPTY, "--out", MISSING],
    "kpack resolve": [MISSING, "--arch", "gfx942"],
    # A missing archive is a finding of its report ("ok": false), not an error: the one
    # error kpack verify has is a usage error.
    "kpack verify": [MISSING, "--max-object-size", "0"],
}  # fmt: skip
# diff's exit status is diff(1)'s: 2 on errors, 1 means "they differ".
ERROR_STATUS = {"diff": 2}


def command_named(words: str) -> click.Command:
    command: click.Command = cli
    for word in words.split():
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), word)
        assert found is not None, words
        command = found
    return command


JSON_COMMANDS = [words for words in every_command() if takes_json(command_named(words))]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def failing_input(words: str) -> list[str]:
    """Each required option and argument of the command, with a value that cannot work."""
    if words in FAILING:
        return FAILING[words]
    args: list[str] = []
    for param in command_named(words).params:
        if not param.required:
            continue
        value = param.type.choices[0] if isinstance(param.type, click.Choice) else MISSING
        args += [param.opts[0], value] if isinstance(param, click.Option) else [str(value)]
    return args


def json_error_of(result: Result) -> dict[str, Any]:
    """The JSON error object a failed ``--json`` run printed, checked against the one
    schema; stderr holds no error line (the object is the report)."""
    assert not [line for line in result.stderr.splitlines() if line.startswith("error:")]
    document = json.loads(result.stdout)
    assert isinstance(document, dict), result.stdout
    assert isinstance(document["error"], str) and document["error"], document
    assert isinstance(document["reason"], str) and document["reason"], document
    assert document["option"] is None or isinstance(document["option"], str), document
    assert "\n" not in document["error"] or document["reason"] != USAGE
    return document


def test_the_commands_with_json_are_found() -> None:
    """The tree walk finds them (a walk that found none would test nothing)."""
    assert {"verify", "kpack resolve", "descriptors lint", "stream list"} <= set(JSON_COMMANDS)
    assert "build" not in JSON_COMMANDS  # no --json option


@pytest.mark.parametrize("words", JSON_COMMANDS)
def test_a_json_command_reports_a_failure_as_one_json_object(
    words: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each command with --json, given an input it refuses: one JSON error object on
    stdout, no error text, the exit status of an error, nothing written."""
    for variable in ("HIPDNN_DESCRIPTOR_DIR", "HIPDNN_DESCRIPTOR_RUNTIME_DIR"):
        monkeypatch.delenv(variable, raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    given = [str(empty) if arg == EMPTY else arg for arg in failing_input(words)]
    result = invoke(*words.split(), *given, "--json")
    error = json_error_of(result)
    # The failing inputs are the command's own errors, not usage errors, where it has any.
    assert error["reason"] == (USAGE if words == "kpack verify" else INVALID_INPUT), error
    expected = 2 if error["reason"] == USAGE else ERROR_STATUS.get(words, 1)
    assert result.exit_code == expected, (result.exit_code, error)
    assert "Traceback" not in result.output
    assert not Path(MISSING).parent.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["empty"] and not any(empty.iterdir())


@pytest.mark.parametrize("words", JSON_COMMANDS)
def test_a_json_command_reports_a_usage_error_as_one_json_object(words: str) -> None:
    """Parsing fails before the command runs, yet the error is JSON: --json is on the
    command line."""
    result = invoke(*words.split(), "--json", "--no-such-option-here")
    assert result.exit_code == 2
    assert json_error_of(result) == {
        "error": "--no-such-option-here: no such option",
        "reason": USAGE,
        "option": "--no-such-option-here",
    }


def test_a_bad_json_value_names_the_option() -> None:
    result = invoke("kpack", "list", MISSING, "--max-object-size", "lots", "--json")
    assert result.exit_code == 2
    error = json_error_of(result)
    assert error["option"] == "--max-object-size"
    assert error["error"] == (
        "--max-object-size: 'lots': expected a size such as 1073741824, 512M or 2G (at most 8 EiB)"
    )


def test_json_after_the_end_of_options_is_no_json() -> None:
    """After "--" the word is an argument: the error is the one line."""
    result = invoke("kpack", "resolve", "--", "--json")
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_a_command_without_json_reports_text() -> None:
    result = invoke("plan", "--json")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "error: --json: no such option\n"


def test_kpack_resolve_keeps_its_own_fields() -> None:
    """A command says more beside the shared fields: kpack resolve names the binary."""
    result = invoke("kpack", "resolve", MISSING, "--arch", "gfx942", "--json")
    assert result.exit_code == 1
    error = json_error_of(result)
    assert error == {
        "error": f"{MISSING}: no such file",
        "reason": INVALID_INPUT,
        "option": None,
        "binary": MISSING,
        "arch": "gfx942",
    }


def value_option(command: click.Command) -> tuple[str, str] | None:
    """An option of ``command`` that takes a value, and a value it refuses (None when it
    refuses none: a value it refuses is then the option without its value)."""
    options = [p for p in command.params if isinstance(p, click.Option) and not p.is_flag]
    for option in options:
        if isinstance(option.type, click.Choice) or option.type.name in {"integer", "SIZE"}:
            return option.opts[0], "not-a-value-it-takes"
    return (options[0].opts[0], "") if options else None


VALUE_COMMANDS = [w for w in every_command() if value_option(command_named(w)) is not None]


def test_the_commands_with_value_options_are_found() -> None:
    assert len(VALUE_COMMANDS) > len(every_command()) // 2
    assert {"plan", "build", "kpack list", "verify"} <= set(VALUE_COMMANDS)


@pytest.mark.parametrize("words", VALUE_COMMANDS)
def test_a_bad_option_value_is_one_error_line(words: str) -> None:
    choice = value_option(command_named(words))
    assert choice is not None
    option, value = choice
    # The only words after the command: click checks what was given before what is
    # missing. An option without its value is the last word, so it cannot take another.
    result = invoke(*words.split(), option, *([value] if value else []))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {option}: "), line


@pytest.mark.parametrize("words", every_command())
def test_an_unknown_option_is_one_error_line(words: str) -> None:
    result = invoke(*words.split(), "--no-such-option-here")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "error: --no-such-option-here: no such option\n"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["plan"], "error: missing option --config FILE: TheRock package.json (a JSON array "
         "of base packages)"),
        (["kpack", "list"], "error: missing argument ARCHIVE"),
        (["completion", "tcsh"], "error: SHELL: 'tcsh' is not one of 'bash', 'zsh', 'fish'."),
        (["plan", "--format"], "error: --format: requires an argument."),
        (["kpack", "resolve", "--jsn"], "error: --jsn: no such option; did you mean --json?"),
        (["plan", "--pin-polcy"], "error: --pin-polcy: no such option; did you mean --pin-policy?"),
        (["kpack", "resolve"], "error: give one of PATH and --venv"),  # the command's own
    ],
)  # fmt: skip
def test_each_kind_of_usage_error_reads_as_gfxpack_errors_do(args: list[str], line: str) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"{line}\n")


def test_usage_message_names_what_a_command_refuses() -> None:
    """A command's own BadParameter with a hint and no parameter names the hint."""
    error = click.BadParameter("expected gfx942 or alike", param_hint="'--arch'")
    assert usage_message(error) == ("--arch: expected gfx942 or alike", "--arch")


def test_no_arguments_to_a_group_still_shows_its_help() -> None:
    result = invoke("kpack")
    assert "Commands:" in result.output and "error:" not in result.output


@click.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--fail", type=click.Choice(["input", "bug", "interrupt"]))
@reports_errors
def failing(as_json: bool, fail: str) -> None:
    """A command that fails as asked, through the shared handler of every command."""
    if fail == "input":
        raise GfxpackError("first line\nsecond line")
    if fail == "bug":
        raise KeyError("nobody expected it")
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("fail", "status", "reason", "message"),
    [
        ("input", 1, INVALID_INPUT, "first line\nsecond line"),
        ("bug", 1, BUG, "unexpected KeyError: 'nobody expected it' (this is a bug in"),
        ("interrupt", 130, INTERRUPTED, "interrupted; nothing partial was left behind"),
    ],
)
def test_every_failure_of_a_command_is_json_under_json(
    fail: str, status: int, reason: str, message: str
) -> None:
    result = CliRunner().invoke(failing, ["--json", "--fail", fail])
    assert result.exit_code == status
    error = json_error_of(result)
    assert (error["reason"], error["option"]) == (reason, None)
    assert error["error"].startswith(message)
    text = CliRunner().invoke(failing, ["--fail", fail])
    assert (text.exit_code, text.stdout) == (status, "")
    assert text.stderr.startswith(f"error: {message.splitlines()[0]}")
