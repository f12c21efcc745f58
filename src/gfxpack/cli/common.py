"""What every command shares: error reporting, target lists, release options, notes."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, TypeVar

import click

from gfxpack.cli.debug import DEBUG, bug_message, report_bug
from gfxpack.cli.error_output import (
    BUG,
    INTERRUPTED,
    INVALID_INPUT,
    json_error,
    print_json_error,
    wants_json,
)
from gfxpack.errors import GfxpackError, StrictFailure

if TYPE_CHECKING:
    from gfxpack.formats import PackageFormat
    from gfxpack.plan import Note, PlanOptions, ReleasePlan
    from gfxpack.verify.waivers import Waiver

P = ParamSpec("P")
R = TypeVar("R")
SEPARATORS = re.compile(r"[\s,;]+")

# What the options offer, spelled here so that declaring a command (for --help and
# shell completion) imports click alone, not the formats and the planner; a test
# checks each against the library's own list.
FORMAT_NAMES = ("deb", "rpm")  # gfxpack.formats.FORMATS
MODES = ("kpack", "single-arch")  # gfxpack.plan.Mode
PIN_POLICIES = ("family", "exact", "minimum", "upstream")  # gfxpack.plan.PinPolicy
VARIANTS = ("", "asan")  # gfxpack.plan.Variant
MAX_OBJECT_SIZE = "1G"  # gfxpack.kpack.DEFAULT_MAX_OBJECT_SIZE


def as_format(
    ctx: click.Context, _param: click.Parameter, value: str | None
) -> PackageFormat | None:
    """A --format / --pkg-type choice (click.Choice(FORMAT_NAMES)) as its format. Shell
    completion parses the options too (resilient parsing, and the command never runs):
    then nothing is converted, so a Tab imports no formats."""
    if value is None or ctx.resilient_parsing:
        return None
    from gfxpack.formats import format_named

    return format_named(value)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """A GfxpackError becomes ``error: ...`` lines and exit 1; Ctrl-C exit 130; any other
    exception one line with a request to report it, exit 1 (``--debug``: the traceback).
    With ``--json`` each is instead one JSON error object on stdout, same exit status
    (error_output: the one shape, docs/reference/errors.md)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        debug = _debugging()
        as_json = wants_json(click.get_current_context(silent=True))
        try:
            return command(*args, **kwargs)
        except GfxpackError as e:
            if debug:
                traceback.print_exc()
            if as_json:
                # An error class may name a finer reason (ResolveError, StrictFailure): a
                # word for scripts to branch on, never a sentence.
                reason = getattr(e, "reason", None)
                if not (isinstance(reason, str) and re.fullmatch(r"[a-z][a-z0-9-]*", reason)):
                    reason = INVALID_INPUT
                print_json_error(json_error(str(e) or type(e).__name__, reason))
                sys.exit(1)
            for line in str(e).splitlines() or [type(e).__name__]:
                click.echo(f"error: {terminal_line(line)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            message = "interrupted; nothing partial was left behind"
            if as_json:
                print_json_error(json_error(message, INTERRUPTED))
            else:
                click.echo(f"error: {message}", err=True)
            sys.exit(130)
        except BrokenPipeError:
            # The reader went away (| head): stop quietly, as other tools do; stdout
            # points at /dev/null so that flushing it at exit cannot fail again.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except click.UsageError as e:
            # Raised by the command itself, after parsing: the top-level group shows it
            # (one line, or JSON) and needs the command's context to tell whether it can.
            if e.ctx is None:
                e.ctx = click.get_current_context(silent=True)
            raise
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # click's own: exits
        except Exception as e:
            if debug:
                raise
            if as_json:
                print_json_error(json_error(bug_message(e), BUG))
                sys.exit(1)
            report_bug(e)

    return wrapper


def terminal_line(text: str) -> str:
    """``text`` as one line for a terminal: a message may quote what a hostile file
    holds (a package name from an index, a version from the record), and a control
    character in it (ESC, a bidirectional override) must not reach the terminal as one.
    The one place messages are escaped; the escapes are text_fields.escaped's."""
    from gfxpack.text_fields import escaped  # not at import: --help loads no library

    return escaped(text)


def _debugging() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context and context.meta.get(DEBUG))


