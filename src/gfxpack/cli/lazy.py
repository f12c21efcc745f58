"""A click group whose subcommands are imported only when one of them runs.

Release pipelines call gfxpack dozens of times and shell completion calls it on
every Tab, so start-up is paid again and again. Importing every command module up
front would load every command's libraries (libsolv, createrepo_c, jsonschema,
jinja2, rich, zstandard...) before any of them is needed. A lazy group instead
knows each subcommand by a table entry, the ``module:attribute`` of the command
and its one-line help, so ``--help`` and completion list the commands without
importing them, and running one imports that one module only.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click
from click.shell_completion import CompletionItem

# The --help listing shows each command's whole summary (its first sentence), wrapped
# onto more lines when the terminal is narrow, rather than cut at the column width
# with "..." as click.Group does: a cut summary reads as a different sentence.
WHOLE = 10_000


@dataclass(frozen=True, slots=True)
class Subcommand:
    """Where a subcommand lives (``package.module:attribute``) and its one-line help,
    which must be the command's own (a test checks each entry against its command)."""

    location: str
    help: str

    def short_help(self, limit: int) -> str:
        """The help shortened to ``limit`` characters as click shortens a command's."""
        return click.Command(None, help=self.help).get_short_help_str(limit)

    def load(self) -> click.Command:
        module_name, _, attribute = self.location.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.location} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group of ``subcommands``, each imported the first time it is looked up."""

    def __init__(self, *args: Any, subcommands: Mapping[str, Subcommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands = dict(subcommands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.subcommands:
            self.add_command(self.subcommands[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _short_helps(self, ctx: click.Context, limit: int) -> list[tuple[str, str]]:
        """Each visible subcommand's name and one-line help, importing none of the lazy ones."""
        rows = []
        for name in self.list_commands(ctx):
            if name in self.subcommands and name not in self.commands:
                rows.append((name, self.subcommands[name].short_help(limit)))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        return rows

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = self._short_helps(ctx, WHOLE)
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0])
        # click suggests close names among the commands it has loaded only, and a lazy
        # group has loaded none: suggest among every name it knows. A word starting
        # like an option is left to click, which parses it as one.
        if name[:1].isalnum() and not ctx.resilient_parsing and not self._knows(ctx, name):
            raise click.UsageError(no_such_command(name, self.list_commands(ctx)), ctx)
        return super().resolve_command(ctx, args)

    def _knows(self, ctx: click.Context, name: str) -> bool:
        normalize = ctx.token_normalize_func
        names = {name} if normalize is None else {name, normalize(name)}
        return any(self.get_command(ctx, n) is not None for n in names)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        commands = [
            CompletionItem(name, help=help_text)
            for name, help_text in self._short_helps(ctx, 45)  # click's default limit
            if name.startswith(incomplete)
        ]
        # Options come from click.Command's completion (click.Group's would list the
        # subcommands again, importing each).
        return commands + click.Command.shell_complete(self, ctx, incomplete)


def no_such_command(name: str, known: list[str]) -> str:
    """click's message for an unknown command, with the close names among ``known``."""
    import difflib  # only on this error: every Tab imports this module

    message = f"No such command {name!r}."
    close = sorted(difflib.get_close_matches(name, known))
    if len(close) == 1:
        return f"{message} Did you mean {close[0]!r}?"
    if close:
        return f"{message} (Did you mean one of: {', '.join(map(repr, close))}?)"
    return message
