"""The global ``--debug`` flag, and the one line an unexpected exception prints without it.

Kept apart from the commands' shared helpers so that the top-level group, which
every invocation loads, needs nothing but click.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

# Context.meta key: the global --debug flag.
DEBUG = "gfxpack.debug"
REPORT_HINT = (
    "this is a bug in gfxpack; please report it with the command you ran "
    "and the output of the same command with --debug"
)


def report_bug(error: Exception) -> NoReturn:
    """An exception gfxpack did not expect: one line, a request to report it, exit 1."""
    click.echo(f"error: {bug_message(error)}", err=True)
    sys.exit(1)


def bug_message(error: Exception) -> str:
    """What an exception gfxpack did not expect says: its type, the start of its
    message, and the request to report it."""
    what = " ".join(str(error).split())[:200]
    detail = f"{type(error).__name__}: {what}" if what else type(error).__name__
    return f"unexpected {detail} ({REPORT_HINT})"
