"""The gfxpack command line: parse arguments, call the library, print.

Every command is a library call tests can make without a subprocess; these
modules only translate arguments, print results and pick exit codes. A
GfxpackError prints as ``error: ...`` lines on stderr with exit status 1; any
other exception is a bug, printed as one line asking for a report (``--debug``
shows its traceback).
"""

from __future__ import annotations

import sys

import click

from gfxpack import __version__
from gfxpack.cli.common import DEBUG, report_bug


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gfxpack")
@click.option(
    "--debug",
    is_flag=True,
    help="Show the Python traceback of an error (for bug reports).",
)
@click.pass_context
def cli(context: click.Context, debug: bool) -> None:
    """Plan, build and verify per-GPU-architecture Linux packages for ROCm-style builds."""
    context.meta[DEBUG] = debug


def main() -> None:
    try:
        cli(prog_name="gfxpack")
    except Exception as e:  # only what escapes a command's own handler (reports_errors)
        if "--debug" in sys.argv[1:]:
            raise
        report_bug(e)


# Each module registers its commands on ``cli``.
from gfxpack.cli import (  # noqa: E402, F401
    build_cmd,
    descriptors_cmd,
    descriptors_pack_cmd,
    diff_cmd,
    kpack_cmd,
    merge_cmd,
    plan_cmd,
    repo_cmd,
    report_cmd,
    split_cmd,
    verify_cmd,
    why_cmd,
)
