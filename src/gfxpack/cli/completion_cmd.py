"""gfxpack completion: the shell script that completes gfxpack's commands and options."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")

# The script runs the installed command, which answers each Tab itself (click's
# completion protocol, through this variable): it never goes stale as commands change.
PROG_NAME = "gfxpack"
COMPLETE_VAR = "_GFXPACK_COMPLETE"


@click.command("completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(SHELLS))
@click.pass_context
def completion_command(context: click.Context, shell: str) -> None:
    """Print the script that makes a shell complete gfxpack on Tab.

    SHELL is bash, zsh or fish; the script completes commands, options and their
    choices. To install it:

    \b
    bash:  gfxpack completion bash > ~/.local/share/bash-completion/completions/gfxpack
           (or add  eval "$(gfxpack completion bash)"  to ~/.bashrc)
    zsh:   add  eval "$(gfxpack completion zsh)"  to ~/.zshrc, after compinit
    fish:  gfxpack completion fish > ~/.config/fish/completions/gfxpack.fish

    A new shell then completes on Tab. The script is the same as
    _GFXPACK_COMPLETE=bash_source gfxpack (zsh_source, fish_source) prints.
    """
    complete = get_completion_class(shell)
    if complete is None:  # click knows every name of SHELLS
        raise click.UsageError(f"no completion for {shell}", context)
    root = context.find_root().command
    # As click prints it, byte for byte (the script ends with its own newline).
    click.echo(complete(root, {}, PROG_NAME, COMPLETE_VAR).source(), nl=False)
