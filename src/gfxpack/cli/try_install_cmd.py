"""gfxpack try-install: install packages of a repository into a throwaway root with the
real client, and report what was installed."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import reports_errors, split_list

if TYPE_CHECKING:
    from gfxpack.trial import ForeignFile, Trial

# gfxpack.trial.CLIENTS, spelled here so that declaring the command imports click alone.
CLIENT_NAMES = ("apt", "dnf", "zypper")


@click.command("try-install")
@click.option(
    "--repo",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A gfxpack repo --out directory, or one apt (dists/) or rpm-md (repodata/) repository.",
)
@click.argument("packages", nargs=-1, required=True)
@click.option(
    "--client",
    type=click.Choice(CLIENT_NAMES),
    help="The package manager that installs: apt (apt-get, the .debs), dnf or zypper (the "
    ".rpms)  [default: dnf; apt for a repository of .debs only]",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Install into this directory, which must be new, empty or an earlier "
    "try-install root (replaced), and is kept  [default: a temporary directory]",
)
@click.option("--keep", is_flag=True, help="Keep the temporary root and print where it is.")
@click.option(
    "--arch",
    "archs",
    multiple=True,
    metavar="ARCH",
    help="GPU archs the install may hold files of (repeatable, or comma-separated)  "
    "[default: the arch suffixes of PACKAGES, e.g. gfx942 of amdrocm-core8.2-gfx942]",
)
@click.option(
    "--system",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The system packages to stand in for, as deb822 stanzas (as for verify)  "
    "[default: the bundled Debian 12 / EL 9 list]",
)
@click.option("--suite", help="apt suite, when the repository has more than one.")
@click.option(
    "--no-scripts",
    "no_scripts",
    is_flag=True,
    help="Run none of the packages' scriptlets (dnf only), so that the install needs "
    "no sandbox: for a machine whose kernel cannot make one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@reports_errors
def try_install_command(
    repo: Path,
    packages: tuple[str, ...],
    client: str | None,
    root: Path | None,
    keep: bool,
    archs: tuple[str, ...],
    system: Path | None,
    suite: str | None,
    no_scripts: bool,
    as_json: bool,
) -> None:
    """Install PACKAGES from a repository into a throwaway root and report what was installed.

    The real client installs them, as on a user's machine: apt-get, dnf or
    zypper, with its own configuration, state, cache and log in a client
    directory beside the root. Maintainer scripts and scriptlets run: dpkg's
    chrootless, rpm's chrooted into the root, which gets this machine's
    /bin/sh, update-alternatives and ldconfig for them.

    The client and every script run in a bubblewrap sandbox (bwrap, Debian's
    bubblewrap): new user, mount, PID and network namespaces, where the root
    and the client directory are the only trees that can be written, this
    machine's /usr, /etc, /bin, /lib... are read-only, /tmp, /var/tmp and /run
    are empty and private, and the network is the sandbox's own loopback, on
    which the repository is served. A script that ignores DPKG_ROOT, or leaves
    rpm's chroot, writes nothing of this machine. The kernel must allow user
    namespaces; where the sandbox cannot be made, try-install says why and
    installs nothing, unless --no-scripts (dnf) installs without running any
    scriptlet, then outside the sandbox (rpm writes the files chrooted).

    A temporary root, and the client directory, are removed when the run ends
    or is interrupted (SIGINT, SIGTERM; an interrupted --root too, or emptied
    when it was there before), and what a killed run left in the temporary
    directory by the next run.

    The root starts with the system packages the release depends on (libc6,
    python3, ... or glibc, numactl-libs, ...) installed as stand-ins: empty
    packages gfxpack writes with the name, version, Provides and Depends of
    each package of the system list that verify assumes (--system), installed
    first. The report lists them apart.

    Then it prints each package installed with the bytes of its files, the
    total, the alternatives the scripts registered, and every package and file
    of another GPU arch than --arch: a file whose path names another processor
    (blas_lib_gfx1100.kpack, .../gfx1100/...), with the package that installed
    it. The exit status is 1 when the install fails or anything of another arch
    was installed.

    \b
      gfxpack try-install --repo build/repo amdrocm-core8.2-gfx942
      gfxpack try-install --repo build/repo --client apt --root /tmp/r --json \\
          amdrocm-core8.2-gfx942
    """
    from gfxpack import trial as trial_module

    trial = trial_module.try_install(
        repo, packages, client, root, keep, system, split_list(archs), suite, not no_scripts
    )
    if as_json:
        click.echo(json.dumps(trial.as_dict(), indent=2))
    else:
        click.echo(text(trial), nl=False)
    if not trial.ok:
        raise trial_module.TrialError(trial.failure())


def text(trial: Trial) -> str:
    """The report for people."""
    from gfxpack.trial import CLIENTS
    from gfxpack.units import human

    command = CLIENTS[trial.client].command
    count = len(trial.packages)
    where = trial.root if trial.kept else f"{trial.root} (removed; --keep keeps it)"
    lines = [f"{command} installed {count} package{'s' * (count != 1)} into {where}:"]
    name_width = max([len(p.name) for p in trial.packages] + [len("total")])
    version_width = max([len(p.version) for p in trial.packages] + [0])
    for package in trial.packages:
        lines.append(
            f"  {package.name:<{name_width}}  {package.version:<{version_width}}  "
            f"{human(package.size):>10}"
        )
    lines.append(f"  {'total':<{name_width}}  {'':<{version_width}}  {human(trial.total_size):>10}")
    names = ", ".join(s.name for s in trial.stand_ins) or "none"
    lines.append(f"stand-ins for the system packages of the {trial.system}: {names}")
    if trial.scripts:
        lines.append("scripts: run in the sandbox (the root and the client directory writable)")
    else:
        lines.append(
            "scripts: none run (--no-scripts), "
            + ("in the sandbox" if trial.sandboxed else "and no sandbox")
        )
    registered = ", ".join(f"{k} -> {v}" for k, v in trial.alternatives.items())
    lines.append(f"alternatives the scripts registered: {registered or 'none'}")
    if not trial.archs:
        lines.append(
            "GPU archs not judged: no package named has an arch suffix (--arch names the "
            "archs the install may hold)"
        )
    elif trial.ok:
        lines.append(f"no package or file of another arch than {', '.join(trial.archs)}")
    else:
        lines.append(f"of another arch than {', '.join(trial.archs)}:")
        files: dict[str, list[ForeignFile]] = defaultdict(list)
        for found in trial.foreign_files:
            files[found.package].append(found)
        for name in sorted({*trial.foreign_packages, *files}):
            own = " (a package of another arch)" if name in trial.foreign_packages else ""
            lines.append(f"  {name}{own}")
            lines += [f"    {f.path} ({f.arch})" for f in files.get(name, [])]
    return "\n".join(lines) + "\n"
