"""The gfxpack command line: parse arguments, call the library, print.

Every command is a library call tests can make without a subprocess; these
modules only translate arguments, print results and pick exit codes. A
GfxpackError prints as ``error: ...`` lines on stderr with exit status 1.
"""

from __future__ import annotations

import click

from gfxpack import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gfxpack")
def cli() -> None:
    """Plan, build and verify per-GPU-architecture Linux packages for ROCm-style builds."""


def main() -> None:
    cli(prog_name="gfxpack")


# Each module registers its commands on ``cli``.
from gfxpack.cli import (  # noqa: E402, F401
    build_cmd,
    descriptors_cmd,
    kpack_cmd,
    plan_cmd,
    repo_cmd,
    split_cmd,
    verify_cmd,
)
