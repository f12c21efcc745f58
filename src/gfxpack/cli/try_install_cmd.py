"""gfxpack try-install: install packages of a repository into a throwaway root with the
real client, and report what was installed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gfxpack.cli.common import reports_errors, split_list, terminal_line
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack.probe import ProbeReport
    from gfxpack.trial import ForeignFile, Trial

# gfxpack.trial.CLIENTS and gfxpack.trial.DEFAULT_TIMEOUT, spelled here so that declaring
# the command imports click alone (a test keeps them equal).
CLIENT_NAMES = ("apt", "dnf", "zypper")
DEFAULT_TIMEOUT = 1800


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
@click.option(
    "--probe",
    "probe",
    is_flag=True,
    help="Then run 'gfxpack probe' on the root for the install's archs (--arch): every "
    "library must find its device code and kernel data; exit 1 when one does not.",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=1),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="How long the install may take, every step of the client together; a step "
    "still running then (a script that never ends) is killed with its sandbox, the root "
    "and the client directory removed, and the error names the step.",
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
    probe: bool,
    timeout: int,
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
    directory by the next run. An install still running after --timeout
    seconds (a script waiting for what never comes) is killed with its
    sandbox and removed the same way; the error names the step that ran.

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

    With --probe, the installed root is then probed for the install's archs, as
    'gfxpack probe --root ROOT --device ARCH' does (see its help): the gate "this
    install works on gfx942".

    \b
      gfxpack try-install --repo build/repo amdrocm-core8.2-gfx942
      gfxpack try-install --repo build/repo --client apt --root /tmp/r --json \\
          amdrocm-core8.2-gfx942
      gfxpack try-install --repo build/repo --probe amdrocm-core8.2-gfx942
    """
    from gfxpack import trial as trial_module

    trial, report = install_and_probe(
        repo, packages, client, root, keep, system, split_list(archs), suite, not no_scripts,
        probe, timeout,
    )  # fmt: skip
    document = trial.as_dict()
    if report is not None:
        document["probe"] = probe_json(report)
    if as_json:
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo(text(trial), nl=False)
        if report is not None:
            click.echo(probe_text(report), nl=False)
    if not trial.ok:
        if as_json:  # the report (other_arch) stays the one JSON document on stdout
            click.echo(f"error: {terminal_line(trial.failure())}", err=True)
            sys.exit(1)
        raise trial_module.TrialError(trial.failure())
    if report is not None and not report.ok:
        if as_json:  # the document says why (probe.error): one JSON document on stdout
            sys.exit(1)
        raise GfxpackError(f"probe: {report.error()}")


def install_and_probe(
    repo: Path,
    packages: Sequence[str],
    client: str | None,
    root: Path | None,
    keep: bool,
    system: Path | None,
    archs: list[str],
    suite: str | None,
    scripts: bool,
    probe: bool,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[Trial, ProbeReport | None]:
    """try-install, then (with ``probe``, when the install succeeded) its root probed for
    the install's archs before a temporary root is removed."""
    from gfxpack import trial as trial_module

    with _probed_root(root, keep, probe) as (install_root, keep_it, scratch):
        trial = trial_module.try_install(
            repo, packages, client, install_root, keep_it, system, archs, suite, scripts, timeout
        )
        report = _probe(trial) if probe and trial.ok else None
    if scratch:  # probe's own temporary root, gone now as try-install's would be
        trial = dataclasses.replace(trial, kept=False)
    return trial, report


def probe_json(report: ProbeReport) -> dict[str, Any]:
    from gfxpack.probe import RULES

    return {
        "ok": report.ok,
        "error": report.error(),
        "findings": [f.as_json(RULES[f.family]) for f in report.findings],
    }


def probe_text(report: ProbeReport) -> str:
    lines = [f"probe: {finding.line()}" for finding in report.findings]
    lines.append(f"probe: {report.summary()}")
    return "".join(terminal_line(line) + "\n" for line in lines)


@contextlib.contextmanager
def _probed_root(
    root: Path | None, keep: bool, probe: bool
) -> Iterator[tuple[Path | None, bool, bool]]:
    """(root, keep, whether it is this command's scratch): with --probe and no --root, a
    temporary root this command removes after probing it (try-install would remove its
    own before probe reads it)."""
    if not probe or root is not None or keep:
        yield root, keep, False
        return
    with tempfile.TemporaryDirectory(prefix="gfxpack-probe-") as scratch:
        yield Path(scratch) / "root", True, True


def _probe(trial: Trial) -> ProbeReport:
    """The install's root probed for its archs; one error when it has none."""
    from gfxpack.probe import ProbeError, probe_root

    if not trial.archs:
        raise ProbeError(
            "--probe: no arch to probe for (no package named has an arch suffix; give --arch)"
        )
    return probe_root(trial.root, trial.archs)


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
