"""gfxpack image: OCI container images per GPU arch from a repository and a base image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import reports_errors, split_list
from gfxpack.cli.progress import terminal_progress

if TYPE_CHECKING:
    from gfxpack.image.report import Images

# gfxpack.image.layers.GROUPINGS, spelled here so that declaring the command imports click alone.
GROUPINGS = ("kind", "family")
# gfxpack.image.layer.COMPRESSIONS, likewise.
COMPRESSIONS = ("gzip", "zstd")


@click.command("image")
@click.option(
    "--repo",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A gfxpack repo --out directory, or one apt (dists/) or rpm-md (repodata/) repository.",
)
@click.argument("packages", nargs=-1, required=True)
@click.option(
    "--base",
    required=True,
    help="The base image: an OCI layout directory (oci:DIR[:TAG]), a docker save tar "
    "(docker-archive:FILE) or a registry reference (docker://HOST/NAME:TAG).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="The OCI image layout to write, holding one image per arch, tagged <version>-<arch>.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="ARCH",
    help="GPU archs, one image each (repeatable, or comma-separated); {arch} in PACKAGES "
    "is each  [default: the arch suffix of PACKAGES]",
)
@click.option(
    "--client",
    type=click.Choice(("apt", "dnf")),
    help="The package manager that installs: apt (the .debs) or dnf (the .rpms)  "
    "[default: dnf; apt for a repository of .debs only]",
)
@click.option(
    "--layers",
    "grouping",
    type=click.Choice(GROUPINGS),
    default="kind",
    show_default=True,
    help="kind: one host layer (the same in every arch's image), one device layer, a top "
    "layer; family: a host and a device layer per package family, reused across releases.",
)
@click.option(
    "--compression",
    type=click.Choice(COMPRESSIONS),
    default="gzip",
    show_default=True,
    help="Of the new layers. gzip: every client pulls it; zstd: smaller and faster to "
    "write and unpack, pulled by docker >= 23, containerd >= 1.5, podman and skopeo.",
)
@click.option(
    "--version", "version", help="The version in tags and labels  [default: PACKAGES' own]"
)
@click.option("--source", help="A label naming the build (org.opencontainers.image.source).")
@click.option(
    "--push",
    "push_to",
    metavar="HOST/NAME",
    help="Push every image to this registry repository (OCI distribution API).",
)
@click.option(
    "--authfile",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Registry credentials, as skopeo login writes them, for --push and a docker:// "
    "--base  [default: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, "
    "~/.config/containers/auth.json, ~/.docker/config.json]",
)
@click.option(
    "--stand-ins",
    "stand_ins",
    is_flag=True,
    help="Install empty stand-ins for system packages the base lacks, instead of refusing.",
)
@click.option(
    "--system",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The system packages the release depends on, as deb822 stanzas (as for verify).",
)
@click.option(
    "--keyring",
    type=click.Path(dir_okay=False, path_type=Path),
    help="OpenPGP public keys (binary or armored) the repository is signed with: its "
    "indexes are checked against them first, then by the client (apt's signed-by, dnf's "
    "gpgcheck and repo_gpgcheck)  [default: no signature checked]",
)
@click.option("--suite", help="apt suite, when the repository has more than one.")
@click.option("--force", is_flag=True, help="Replace --out when it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@reports_errors
def image_command(
    repo: Path,
    packages: tuple[str, ...],
    base: str,
    out: Path,
    targets: tuple[str, ...],
    client: str | None,
    grouping: str,
    version: str | None,
    source: str | None,
    push_to: str | None,
    authfile: Path | None,
    stand_ins: bool,
    system: Path | None,
    keyring: Path | None,
    suite: str | None,
    force: bool,
    as_json: bool,
    compression: str,
) -> None:
    """Build an OCI container image per GPU arch from a repository and a base image.

    For each arch the real client (apt-get with dpkg --root, or dnf
    --installroot) installs PACKAGES from the repository into a root holding
    the base's files, in try-install's sandbox, scripts run; no container
    daemon is used. The image is the base's layers, then one host layer with
    every arch-independent package's files (the same digest in every arch's
    image of a release), one device layer with the arch's device packages'
    files, and a top layer with the package database's changes and the rest
    (--layers family: a host and a device layer per package family).

    Same inputs, same digests: sorted tar members, numeric owners, mtimes
    clamped to SOURCE_DATE_EPOCH (default 0), fixed gzip or zstd settings, and none of
    the clients' logs, locks or caches. Labels and the layout's index name
    the arch, the version and the repository; tags are <version>-<arch>. An
    image holding a file or package of another arch is refused.

    \b
      gfxpack image --repo build/repo --base oci:debian:12 --out build/images \\
          --target gfx942,gfx90a 'amdrocm-core8.2-{arch}'
      gfxpack image ... --push registry.example:5000/rocm/amdrocm
      gfxpack image ... --push ghcr.io/example/rocm --authfile auth.json
    """
    from gfxpack.image.workflow import build_images

    with terminal_progress(False, "reading the base") as progress:
        images = build_images(
            repo,
            packages,
            base,
            out,
            split_list(targets),
            client,
            grouping,
            version,
            source,
            push_to,
            stand_ins,
            system,
            suite,
            force,
            keyring,
            compression,
            progress,
            authfile,
        )
    if as_json:
        click.echo(json.dumps(images.as_dict(), indent=2))
    else:
        click.echo(text(images), nl=False)


def text(images: Images) -> str:
    """The report for people: each image's layers with their sizes, and the comparison
    with an image holding every built arch."""
    from gfxpack.units import human

    lines = [f"wrote {len(images.images)} image(s) into {images.out} (base {images.base}):"]
    for image in images.images:
        lines.append(f"  {image.tag}  {image.manifest}")
        for layer in image.layers:
            lines.append(
                f"    {layer.what:<28} {layer.digest[:19]}  {human(layer.size):>10} "
                f"compressed  {human(layer.unpacked_size):>10} unpacked"
            )
        if image.stand_ins:
            lines.append(f"    stand-ins (no files): {', '.join(image.stand_ins)}")
        lines.append(f"    {'total':<28} {'':<19}  {human(image.size):>10}")
    everything = images.all_arch_size
    for image in images.images:
        share = 100 * image.size / everything if everything else 100
        lines.append(
            f"{image.arch}: {human(image.size)} to pull, {share:.0f}% of {human(everything)} "
            f"for an image of all {len(images.images)} arch(s) built"
        )
        compared = image.compared
        if compared is not None and compared.all_download:
            lines.append(
                f"  its packages download {human(compared.download)}, "
                f"{100 * compared.download / compared.all_download:.0f}% of "
                f"{human(compared.all_download)} for the same packages of all "
                f"{len(compared.archs)} archs of the repository ({', '.join(compared.archs)})"
            )
    if images.pushed:
        pushed = images.pushed
        lines.append(
            f"pushed to {pushed.registry}: {len(pushed.uploaded)} blob(s) uploaded, "
            f"{len(pushed.present)} already there; tags {', '.join(pushed.tags)}"
        )
    return "\n".join(lines) + "\n"
