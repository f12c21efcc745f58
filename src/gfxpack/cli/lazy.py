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
        names = self.list_commands(ctx)
        if not names:
            return
        # click's layout: three times the default spacing between name and help.
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl(self._short_helps(ctx, limit))

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        commands = [
            CompletionItem(name, help=help_text)
            for name, help_text in self._short_helps(ctx, 45)  # click's default limit
            if name.startswith(incomplete)
        ]
        # Options come from click.Command's completion (click.Group's would list the
        # subcommands again, importing each).
        return commands + click.Command.shell_complete(self, ctx, incomplete)
