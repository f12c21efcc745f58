"""How a failed command says so: one ``error:`` line, or with ``--json`` one JSON object.

The contract, for every command (docs/reference/errors.md):

- a usage error (an unknown option, a bad or missing value) is one line on stderr,
  ``error: --pin-policy: 'x' is not one of ...``, exit status 2 (click's own four
  lines of usage, hint and error say less in more);
- any other failure is ``error:`` lines on stderr, exit status 1;
- a command given ``--json`` writes its error instead as one JSON object on stdout,
  the stream its result would have been on, so a script parses one stream:
  ``{"error": message, "reason": why, "option": the option or null, ...}``, with
  the same exit status.

Usage errors happen while click parses, before any command runs: the top-level
group (:class:`ReportingGroup`) turns each into a :class:`OneLineUsageError`, which
click then shows. Failures inside a command are reported by
:func:`gfxpack.cli.common.reports_errors` through :func:`print_json_error`.

Only click is imported here (every invocation loads this module, and shell
completion on each Tab); json and the escaping helpers only on an error.
"""

from __future__ import annotations

import re
from typing import IO, Any

import click

from gfxpack.cli.lazy import LazyGroup

JSON_OPTION = "--json"
# The reasons every command shares; an error's own ``reason`` attribute may name a finer
# one (StrictFailure: strict; kpack resolve: archive-not-found, arch-not-found, disabled).
USAGE = "usage"  # exit 2: the command line is wrong
INVALID_INPUT = "invalid-input"  # exit 1: what the command was given or found is wrong
INTERRUPTED = "interrupted"  # exit 130: Ctrl-C
BUG = "bug"  # exit 1: an exception gfxpack did not expect
# The longest help sentence a missing option's error line quotes.
SUMMARY_LIMIT = 160
# Context.meta key: the words of the whole command line, for telling whether --json is on it.
WORDS = "gfxpack.words"


def json_error(
    message: str, reason: str, option: str | None = None, **details: Any
) -> dict[str, Any]:
    """The one shape of a ``--json`` error: the message, why (one of the reasons above
    or a command's own), the option it is about (None when it is about none), then
    whatever more the command says (``details``)."""
    return {"error": message, "reason": reason, "option": option, **details}


def print_json_error(error: dict[str, Any], file: IO[Any] | None = None) -> None:
    """``error`` (a :func:`json_error`) on stdout, printed as every ``--json`` output
    is (views.dumps: indented, UTF-8 as is), without importing the views."""
    import json

    click.echo(json.dumps(error, indent=2, ensure_ascii=False), file=file)


def takes_json(command: click.Command | None) -> bool:
    """Whether ``command`` has a ``--json`` option."""
    return command is not None and any(
        isinstance(p, click.Option) and JSON_OPTION in p.opts for p in command.params
    )


def wants_json(context: click.Context | None) -> bool:
    """Whether the command of ``context`` runs with ``--json`` on (its options parsed)."""
    if context is None:
        return False
    return any(
        isinstance(p, click.Option) and JSON_OPTION in p.opts and context.params.get(p.name or "")
        for p in context.command.params
    )


class OneLineUsageError(click.UsageError):
    """A usage error shown as one ``error:`` line on stderr, or, when the command that
    failed takes ``--json`` and the command line has it, as a JSON error on stdout."""

    def __init__(self, error: click.UsageError, words: list[str]) -> None:
        super().__init__(error.format_message(), error.ctx)
        self.line, self.option = usage_message(error)
        # Whether --json is on the command line: the options are not parsed (that is what
        # failed), so the words are read; a "--" ends the options.
        before_end = words[: words.index("--")] if "--" in words else words
        self.as_json = JSON_OPTION in before_end and takes_json(self.cmd)

    def show(self, file: IO[Any] | None = None) -> None:
        if self.as_json:
            print_json_error(json_error(self.line, USAGE, self.option), file)
            return
        # common.terminal_line's escaping (common imports this module: no cycle back).
        from gfxpack.text_fields import escaped

        click.echo(f"error: {escaped(self.line)}", file=file, err=file is None)


