"""gfxpack repo: publish a build as an apt and an rpm-md repository."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from gfxpack import repo as repo_module
from gfxpack.build import source_date_epoch as build_epoch
from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors, strict_option
from gfxpack.cli.sign_cmd import sign_files
from gfxpack.epoch import source_date_epoch
from gfxpack.errors import GfxpackError
from gfxpack.formats.rpmsign import same_contents
from gfxpack.repo.setup_package import (
    SetupPackage,
    check_base_url,
    write_index,
    write_setup_packages,
)
from gfxpack.repo.trust import APT_KEYRING, RPM_KEY, export_public_key, publish_key


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@cli.command("repo")
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
    default="stable",
    show_default=True,
    help="apt suite (dists/SUITE): a plain name of letters, digits and ._+-.",
)
@click.option(
    "--sign-key",
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs the indexes: writes InRelease and "
    "Release.gpg (apt) and repodata/repomd.xml.asc (dnf's repo_gpgcheck). gpg's "
    "GNUPGHOME applies.",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Where OUT will be served (https://example.com/rocm): the printed setup lines "
    "and the setup package use BASE/apt and BASE/rpm. Default: OUT as a file: URL.",
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
    help="Version of the setup package; raise it when --base-url or the key changes.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="When another gfxpack repo run is publishing into OUT: wait for it to finish, "
    "or fail at once.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@strict_option
@reports_errors
def repo_command(
    builds,
    out,
    suite,
    sign_key,
    base_url,
    setup_package,
    setup_version,
    wait,
    as_json,
    strict,
):
    """Publish built packages as an apt and an rpm-md repository.

    Incremental: packages already in OUT stay, so several releases (8.2 and
    8.3) and patch updates (8.2.0, 8.2.1) live side by side; every index is
    regenerated over the whole pool. A published file name with different
    contents is refused. The Release date is SOURCE_DATE_EPOCH, else now.

    Safe to rerun and to run twice at once: every input is checked and read
    before anything is published (a file index.json does not vouch for, a
    symlink, a broken package or a bad name is refused), runs on one OUT take
    turns, a published file whose bytes changed is refused rather than
    re-signed, and what an interrupted run left is cleaned up by the next.
    A directory of .deb/.rpm files without index.json is published with a
    warning.
    """
    epoch = source_date_epoch(os.environ, int(time.time()))
    out_path = Path(out)
    inputs = [Path(build) for build in builds]
    if base_url:
        check_base_url(base_url)
    key = export_public_key(sign_key, None) if sign_key else None
    setup = None
    if setup_package:
        if key is None or not base_url:
            raise GfxpackError("--setup-package needs --sign-key and --base-url")
        setup = SetupPackage(setup_package, base_url, suite, setup_version)
        setup.check()
    with tempfile.TemporaryDirectory(prefix="gfxpack-setup-") as scratch:
        if setup is not None and key is not None:
            formats = {"deb", "rpm"}
            made = Path(scratch)
            files = write_setup_packages(setup, key, formats, made, build_epoch(os.environ))
            for path in files:
                if path.suffix == ".rpm":
                    _sign_or_reuse(path, out_path / "rpm" / "Packages" / path.name, sign_key)
            write_index(made, files)
            inputs.append(made)
        results = repo_module.publish(
            inputs, out_path, suite, epoch, sign_key, warn=_warn, wait=wait, strict=strict
        )
    published = {r["format"] for r in results}
    keys = publish_key(out_path, key, published) if key is not None else {}
    lines = setup_lines(out_path, base_url, suite, keys, setup, results)
    for result in results:
        result["setup"] = lines.get(result["format"], "")
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    for result in results:
        where = out_path / ("apt" if result["format"] == "deb" else "rpm")
        click.echo(
            f"{result['format']}: {len(result['added'])} new, {result['packages']} in {where}"
            + (
                f" (suite {result['suite']}{', signed' if result['signed'] else ''})"
                if result["format"] == "deb"
                else ""
            )
        )
    for fmt, tool in (("deb", "apt"), ("rpm", "dnf")):
        if fmt in lines:
            click.echo(f"  {tool}:  {lines[fmt]}")


def _sign_or_reuse(package: Path, published: Path, sign_key: str) -> None:
    """Sign the setup .rpm, unless the same package is published already: a signature
    differs each time it is made, and a published file never changes."""
    if published.is_file() and not published.is_symlink() and same_contents(package, published):
        shutil.copyfile(published, package)
    else:
        sign_files([package], sign_key)


def setup_lines(
    out: Path,
    base_url: str | None,
    suite: str,
    keys: dict[str, Path],
    setup: SetupPackage | None,
    results: list[dict[str, Any]],
) -> dict[str, str]:
    """format -> one shell command line that makes this repository usable on a machine
    (run as root): the setup package's install when there is one, else the sources
    entry written with the published key."""
    base = base_url.rstrip("/") if base_url else f"file://{out.resolve()}"
    lines: dict[str, str] = {}
    for result in results:
        fmt = result["format"]
        name = setup.name if setup else "gfxpack"
        if setup is not None:
            version = f"{setup.version}-1"
            if fmt == "deb":
                deb = f"{setup.name}_{version}_all.deb"
                lines[fmt] = (
                    f"curl -fsSLo /tmp/{deb} {base}/apt/pool/main/{deb} && "
                    f"apt-get install -y /tmp/{deb} && apt-get update"
                )
            else:
                lines[fmt] = f"dnf install -y {base}/rpm/Packages/{setup.name}-{version}.noarch.rpm"
        elif fmt == "deb":
            if "deb" in keys and base_url:
                keyring = f"/usr/share/keyrings/{APT_KEYRING}"
                fetch = f"curl -fsSLo {keyring} {base}/{APT_KEYRING} && "
            else:
                keyring, fetch = str(keys["deb"].resolve()) if "deb" in keys else "", ""
            trust = f"signed-by={keyring}" if keyring else "trusted=yes"
            apt_url = f"{base}/apt" if base_url else f"file:{(out / 'apt').resolve()}"
            lines[fmt] = (
                f"{fetch}echo 'deb [{trust}] {apt_url} {suite} main' "
                f"| tee /etc/apt/sources.list.d/{name}.list && apt-get update"
            )
        else:
            checks = (
                f"gpgcheck=1\\nrepo_gpgcheck=1\\ngpgkey={base}/rpm/{RPM_KEY}"
                if "rpm" in keys
                else "gpgcheck=0"
            )
            lines[fmt] = (
                f"printf '[{name}]\\nname={name}\\nbaseurl={base}/rpm\\n{checks}\\n' "
                f"| tee /etc/yum.repos.d/{name}.repo"
            )
    return lines
