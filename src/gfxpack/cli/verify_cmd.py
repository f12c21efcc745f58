"""gfxpack verify: resolve an install against a repository and check the graph's promises."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import (
    FORMAT_NAMES,
    as_format,
    report_warnings,
    reports_errors,
    split_list,
    strict_option,
    terminal_line,
)

if TYPE_CHECKING:
    from gfxpack import verify as verify_module
    from gfxpack.formats import PackageFormat
    from gfxpack.probe import ProbeReport

# How many violations the text report spells out per format (--json has all).
SHOWN = 20


@click.command("verify")
@click.option(
    "--repo",
    "root",
    required=True,
    type=click.Path(file_okay=False),
    help="A gfxpack repo --out directory, or one apt (dists/) or rpm-md (repodata/) repository.",
)
@click.option(
    "--install",
    "names",
    multiple=True,
    help="Packages to install together (repeatable, or comma-separated), as apt-get "
    "install would: the newest version of each. Without it only the repository-wide "
    "checks run.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    callback=as_format,
    help="Verify only this format (default: every one under --repo).",
)
@click.option(
    "--system",
    type=click.Path(dir_okay=False),
    help="Installed packages as deb822 stanzas (a dpkg status file works as is); "
    "default: a bundled Debian 12 / EL 9 list with the usual system libraries.",
)
@click.option("--suite", help="apt suite, when the repository has more than one.")
@click.option(
    "--keyring",
    type=click.Path(dir_okay=False),
    help="OpenPGP public keys (binary or armored, as apt's signed-by takes): InRelease "
    "or Release.gpg, repomd.xml.asc and every RPM's header signature (dnf's gpgcheck) "
    "must be good signatures by one of them, made by a key current apt and dnf accept.",
)
@click.option(
    "--deep",
    is_flag=True,
    help="Also check every package file's size and sha256 against its index, as apt and "
    "dnf check each download; with --keyring, the signature of every .rpm in the "
    "repository, listed or not.",
)
@click.option(
    "--allow-weak-key",
    is_flag=True,
    help="Warn about, rather than fail on, a key of --keyring that signed here and that "
    "current apt (sqv) or dnf rejects: RSA under 3072 bits, DSA, or bound or signing "
    "with SHA-1.",
)
@click.option(
    "--all",
    "judge_all",
    is_flag=True,
    help="With --install, fail on findings anywhere in the repository too, not only in "
    "what installing the packages brings (elsewhere they are notes).",
)
@click.option(
    "--waivers",
    type=click.Path(dir_okay=False),
    help="A TOML file of known findings to accept, one [[waiver]] each with rule, "
    "package and reason (see the release engineer guide); a waiver that matches nothing "
    "is a warning.",
)
@click.option(
    "--expires-within",
    type=click.IntRange(0, 36_500),
    metavar="DAYS",
    help="Warn when the apt Release's Valid-Until is less than DAYS away, or past (apt "
    "then refuses the repository): time to publish or run gfxpack stream refresh.",
)
@click.option(
    "--root-probe",
    "root_probe",
    is_flag=True,
    help="With --install: then install the packages into a throwaway root with the real "
    "client, as try-install does, and probe it for the install's archs, as gfxpack probe "
    "does: every library must find its device code and kernel data there.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print one summary line.")
@strict_option
@reports_errors
def verify_command(
    root: str,
    names: tuple[str, ...],
    fmt: PackageFormat | None,
    system: str | None,
    suite: str | None,
    keyring: str | None,
    deep: bool,
    allow_weak_key: bool,
    judge_all: bool,
    waivers: str | None,
    expires_within: int | None,
    root_probe: bool,
    as_json: bool,
    quiet: bool,
    strict: bool,
) -> None:
    """Resolve an install with libsolv and check the arch rules.

    Prints the transaction of --install, then resolves every package of the
    repository on its own and holds each resolution to these rules:

    \b
      installable    every package in the repository is installable
      cross-arch     an arch-specific package (…-gfx942) pulls no device or
                     arch meta of another arch
      arch-set       a gfxarch meta (amdrocm-blas8.2, amdrocm-blas) pulls its
                     host and every device of its release
      file-conflict  no two packages of one resolution own one file

    A finding is reported with the chain of requirements that pulled the
    packages in; the exit status is then 1. With --install, only what
    installing the packages brings is judged: findings of other packages are
    printed as notes and do not fail the run (--all judges them too). A
    finding that --waivers accepts is printed as waived, with its reason;
    a waiver that matches no finding is a warning (an error with --strict).

    First, as apt and dnf do, the indexes are checked against the digests of
    Release (which must say what InRelease says) and repomd.xml; with
    --keyring, their signatures and every RPM's too, and the keys that made
    them (one current apt or dnf rejects is an error); with --deep, every
    package file. Any mismatch is an error.

    With --root-probe, the --install packages are then installed into a
    throwaway root by the format's client (apt for --format deb, dnf for rpm,
    else try-install's default) and the root probed for their archs (see
    gfxpack probe): a library that would not find its device code or kernel
    data fails the run too. --json then prints {"reports": [...],
    "root_probe": {...}}.
    """
    from gfxpack import verify as verify_module  # libsolv: only when verify runs
    from gfxpack.errors import GfxpackError
    from gfxpack.text_fields import shown

    install = split_list(names)
    if names and not install:
        # --install "" or "," asks for an install and names none: checking only the
        # repository then would answer a question nobody asked with "ok".
        raise GfxpackError(f"--install {shown(' '.join(names))}: names no package")
    if root_probe and not install:
        raise GfxpackError("--root-probe probes the root an install makes: give --install")
    accepted = verify_module.load_waivers(waivers) if waivers else ()
    with _progress(as_json or quiet) as progress:
        reports = verify_module.verify(
            Path(root),
            install,
            fmt,
            Path(system) if system else None,
            suite,
            progress,
            keyring=Path(keyring) if keyring else None,
            deep=deep,
            waivers=accepted,
            judge_all=judge_all,
            expires_within=expires_within,
            allow_weak_key=allow_weak_key,
        )
    # One warning per stale waiver, naming the formats whose repository it matches nothing in.
    stale: dict[verify_module.Waiver, list[str]] = {}
    for report in reports:
        for waiver in report.stale_waivers:
            stale.setdefault(waiver, []).append(str(report.fmt))
    # A warning about the keyring is every format's: said once.
    warnings = list(dict.fromkeys(w for r in reports for w in r.warnings))
    warnings += [
        f"waiver {w.describe()} matches no finding in {', '.join(fmts)}: remove it, or correct it"
        for w, fmts in stale.items()
    ]
    probed = _root_probe(Path(root), install, fmt, system, suite) if root_probe else None
    if as_json:  # one JSON document on stdout: the reports, or --strict's error instead
        report_warnings(warnings, strict and all(r.ok for r in reports), quiet=True)
    if as_json and probed is not None:
        from gfxpack.cli.try_install_cmd import probe_json

        document = {"reports": [r.as_dict() for r in reports], "root_probe": probe_json(probed)}
        click.echo(json.dumps(document, indent=2))
    elif as_json:
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    elif quiet:
        click.echo(_summary(reports, len(stale), failing_warnings=strict and bool(warnings)))
    else:
        for report in reports:
            _print_report(report)
    if probed is not None and not as_json:
        from gfxpack.cli.try_install_cmd import probe_text

        click.echo(probe_text(probed), nl=False)
    # With --strict, what could not be checked, or a stale waiver, fails the run like a
    # violation.
    report_warnings(warnings, strict and all(r.ok for r in reports))
    if probed is not None and not probed.ok:
        click.echo(f"error: probe: {terminal_line(probed.error() or '')}", err=True)
        if all(r.ok for r in reports):
            sys.exit(1)
    if not all(r.ok for r in reports):
        count = sum(len(r.violations) for r in reports)
        unresolved = [str(r.fmt) for r in reports if r.unresolved]
        if count or not unresolved:
            click.echo(f"error: {count} violation(s) of the package graph's rules", err=True)
        else:
            # Every finding behind the failed install was waived: say why it still fails.
            request = terminal_line(" ".join(install))
            click.echo(
                f"error: install {request} cannot be resolved ({', '.join(unresolved)}); a "
                "waiver does not change that",
                err=True,
            )
        sys.exit(1)


def _root_probe(
    repo: Path,
    install: list[str],
    fmt: PackageFormat | None,
    system: str | None,
    suite: str | None,
) -> ProbeReport:
    """The install made in a throwaway root (try-install's), probed for its archs."""
    from gfxpack.cli.try_install_cmd import install_and_probe
    from gfxpack.errors import GfxpackError

    client = {"deb": "apt", "rpm": "dnf"}.get(str(fmt)) if fmt is not None else None
    trial, report = install_and_probe(
        repo, install, client, None, False, Path(system) if system else None, [], suite,
        True, True,
    )  # fmt: skip
    if not trial.ok or report is None:
        raise GfxpackError(f"--root-probe: {trial.failure()}")
    return report


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[PackageFormat, int, int], None] | None]:
    if quiet or not sys.stderr.isatty():
        yield None
        return
    # rich only for a terminal's bar: a pipeline's verify does not import it.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        tasks: dict[PackageFormat, TaskID] = {}

        def update(fmt: PackageFormat, done: int, total: int) -> None:
            if fmt not in tasks:
                tasks[fmt] = progress.add_task(f"resolving every {fmt} package", total=total)
            progress.update(tasks[fmt], completed=done)

        yield update


