"""The gfxpack command line: parse arguments, call the library, print.

Every command is a library call tests can make without a subprocess; these
modules only translate arguments, print results and pick exit codes. A
GfxpackError prints as ``error: ...`` lines on stderr with exit status 1; any
other exception is a bug, printed as one line asking for a report (``--debug``
shows its traceback). A usage error is one ``error:`` line, exit status 2; with
``--json`` any error is one JSON object on stdout instead
(:mod:`gfxpack.cli.error_output`).

Commands are imported only when they run (:mod:`gfxpack.cli.lazy`): this module
and what it imports need nothing but click, so ``--version``, ``--help`` and
shell completion start fast. A new command is one line in ``COMMANDS``.
"""

from __future__ import annotations

import sys

import click

from gfxpack import __version__
from gfxpack.cli.debug import DEBUG, report_bug
from gfxpack.cli.error_output import ReportingGroup
from gfxpack.cli.lazy import Subcommand

# name: where the command lives, and its one-line help (checked against the command's).
COMMANDS = {
    "build": Subcommand(
        "gfxpack.cli.build_cmd:build_command",
        "Build every package of the release as .deb and .rpm files.",
    ),
    "completion": Subcommand(
        "gfxpack.cli.completion_cmd:completion_command",
        "Print the script that makes a shell complete gfxpack on Tab.",
    ),
    "descriptors": Subcommand(
        "gfxpack.cli.descriptors_cmd:descriptors_group",
        "Load, list and lint hipDNN kernel descriptors (arch_content trees).",
    ),
    "detect": Subcommand(
        "gfxpack.cli.detect_cmd:detect_command",
        "Name the AMD GPUs of this machine and print the commands that install for them.",
    ),
    "diff": Subcommand(
        "gfxpack.cli.diff_cmd:diff_command",
        "Compare two releases: packages added and removed, dependencies changed, files "
        "added, removed and changed (by digest) in each package, files moved between "
        "packages, and sizes per package and per GPU arch.",
    ),
    "image": Subcommand(
        "gfxpack.cli.image_cmd:image_command",
        "Build an OCI container image per GPU arch from a repository and a base image.",
    ),
    "index": Subcommand(
        "gfxpack.cli.index_cmd:index_command",
        "Write a static Python package index (PEP 503 and PEP 691) of the wheels in a directory.",
    ),
    "init": Subcommand(
        "gfxpack.cli.init_cmd:init_command",
        "Write a starter package.json for an artifacts tree (or a gfxpack split output).",
    ),
    "join": Subcommand(
        "gfxpack.cli.split_cmd:join",
        "Rebuild the input of 'gfxpack split' from its output, byte for byte.",
    ),
    "kpack": Subcommand(
        "gfxpack.cli.kpack_cmd:kpack_group",
        "Create, list, extract and verify .kpack device-code archives.",
    ),
    "merge": Subcommand(
        "gfxpack.cli.merge_cmd:merge_command",
        "Join the OUT directories of a release's shards (gfxpack build --shard K/N) into OUT.",
    ),
    "plan": Subcommand(
        "gfxpack.cli.plan_cmd:plan_command",
        "Plan every package of a release: names, kinds and dependencies.",
    ),
    "probe": Subcommand(
        "gfxpack.cli.probe_cmd:probe_command",
        "Check that each library of an installed root finds its GPU code for a device.",
    ),
    "repo": Subcommand(
        "gfxpack.cli.repo_cmd:repo_command",
        "Publish built packages as an apt and an rpm-md repository.",
    ),
    "report": Subcommand(
        "gfxpack.cli.report_cmd:report_command",
        "A release report of a build: what each GPU arch's users download.",
    ),
    "sign": Subcommand(
        "gfxpack.cli.sign_cmd:sign_command",
        "Add OpenPGP signatures to .rpm FILES, as rpmsign --addsign does.",
    ),
    "split": Subcommand(
        "gfxpack.cli.split_cmd:split",
        "Split the fat binaries of IN into host files and one .kpack archive per GPU arch.",
    ),
    "stream": Subcommand(
        "gfxpack.cli.stream_cmd:stream_group",
        "List, prune, promote and remove builds of a release stream's repository.",
    ),
    "try-install": Subcommand(
        "gfxpack.cli.try_install_cmd:try_install_command",
        "Install PACKAGES from a repository into a throwaway root and report what was installed.",
    ),
    "verify": Subcommand(
        "gfxpack.cli.verify_cmd:verify_command",
        "Resolve an install with libsolv and check the arch rules.",
    ),
    "why": Subcommand(
        "gfxpack.cli.why_cmd:why_command",
        "Why installing --install brings PACKAGE in, or why it does not.",
    ),
}


@click.group(
    cls=ReportingGroup,
    subcommands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="gfxpack")
@click.option(
    "--debug",
    is_flag=True,
    help="Show the Python traceback of an error (for bug reports).",
)
@click.pass_context
def cli(context: click.Context, debug: bool) -> None:
    """Plan, build and verify per-GPU-architecture Linux packages for ROCm-style builds.

    A failure prints 'error:' lines on stderr and exits 1; a usage error is one
    such line naming the option, exit 2. With --json, a command prints its error
    instead as one JSON object on stdout: {"error": message, "reason": why,
    "option": the option or null}.
    """
    context.meta[DEBUG] = debug


def main() -> None:
    try:
        cli(prog_name="gfxpack")
    except Exception as e:  # only what escapes a command's own handler (reports_errors)
        if "--debug" in sys.argv[1:]:
            raise
        report_bug(e)