def split_list(values: tuple[str, ...]) -> list[str]:
    """Repeatable options that also take comma, space or ';' separated lists."""
    return [item for value in values for item in SEPARATORS.split(value) if item]


def release_options(command: Callable[P, R]) -> Callable[P, R]:
    """The options that shape a release plan, shared by plan and build."""
    options = [
        click.option(
            "--config",
            "config_path",
            required=True,
            type=click.Path(dir_okay=False),
            help="TheRock package.json (a JSON array of base packages).",
        ),
        click.option(
            "--rocm-version", required=True, help="Release version, e.g. 8.2.0 (names use 8.2)."
        ),
        click.option(
            "--release",
            default="1",
            show_default=True,
            help="Package release / revision: DEB version V-R, RPM Release R.",
        ),
        click.option(
            "--pin-policy",
            default="family",
            show_default=True,
            type=click.Choice(PIN_POLICIES),
            help="family: '=' within a family and from metas, '>=' elsewhere; exact; "
            "minimum; upstream: only metapackages pin.",
        ),
        click.option(
            "--build-variant",
            default="",
            type=click.Choice(VARIANTS),
            help="asan: -asan names and the core-asan-X.Y prefix.",
        ),
        click.option(
            "--install-prefix",
            default=None,
            help="Install prefix, an absolute path [default: /opt/rocm/core-X.Y]. With / "
            "files install at the paths they have in the artifacts (usr/lib/x.so at "
            "/usr/lib/x.so): the distribution's own paths.",
        ),
        click.option(
            "--allow-missing-deps",
            is_flag=True,
            help="Omit amdrocm dependencies that are undefined or disabled, with a "
            "warning, instead of failing.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def plan_options(
    mode: str,
    pin_policy: str,
    build_variant: str,
    install_prefix: str | None,
    allow_missing_deps: bool,
) -> PlanOptions:
    from gfxpack.formats.payload import install_path_problem
    from gfxpack.plan import MissingDependencies, Mode, PinPolicy, PlanOptions, Variant
    from gfxpack.text_fields import shown

    if install_prefix is not None:
        # A trailing '/' (what shell completion adds) names the same directory.
        given, install_prefix = install_prefix, install_prefix.rstrip("/") or install_prefix[:1]
        if problem := install_path_problem(install_prefix):
            raise GfxpackError(f"--install-prefix {shown(given)}: {problem}")
    return PlanOptions(
        mode=Mode(mode),
        pin_policy=PinPolicy(pin_policy),
        variant=Variant(build_variant),
        install_prefix=install_prefix,
        missing_dependencies=(
            MissingDependencies.WARN if allow_missing_deps else MissingDependencies.ERROR
        ),
    )


def strict_option(command: Callable[P, R]) -> Callable[P, R]:
    """``--strict``: every warning the command would print is an error (exit 1)."""
    return click.option(
        "--strict",
        is_flag=True,
        help="Treat every warning as an error: report them all and exit 1.",
    )(command)


def report_warnings(warnings: Sequence[str], strict: bool, quiet: bool = False) -> None:
    """Warnings on stderr (none with ``quiet``); with ``strict`` they stop the command."""
    if strict and warnings:
        raise StrictFailure(warnings)
    if not quiet:
        for warning in warnings:
            click.echo(f"warning: {terminal_line(warning)}", err=True)


def waivers_option(command: Callable[P, R]) -> Callable[P, R]:
    """``--waivers FILE`` of plan and build: verify's waiver file, for their warnings."""
    return click.option(
        "--waivers",
        "waivers_path",
        type=click.Path(dir_okay=False),
        help="A TOML file of known warnings to accept, one [[waiver]] each with rule "
        "(such as dependency-cycle), package and reason: the file verify --waivers takes "
        "(see the release engineer guide). A waived warning is printed as waived, a "
        "waiver that matches no warning is a warning itself: with --strict, only new "
        "warnings and stale waivers fail.",
    )(command)


def load_plan_waivers(path: str | None) -> tuple[Waiver, ...]:
    """The waivers of ``--waivers`` (none without it)."""
    if path is None:
        return ()
    from gfxpack.verify.waivers import load_waivers

    return load_waivers(path)


def sort_out_warnings(
    notes: Sequence[Note], waivers: Sequence[Waiver]
) -> tuple[list[Note], list[tuple[Note, Waiver]], list[Waiver]]:
    """(the warnings no waiver accepts, each waived one with its waiver, the waivers of
    plan and build warnings that accepted none). Verify's waivers are passed by."""
    if not waivers:
        return list(notes), [], []  # and most runs need not load verify
    from gfxpack.plan import WarningRule
    from gfxpack.verify.rules import Violation
    from gfxpack.verify.waivers import sort_out

    ours = [w for w in waivers if w.rule in set(WarningRule)]
    used: set[Waiver] = set()
    kept: list[Note] = []
    waived: list[tuple[Note, Waiver]] = []
    for note in notes:
        # A warning as verify's finding: the same matching, rule and package glob.
        finding = Violation(str(note.rule or ""), "", note.message, packages=note.packages)
        _, accepted = sort_out([finding], ours, used, judged=True)
        if accepted:
            waived.append((note, accepted[0].waiver))
        else:
            kept.append(note)
    return kept, waived, [w for w in ours if w not in used]


def print_notes(
    warnings: Sequence[str],
    release_plan: ReleasePlan,
    verbose: bool = False,
    strict: bool = False,
    quiet: bool = False,
    waivers: Sequence[Waiver] = (),
) -> None:
    """Config warnings and plan notes on stderr (informational ones only if verbose);
    with ``strict`` any warning stops the command before anything is written. A warning
    one of ``waivers`` accepts is printed as waived; a waiver accepting none is a
    warning (stale)."""
    from gfxpack.plan import Severity

    notes = [n for n in release_plan.notes if n.severity is Severity.WARNING]
    kept, waived, stale = sort_out_warnings(notes, waivers)
    if not quiet:
        for note, waiver in waived:
            click.echo(f"waived: {terminal_line(note.message)} ({waiver.reason})", err=True)
    report_warnings(
        [
            *warnings,
            *(n.message for n in kept),
            *(
                f"waiver {w.describe()} matches no warning of this release: remove it, "
                "or correct it"
                for w in stale
            ),
        ],
        strict,
        quiet,
    )
    if verbose and not quiet:
        for note in release_plan.notes:
            if note.severity is not Severity.WARNING:
                click.echo(f"{note.severity}: {note.message}", err=True)


class ByteSize(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    """A size in bytes: 1073741824, 512M, 2G, 2GiB (powers of 1024)."""

    name = "SIZE"
    _UNITS: ClassVar[dict[str, int]] = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}
    # ASCII digits, few enough for int(): \d would also take an Arabic-indic digit, and
    # int() refuses more than 4,300 digits with a ValueError.
    _SYNTAX = re.compile(r"^\s*([0-9]{1,20})\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
    # A file offset (off_t): no size past it is one a file can have.
    LARGEST = 2**63 - 1

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = self._SYNTAX.match(str(value))
        size = int(match[1]) << self._UNITS[match[2].lower()] if match else 0
        if not 0 < size <= self.LARGEST:
            shown = repr(value) if len(str(value)) <= 40 else repr(str(value)[:40]) + "..."
            self.fail(
                f"{shown}: expected a size such as 1073741824, 512M or 2G (at most 8 EiB)",
                param,
                ctx,
            )
        return size


def max_object_size_option(command: Callable[P, R]) -> Callable[P, R]:
    """``--max-object-size``: one name, one default, for every command that reads code
    objects (split, join, kpack, kpack resolve, descriptors)."""
    return click.option(
        "--max-object-size",
        type=ByteSize(),
        default=MAX_OBJECT_SIZE,
        show_default=True,
        help="Refuse any code object (or decompressed offload bundle) larger than this "
        "before reading it: a forged size must not cost memory. Accepts K, M, G suffixes.",
    )(command)