def _print_report(report: verify_module.Report) -> None:
    from gfxpack.verify import RULES

    def echo(line: str) -> None:
        # Names, versions and messages come from the repository's indexes and the
        # waiver file: a control character in them must not reach the terminal.
        click.echo(terminal_line(line))

    echo(f"{report.fmt}: {report.repository}, {report.packages} packages; system: {report.system}")
    echo(f"  ok    indexes match their digests; {report.trust}")
    if report.files_checked is not None:
        echo(f"  ok    every package file matches its index ({report.files_checked} files)")
    resolution = report.resolution
    if resolution is not None and resolution.ok:
        counts: dict[str, int] = {}
        for step in resolution.steps:
            counts[step.action] = counts.get(step.action, 0) + 1
        summary = ", ".join(f"{n} to {a}" for a, n in sorted(counts.items())) or "nothing to do"
        echo(f"  install {' '.join(report.install)}: {summary}")
        width = max((len(s.name) for s in resolution.steps), default=0)
        for step in resolution.steps:
            old = f" (from {step.old_version})" if step.old_version else ""
            echo(f"    {step.action:<9} {step.name:<{width}}  {step.version}{old}")
    if report.closure is not None:
        echo(
            f"  judged: the {len(report.closure)} package(s) installing "
            f"{' '.join(report.install)} brings; findings elsewhere are notes (--all judges "
            "them too)"
        )
    if report.unresolved:
        echo(f"  FAIL  install {' '.join(report.install)}: cannot be resolved")
    for rule, text in RULES.items():
        failed = sum(v.rule == rule for v in report.violations)
        noted = sum(v.rule == rule for v in report.notes)
        waived = sum(w.finding.rule == rule for w in report.waived)
        # A request that cannot be resolved fails installable even when a waiver
        # accepts the finding that says so.
        failed += rule == "installable" and report.unresolved
        mark = "FAIL" if failed else "note" if noted else "ok"
        count = report.checked.get(rule, 0)
        extra = "".join(f"; {n} {what}" for n, what in ((waived, "waived"), (noted, "notes")) if n)
        echo(f"  {mark:<4}  {text} ({count} resolution{'s' if count != 1 else ''}{extra})")
    for violation in report.violations[:SHOWN]:
        echo(f"  {violation.rule}: {violation.message}")
        for hop in violation.path:
            echo(f"      {'requires ' + hop.via + ' -> ' if hop.via else ''}{hop.package}")
    _more(len(report.violations))
    for accepted in report.waived[:SHOWN]:
        finding = accepted.finding
        where = "" if accepted.judged else "; not in the install"
        echo(f"  waived: {finding.rule}: {finding.message} ({accepted.waiver.reason}{where})")
    _more(len(report.waived))
    for note in report.notes[:SHOWN]:
        echo(f"  note: {note.rule}: {note.message} (not in the install)")
    _more(len(report.notes))


