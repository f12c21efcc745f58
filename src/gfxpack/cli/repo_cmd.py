"""gfxpack repo: publish a build as an apt and an rpm-md repository."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from gfxpack.cli.common import reports_errors, strict_option, terminal_line


def _warn(message: str) -> None:
    click.echo(f"warning: {terminal_line(message)}", err=True)


@click.command("repo")
@click.option(
    "--in",
    "builds",
    required=True,
    multiple=True,
    type=click.Path(file_okay=False),
    help="A gfxpack build --out directory (repeatable). Its index.json says which files.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="The repository root: OUT/apt and OUT/rpm are created or extended.",
)
@click.option(
    "--suite",
    help="apt suite (dists/SUITE): a plain name of letters, digits and ._+-. A "
    "repository has one suite. Default: the repository's, stable for a new one.",
)
@click.option(
    "--sign-key",
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs the indexes: writes InRelease and "
    "Release.gpg (apt), and repodata/repomd.xml.asc with the public key beside it as "
    "repodata/repomd.xml.key (dnf's and zypper's repo_gpgcheck). gpg's GNUPGHOME applies.",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Where OUT will be served (https://example.com/rocm): the printed setup lines "
    "and the setup package use BASE/apt and BASE/rpm. Characters other than letters, "
    "digits and -._~/:@+= must be percent-encoded (%20 for a space). Default: the "
    "repository's (remembered from the run that gave it), else OUT as a file: URL.",
)
@click.option(
    "--setup-package",
    metavar="NAME",
    help="Also publish a package NAME of each format that configures apt (a .sources "
    "file with Signed-By) or dnf and zypper (a .repo file with gpgcheck=1 and "
    "repo_gpgcheck=1) for --base-url and installs the signing key. Needs --sign-key.",
)
@click.option(
    "--setup-version",
    default="1.0",
    show_default=True,
    help="Version of the setup package; raise it when --base-url, the key, --repo-id or "
    "--repo-name changes.",
)
@click.option(
    "--origin",
    help="The apt repository's Origin (a Release field): what apt-cache policy shows as "
    "o= and what users pin by (Pin: release o=ORIGIN). One line, no ','. Default: the "
    "repository's, gfxpack for a new one.",
)
@click.option(
    "--label",
    help="The apt repository's Label (a Release field): what apt-cache policy shows as "
    "l= (Pin: release l=LABEL). One line, no ','. Default: the repository's, gfxpack "
    "for a new one.",
)
@click.option(
    "--codename",
    metavar="NAME",
    help="The apt repository's Codename (a Release field, n= in pins): a plain name of "
    "letters, digits and ._+-. Default: the repository's, the suite for a new one.",
)
@click.option(
    "--keep-generations",
    type=int,
    metavar="N",
    help="Keep the indexes of the last N publishes fetchable (apt by-hash/, rpm-md "
    "repodata/ files), and the package files they name, so a machine that read an "
    "earlier InRelease or repomd.xml still finds what it names. Default: the "
    "repository's, 3 for a new one.",
)
@click.option(
    "--valid-for",
    type=int,
    metavar="DAYS",
    help="apt's Release says Valid-Until: DAYS after its Date; apt then refuses a "
    "Release older than that (a mirror that stopped updating). 0: no end. Default: the "
    "repository's, no end for a new one.",
)
@click.option(
    "--repo-id",
    metavar="ID",
    help="What users' machines call the repository: the files the printed lines and the "
    "setup package install (/etc/apt/sources.list.d/ID.list or ID.sources, "
    "/usr/share/keyrings/ID-archive-keyring.gpg, /etc/yum.repos.d/ID.repo, "
    "/etc/zypp/repos.d/ID.repo) and the id dnf repolist and zypper repos list. Letters, "
    "digits and ._-. Default: the repository's, else the --setup-package NAME, else "
    "gfxpack.",
)
@click.option(
    "--repo-name",
    metavar="TEXT",
    help="The name dnf and zypper show for the repository (name= of its .repo file; "
    "they replace $basearch and $releasever in it). One line. Default: the repository's, "
    "else the repository id.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="When another gfxpack repo run is publishing into OUT: wait for it to finish, "
    "or fail at once.",
)
@click.option(
    "--retain",
    metavar="POLICY",
    help="Also prune the builds this retention policy no longer keeps: 30d, 52w, 2y (age), "
    "120builds (count), all, or a stream's name (dev=30d, nightly=120builds, weekly=52w, "
    "rc=2y, stable=all). The newest build always stays (see gfxpack stream prune).",
)
@click.option(
    "--unsigned",
    is_flag=True,
    help="Publish unsigned indexes into a repository whose indexes were signed (without "
    "it, that is refused: machines set up with its key would stop updating).",
)
@click.option(
    "--allow-unsigned-packages",
    is_flag=True,
    help="Publish RPMs that are not signed by --sign-key into the signed repository "
    "(without it, that is refused: its setup says gpgcheck=1, so dnf and zypper would "
    "refuse them). The repository's setup package and printed lines then say "
    "gpgcheck=0, from this run on.",
)
@click.option(
    "--extra-key",
    "extra_keys",
    multiple=True,
    metavar="FPR",
    help="Also publish this public key (repeatable; its 40-digit fingerprint) in the "
    "repository's keyrings (apt's, repodata/repomd.xml.key) and setup package, beside "
    "--sign-key's, without signing with it: machines set up either way then trust both, "
    "the first two steps of a key rotation (see the release streams guide). RPMs may be "
    "signed by it. Remembered: every later repo and stream run publishes it, until "
    "--extra-key is given again (it replaces the remembered keys) or --drop-extra-keys.",
)
@click.option(
    "--drop-extra-keys",
    is_flag=True,
    help="Stop publishing the remembered --extra-key keys: the last step of a key "
    "rotation (raise --setup-version with it).",
)
@click.option(
    "--allow-weak-key",
    is_flag=True,
    help="Sign with a --sign-key that current apt (sqv) or dnf rejects (RSA under 3072 "
    "bits, DSA, bound with SHA-1), with a warning; without it, that is refused.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option(
    "-q", "--quiet", is_flag=True, help="Only each format's summary line, no setup lines."
)
@strict_option
@reports_errors
def repo_command(
    builds: tuple[str, ...],
    out: str,
    suite: str | None,
    sign_key: str | None,
    base_url: str | None,
    setup_package: str | None,
    setup_version: str,
    origin: str | None,
    label: str | None,
    codename: str | None,
    keep_generations: int | None,
    valid_for: int | None,
    repo_id: str | None,
    repo_name: str | None,
    wait: bool,
    retain: str | None,
    unsigned: bool,
    allow_unsigned_packages: bool,
    extra_keys: tuple[str, ...],
    drop_extra_keys: bool,
    allow_weak_key: bool,
    as_json: bool,
    quiet: bool,
    strict: bool,
) -> None:
    """Publish built packages as an apt and an rpm-md repository.

    Incremental: packages already in OUT stay, so several releases (8.2 and
    8.3) and patch updates (8.2.0, 8.2.1) live side by side, and a run reads
    only the packages it adds (what is published comes from the repository's
    record). A published file name with different contents is refused. The
    Release date is SOURCE_DATE_EPOCH, else now. The repository keeps its
    suite, names, base URL and signing from run to run (gfxpack stream list
    shows them), and the --extra-key keys of a key rotation until
    --drop-extra-keys.

    Safe to rerun and to run twice at once: every input is checked and read
    before anything is published (a file index.json does not vouch for, a
    symlink, a broken package or a bad name is refused), runs on one OUT take
    turns, every published file the new indexes name is checked against the
    record of what was published (hashed again when its size, times or inode
    changed: a file changed in place is an error naming it, never indexed),
    and what an interrupted run left is cleaned up by the next.
    A directory of .deb/.rpm files without index.json is published with a
    warning.

    A signed repository's setup says gpgcheck=1, so it takes only RPMs signed
    by its key (gfxpack build --sign-key, gfxpack sign), and it is signed only
    with a key current apt and dnf accept (ed25519, RSA of 3072 bits or more,
    not bound with SHA-1); --allow-unsigned-packages and --allow-weak-key say
    otherwise.
    """
    from gfxpack import repo as repo_module
    from gfxpack.build import source_date_epoch as build_epoch
    from gfxpack.epoch import source_date_epoch
    from gfxpack.errors import GfxpackError
    from gfxpack.formats import format_named
    from gfxpack.repo.retention import Retention
    from gfxpack.sign import sign_unless_published

    if extra_keys and drop_extra_keys:
        raise GfxpackError(
            "--extra-key and --drop-extra-keys: give one (--extra-key alone replaces the "
            "keys published beside --sign-key)"
        )
    out_path = Path(out)
    setup = None
    if setup_package:
        # Setup packages are stamped as gfxpack build stamps packages.
        mtime = build_epoch(os.environ)
        setup = repo_module.SetupRequest(
            setup_package, sign_unless_published, setup_version, repo_id, repo_name, mtime
        )
    result = repo_module.publish(
        [Path(build) for build in builds],
        out_path,
        suite,
        source_date_epoch(os.environ, int(time.time())),
        sign_key,
        warn=_warn,
        wait=wait,
        strict=strict,
        retain=Retention.parse(retain) if retain is not None else None,
        unsigned=unsigned,
        base_url=base_url,
        allow_unsigned_packages=allow_unsigned_packages,
        allow_weak_key=allow_weak_key,
        # None: the keys the repository remembers; (): none from now on.
        extra_keys=() if drop_extra_keys else (extra_keys or None),
        given_names={
            "origin": origin,
            "label": label,
            "repo_id": repo_id,
            "repo_name": repo_name,
            "codename": codename,
            "keep_generations": keep_generations,
            "valid_for_days": valid_for,
        },
        setup=setup,
    )
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
        return
    for summary in result.formats:
        where = out_path / format_named(summary.format).repo_dir
        details = summary.details()
        click.echo(
            f"{summary.format}: {len(summary.added)} new, {summary.packages} in {where}"
            + (f" ({', '.join(details)})" if details else "")
        )
    if not quiet:
        for summary in result.formats:
            for client, line in (summary.setup or {}).items():
                click.echo(f"  {client}:  {line}")
