"""Install packages from a gfxpack repository into a throwaway root: now ``gfxpack
try-install`` (src/gfxpack/trial/), which this script runs for its old command line.

``--format deb`` installs with apt-get, ``--format rpm`` with dnf; both run the
packages' scripts and start from stand-ins for the system packages (see
``gfxpack try-install --help``). The root is kept.

    python examples/install_root.py --repo build/demo/repo --format deb \\
        --root build/demo/root-deb amdrocm-core8.2-gfx942

is

    gfxpack try-install --repo build/demo/repo --client apt \\
        --root build/demo/root-deb amdrocm-core8.2-gfx942
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gfxpack.cli import cli

CLIENT = {"deb": "apt", "rpm": "dnf"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="gfxpack repo --out directory")
    parser.add_argument("--format", choices=sorted(CLIENT), required=True)
    parser.add_argument("--root", type=Path, required=True, help="a new or empty directory")
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args(argv)
    command = ["try-install", "--repo", str(args.repo), "--client", CLIENT[args.format]]
    cli.main([*command, "--root", str(args.root), *args.packages], prog_name="gfxpack")


if __name__ == "__main__":
    main()