def _more(count: int) -> None:
    if count > SHOWN:
        click.echo(f"  … and {count - SHOWN} more (see --json)")


def _summary(reports: list[verify_module.Report], stale: int, failing_warnings: bool) -> str:
    """The whole run in one line: ``ok: install X brings 29 packages (deb, rpm); 0
    findings, 1 waived, 3 notes elsewhere``. ``stale``: how many waivers matched
    nothing; ``failing_warnings``: --strict fails the run on its warnings."""
    failed = sum(len(r.violations) for r in reports)
    status = "ok" if all(r.ok for r in reports) and not failing_warnings else "FAIL"
    formats = ", ".join(str(r.fmt) for r in reports)
    first = reports[0]
    request = " ".join(first.install)
    unresolved = [str(r.fmt) for r in reports if r.resolution and not r.resolution.ok]
    if unresolved:
        scope = f"install {request} cannot be resolved ({', '.join(unresolved)})"
    elif first.closure is not None:
        sizes = sorted({len(r.closure or ()) for r in reports})
        brings = " or ".join(map(str, sizes))
        scope = f"install {request} brings {brings} package(s) ({formats})"
    elif first.install:
        scope = f"install {request} and every package ({formats})"
    else:
        scope = f"every package ({formats})"
    rules = ", ".join(sorted({v.rule for r in reports for v in r.violations}))
    counts = [
        f"{failed} finding(s)" + (f" ({rules})" if rules else ""),
        f"{sum(len(r.waived) for r in reports)} waived",
    ]
    notes = sum(len(r.notes) for r in reports)
    if first.closure is not None:
        counts.append(f"{notes} note(s) elsewhere")
    if stale:
        counts.append(f"{stale} stale waiver(s)")
    return terminal_line(f"{status}: {scope}; {', '.join(counts)}")
