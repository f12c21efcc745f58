"""Graphviz's ``dot``: Graphviz source in, SVG, PNG or JSON out."""

from __future__ import annotations

import shutil
import subprocess

from gfxpack.errors import GfxpackError

# What dot may be asked for, by name of its -T output format.
OUTPUTS = ("svg", "png", "json")


class GraphvizError(GfxpackError):
    """dot is missing or refused the graph."""


def render(source: str, output: str) -> bytes:
    """``source`` laid out and drawn by dot as ``output`` (svg, png or json)."""
    if output not in OUTPUTS:
        raise ValueError(f"dot output {output!r}: expected one of {', '.join(OUTPUTS)}")
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizError(
            f"drawing {output} needs Graphviz's dot, which is not installed "
            "(Debian/Ubuntu: apt-get install graphviz; Fedora: dnf install graphviz); "
            "--format dot prints the Graphviz source without it"
        )
    result = subprocess.run(
        [dot, f"-T{output}"], input=source.encode("utf-8"), capture_output=True, check=False
    )
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraphvizError(f"dot -T{output} failed: {message[0] if message else 'no output'}")
    return result.stdout