class ReportingGroup(LazyGroup):
    """The top-level group: a usage error anywhere below it (its own options, a
    command's name, a subcommand's options and arguments) is shown as one line
    (:class:`OneLineUsageError`) instead of click's usage, hint and error."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        words = list(args)  # parsing consumes args
        try:
            context = super().make_context(info_name, args, parent, **extra)
        except click.UsageError as e:
            raise _one_line(e, words) from None
        context.meta[WORDS] = words
        return context

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            raise _one_line(e, ctx.meta.get(WORDS, [])) from None


def _one_line(error: click.UsageError, words: list[str]) -> click.UsageError:
    # No arguments to a group shows its help (click's NoArgsIsHelpError): not an error line.
    if isinstance(error, (OneLineUsageError, click.exceptions.NoArgsIsHelpError)):
        return error
    return OneLineUsageError(error, words)


def usage_message(error: click.UsageError) -> tuple[str, str | None]:
    """The one line of a usage error, gfxpack's way (``--option: what is wrong``, in
    lower case as gfxpack's other errors), and the option or argument it is about."""
    option = _option_of(error)
    if isinstance(error, click.MissingParameter) and error.param is not None:
        kind = error.param_type or error.param.param_type_name
        metavar = error.param.make_metavar(error.ctx) if error.ctx else ""
        if isinstance(error.param, click.Argument):
            text = f"missing argument {metavar or option}"
        else:
            text = f"missing {kind} {option} {metavar}".rstrip()
            if summary := _first_sentence(getattr(error.param, "help", None) or ""):
                text += f": {summary}"  # what it is, as --help says
        extra = error.param.type.get_missing_message(param=error.param, ctx=error.ctx)
        if extra:
            text += f" ({_lower_first(_flat(extra))})"
    elif isinstance(error, click.NoSuchOption):
        text = f"{error.option_name}: no such option"
        close = sorted(error.possibilities or ())
        if len(close) == 1:
            text += f"; did you mean {close[0]}?"
        elif close:
            text += f" (options like it: {', '.join(close)})"
    elif isinstance(error, click.BadParameter):
        text = _flat(error.message)
        if option and option not in text:
            text = f"{option}: {text}"
    else:
        text = _lower_first(_flat(error.format_message()))
        # click's "Option '--format' requires an argument." as "--format: requires ...".
        said = f"option '{option}' "
        if option and text.startswith(said):
            text = f"{option}: {text[len(said) :]}"
    return _lower_first(text), option


def _option_of(error: click.UsageError) -> str | None:
    """The option (its long name) or argument (its metavar) ``error`` is about."""
    if isinstance(error, click.BadParameter):
        if error.param is not None:
            if isinstance(error.param, click.Option):
                longs = [o for o in error.param.opts if o.startswith("--")]
                return (longs or error.param.opts)[0]
            return error.param.human_readable_name
        hint = error.param_hint
        if isinstance(hint, str):
            return hint.strip("'\"")
        return " / ".join(hint) if hint else None
    if isinstance(error, (click.NoSuchOption, click.BadOptionUsage)):
        return error.option_name
    return None


def _first_sentence(help_text: str) -> str:
    """The first sentence of an option's help, without its full stop; none when even
    that is too long for an error line. "e.g. 8.2.0" ends no sentence: one ends at a
    full stop before a capital."""
    first = re.split(r"\.\s+(?=[A-Z])", _flat(help_text), maxsplit=1)[0].rstrip(".")
    return first if len(first) <= SUMMARY_LIMIT else ""


def _flat(text: str) -> str:
    """``text`` on one line (click writes the choices of a missing option on several)."""
    return " ".join(text.split())


def _lower_first(text: str) -> str:
    """Click's sentences (``Invalid value``, ``No such command``) in the lower case of
    gfxpack's own messages; a word in capitals (``PATH``) stays as it is."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text
