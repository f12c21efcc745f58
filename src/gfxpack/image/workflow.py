"""``gfxpack image``: one OCI image per GPU arch of a release, written as an OCI image
layout and optionally pushed.

The base's layers are unpacked once, and the real client installs the packages
every arch needs over them in try-install's sandbox (:mod:`.install`). Each arch's
root is a writable copy of that shared root (:mod:`.overlay`) where the client
installs the arch's own packages; the root's new files are put into layers by the
package that owns them (:mod:`.layers`), and the image is refused when any of them
is of another GPU arch (the rule try-install applies). Layers are written in threads
while the next arches install, each distinct layer once (the host layer, the same
in every arch's image, is written for the first). The image is the base's layers, unchanged, then
the new ones; its config carries labels naming the arch, the ROCm version and the
repository, its tag is ``<version>-<arch>``, and the layout's index lists every arch's
image with those annotations. Same inputs, same digests (:mod:`.layer`): config
times are SOURCE_DATE_EPOCH (default 0), never the time of the run.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack._io import hasher, replace_directory
from gfxpack.amdgpu import processor_problem
from gfxpack.epoch import source_date_epoch
from gfxpack.formats import DEB, PackageFormat
from gfxpack.image import ImageError
from gfxpack.image.auth import AuthFiles
from gfxpack.image.base import DECOMPRESSION_ERRORS, Base, decompressed, read_base
from gfxpack.image.install import Installed, components, database, install, missing_system
from gfxpack.image.labels import (
    LABEL_ARCH,
    LABEL_PACKAGES,
    LABEL_REPOSITORY,
    LABEL_ROCM,
    LABEL_SOURCE,
    LABEL_VERSION,
    image_config,
    index_annotations,
    repository_digest,
    tag_of,
    upstream_version,
)
from gfxpack.image.layer import GZIP, Layer, parents, write_layer
from gfxpack.image.layers import BY_KIND, Entry, Planned, plan_layers, snapshot
from gfxpack.image.layout import (
    CONFIG,
    MANIFEST,
    Descriptor,
    copy_blob,
    manifest,
    put_json,
    start,
    write_index,
)
from gfxpack.image.overlay import Removals, writable_copy
from gfxpack.image.registry import Reference, pull, push
from gfxpack.image.report import BuiltImage, Comparison, Images, LayerReport, compare
from gfxpack.image.unpack import unpack
from gfxpack.repo.names import SUITE
from gfxpack.sandbox import Sandbox, probe
from gfxpack.trial import CLIENTS, default_client, other_archs
from gfxpack.trial.roots import terminated_as_exit
from gfxpack.verify.integrity import Keyring
from gfxpack.verify.resolution import resolve, select
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import SystemPackage, read_system
from gfxpack.verify.universe import load, pick_suite

# The placeholder of a per-arch package name: amdrocm-core8.2-{arch}.
ARCH = "{arch}"
# How many paths of another arch an error shows.
SHOWN_PATHS = 5
# How many arches' installed roots may be mounted at once: each holds its device
# packages' files on the scratch disk until its layers are written.
AHEAD = 4
# At most this many layers are written at once (each a compressor on a core of its own).
LAYER_THREADS = 4


# Told each step of a run: what it is, how many arches are installed, of how many.
Progress = Callable[[str, int, int], None]


def _quiet(what: str, done: int, total: int) -> None:
    pass


def expand(packages: Sequence[str], targets: Sequence[str]) -> dict[str, list[str]]:
    """arch -> the packages its image installs: ``{arch}`` in a name is the arch; without
    ``targets`` the archs are the names' arch suffixes (``amdrocm-core8.2-gfx942``).

    >>> expand(["amdrocm-core8.2-{arch}"], ["gfx942", "gfx90a"])
    {'gfx942': ['amdrocm-core8.2-gfx942'], 'gfx90a': ['amdrocm-core8.2-gfx90a']}
    >>> expand(["amdrocm-core8.2-gfx942"], [])
    {'gfx942': ['amdrocm-core8.2-gfx942']}
    """
    if not packages:
        raise ImageError("name at least one package to install (e.g. amdrocm-core8.2-{arch})")
    for target in targets:
        problem = processor_problem(target)
        if problem:
            raise ImageError(f"--target: {problem}")
    if not targets:
        if any(ARCH in name for name in packages):
            raise ImageError(f"a package name holds {ARCH}: name the archs with --target")
        found = sorted({a for name in packages if (a := arch_of(name))})
        if len(found) != 1:
            raise ImageError(
                "name the GPU arch of the image with --target (the packages name "
                + (f"{len(found)} archs: {', '.join(found)})" if found else "none)")
            )
        targets = found
    return {
        arch: [name.replace(ARCH, arch) for name in packages] for arch in dict.fromkeys(targets)
    }


def build_images(
    repo: Path,
    packages: Sequence[str],
    base: str,
    out: Path,
    targets: Sequence[str] = (),
    client: str | None = None,
    grouping: str = BY_KIND,
    version: str | None = None,
    source: str | None = None,
    push_to: str | None = None,
    stand_ins: bool = False,
    system: Path | None = None,
    suite: str | None = None,
    force: bool = False,
    keyring: Path | None = None,
    compression: str = GZIP,
    progress: Progress | None = None,
    authfile: Path | None = None,
) -> Images:
    """Build one image per arch into the OCI layout ``out`` (new, or replaced with
    ``force``), its new layers compressed by ``compression`` (gzip or zstd), and push
    them to ``push_to`` (HOST/NAME) when given. ``progress`` is told each step: what,
    and how many of the arches are installed. Registry credentials: ``authfile``, then
    where skopeo looks (:mod:`.auth`)."""
    per_arch = expand(packages, targets)
    reference = Reference.parse(push_to) if push_to else None
    if reference is not None and reference.tag:
        raise ImageError(f"--push {push_to}: name the repository only; tags are <version>-<arch>")
    if not repo.is_dir():
        raise ImageError(f"{repo}: not a directory (give the --out directory of gfxpack repo)")
    chosen = client or default_client(repo)
    if chosen not in ("apt", "dnf"):
        raise ImageError(f"--client {chosen}: images are installed by apt or dnf")
    fmt = CLIENTS[chosen].fmt
    _check_out(out, force)
    if os.geteuid() != 0:
        raise ImageError(
            "image needs root: the client installs as root into the image's root "
            "(run it with sudo, or in a container)"
        )
    probe()
    epoch = source_date_epoch(os.environ, 0)
    listed = read_system(system, fmt)
    keys = Keyring(keyring) if keyring is not None else None
    universe = load(repo, fmt, listed, suite, keys)  # signatures checked here first
    for names in per_arch.values():
        for name in names:
            select(universe, name)  # one error naming it (with suggestions) when missing
    repository = universe.root.resolve()
    apt_suite = pick_suite(repository / "dists", suite) if fmt is DEB else ""
    if fmt is DEB and not SUITE.match(apt_suite):
        raise ImageError(f"{repository / 'dists' / apt_suite}: not a suite name apt reads")
    labels = {LABEL_REPOSITORY: repository_digest(repository, fmt, apt_suite)}
    if source:
        labels[LABEL_SOURCE] = source

    out = out.absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    with terminated_as_exit():
        return _build(out, force, base, per_arch, chosen, fmt, repository, apt_suite, grouping,
                      epoch, keyring, listed, stand_ins, version, labels, reference,
                      compression, progress or _quiet,
                      AuthFiles.find(authfile, os.environ))  # fmt: skip


def _build(
    out: Path,
    force: bool,
    base: str,
    per_arch: dict[str, list[str]],
    chosen: str,
    fmt: PackageFormat,
    repository: Path,
    apt_suite: str,
    grouping: str,
    epoch: int,
    keyring: Path | None,
    listed: tuple[str, list[SystemPackage]],
    stand_ins: bool,
    version: str | None,
    labels: dict[str, str],
    reference: Reference | None,
    compression: str,
    progress: Progress,
    auth: AuthFiles,
) -> Images:
    scratch = Path(tempfile.mkdtemp(prefix="gfxpack-image-"))
    layout = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    removals = Removals()
    try:
        found = read_base(base, scratch / "base", functools.partial(pull, auth_files=auth))
        shutil.rmtree(layout)
        start(layout)
        base_layers = tuple(copy_blob(layout, b.path, b.descriptor) for b in found.layers)
        run = _Run(
            found, base_layers, layout, scratch, chosen, fmt, repository, apt_suite,
            tuple(components(repository, apt_suite)) if fmt is DEB else (), grouping, epoch,
            keyring.read_bytes() if keyring is not None else None, compression, progress,
        )  # fmt: skip
        progress("installing the packages every arch shares", 0, len(per_arch))
        shared = _shared_root(run, per_arch, listed[1], stand_ins)
        images = _all_images(run, shared, per_arch, version, labels, removals)
        manifests = [
            Descriptor(
                MANIFEST, image.manifest, _size(layout, image.manifest), index_annotations(image)
            )
            for image in images
        ]
        write_index(layout, manifests)
        if reference is not None:
            progress(f"pushing to {reference}", len(per_arch), len(per_arch))
        pushed = push(layout, manifests, reference, auth) if reference else None
        try:
            replace_directory(layout, out, force)
        except OSError as e:
            raise ImageError(f"{out}: cannot write: {e.strerror}") from None
    finally:
        removals.wait()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(layout, ignore_errors=True)
    return Images(str(out), found.name, chosen, grouping, images, pushed)


@dataclass(frozen=True, slots=True)
class _Run:
    """What every arch's image of one run shares."""

    base: Base
    base_layers: tuple[Descriptor, ...]  # copied into the layout
    layout: Path
    scratch: Path
    client: str
    fmt: PackageFormat
    repository: Path
    suite: str
    components: tuple[str, ...]  # of the apt suite, read once from its Release
    grouping: str
    epoch: int
    keys: bytes | None  # the keyring the client checks signatures with
    compression: str  # of the new layers: gzip or zstd (the base's stay as they are)
    progress: Progress

    def box(self, *writable: Path) -> Sandbox:
        return Sandbox(tuple(p.resolve() for p in writable), (self.repository,))

    def install(
        self,
        root: Path,
        home: Path,
        names: Sequence[str],
        standing: Any,
        indexes: Path | None = None,
    ) -> None:
        install(
            self.client, root.resolve(), home.resolve(), self.repository, self.suite,
            self.components,
            names, standing, indexes, self.epoch, self.keys,
        )  # fmt: skip


@dataclass(slots=True)
class _Shared:
    """The base unpacked with the host packages every arch needs installed once: each
    arch's root starts as a copy of it (:mod:`.overlay`; the performance goal: all
    arches share the host install)."""

    root: Path
    indexes: Path | None  # apt's lists, fetched once for every arch (None: not fetched)
    before: dict[str, Entry]  # the base's files, before any install
    base_packages: dict[str, Installed]
    stand_ins: list[str]
    compared: dict[str, Comparison]  # arch -> its packages against every arch's
    # Layers written or being written, by what they hold (see _layers).
    written: dict[tuple[Any, ...], Future[Layer]] = field(default_factory=dict)


def _shared_root(
    run: _Run,
    per_arch: dict[str, list[str]],
    system: Sequence[SystemPackage],
    allow_stand_ins: bool,
) -> _Shared:
    root, home = run.scratch / "root-shared", run.scratch / "client-shared"
    root.mkdir()
    home.mkdir()
    unpack(run.base, root)
    before = snapshot(root)
    base_packages = database(run.fmt, root, run.box(root, home))
    missing = missing_system(system, base_packages)
    had = list(system) if allow_stand_ins else [p for p in system if p.name in base_packages]
    universe = load(run.repository, run.fmt, (f"base {run.base.name}", had), run.suite or None)
    host: set[str] | None = None
    for names in per_arch.values():
        resolution = resolve(universe, names, steps=False)
        if not resolution.ok:
            raise ImageError(
                f"base {run.base.name}: cannot install {' '.join(names)} over it: "
                f"{resolution.problems[0]}; use a base that has the system packages the "
                "release needs, or --stand-ins to install empty stand-ins for those it "
                "lacks (the image then lacks their files)"
            )
        mine = {
            solvable.name
            for id_ in resolution.world
            if (solvable := universe.pool.solvables[id_]).repo == universe.repo
            and arch_of(solvable.name) is None
        }
        host = mine if host is None else host & mine
    standing = missing if allow_stand_ins else []
    indexes = None
    if host or standing:
        run.install(root, home, sorted(host or ()), standing)
        indexes = home / "state/lists" if run.fmt is DEB else None
    compared = {arch: compare(universe, arch, names) for arch, names in per_arch.items()}
    return _Shared(root, indexes, before, base_packages, [p.name for p in standing], compared)


def _all_images(
    run: _Run,
    shared: _Shared,
    per_arch: dict[str, list[str]],
    version: str | None,
    labels: dict[str, str],
    removals: Removals,
) -> list[BuiltImage]:
    """Each arch's image, in order. The clients install one arch after another while
    threads put the installed roots into layers (gzip and zstd work outside the
    interpreter's lock): the first image's host layer, the longest, is written while
    the next arches install and their device layers are written beside it. A root is
    unmounted once the layers read from it are written; at most :data:`AHEAD` are
    mounted at once. The images are put together, in order, once every layer is
    written."""
    pending: list[_Pending] = []
    workers = max(2, min(LAYER_THREADS, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gfxpack-layers") as pool:
        try:
            for done, (arch, names) in enumerate(per_arch.items()):
                _unmount_written(pending, AHEAD - 1)
                run.progress(f"installing {arch}'s packages", done, len(per_arch))
                installed = _install_arch(run, shared, arch, names, removals)
                pending.append(_layers(run, shared, installed, pool))
            run.progress("writing the last layers", len(per_arch), len(per_arch))
            return [p.image(run, shared, version, labels) for p in pending]
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            for unfinished in pending:
                unfinished.installed.close()
            raise


def _unmount_written(pending: Sequence[_Pending], most: int) -> None:
    """Unmount each root whose layers are written, waiting until at most ``most`` are
    still mounted; a layer that failed fails the run at once."""
    while True:
        mounted = [p for p in pending if p.mounted]
        for waiting in mounted:
            if all(f.done() for f in waiting.own):
                waiting.unmount()
        mounted = [p for p in mounted if p.mounted]
        if len(mounted) <= most:
            return
        # Only the layers still being written: a written one would end the wait at
        # once, again and again, spinning while the writers need the interpreter.
        own = [f for p in mounted for f in p.own if not f.done()]
        concurrent.futures.wait(own, return_when=concurrent.futures.FIRST_COMPLETED)


@dataclass
class _ArchRoot:
    """One arch's root with its packages installed, and what the layers need of it;
    the root stays (mounted) until :meth:`close`."""

    arch: str
    names: list[str]
    root: Path
    after: dict[str, Entry]
    packages: dict[str, Installed]
    planned: list[Planned]
    stack: contextlib.ExitStack

    def close(self) -> None:
        self.stack.close()


def _install_arch(
    run: _Run, shared: _Shared, arch: str, names: list[str], removals: Removals
) -> _ArchRoot:
    home = run.scratch / f"client-{arch}"
    stack = contextlib.ExitStack()
    try:
        root = stack.enter_context(
            writable_copy(shared.root, run.scratch / f"root-{arch}", removals)
        )
        home.mkdir()
        try:
            run.install(root, home, names, [], shared.indexes)
            after = snapshot(root)
            packages = database(run.fmt, root, run.box(root, home))
        finally:
            removals.remove(home)
        base_packages = shared.base_packages
        planned = plan_layers(shared.before, after, base_packages, packages, arch, run.grouping)
        _refuse_other_archs(arch, planned, packages, base_packages)
    except BaseException:
        stack.close()
        raise
    return _ArchRoot(arch, names, root, after, packages, planned, stack)


@dataclass
class _Pending:
    """An arch's installed root and its layers, being written."""

    installed: _ArchRoot
    layers: list[Future[Layer]]  # in the image's order, some written for an earlier arch
    own: list[Future[Layer]]  # those read from this root
    mounted: bool = True

    def unmount(self) -> None:
        """Unmount the root once the layers read from it are written; a layer's failure
        is raised here."""
        try:
            concurrent.futures.wait(self.own)
            for layer in self.own:
                layer.result()
        finally:
            self.installed.close()
            self.mounted = False

    def image(
        self, run: _Run, shared: _Shared, version: str | None, labels: dict[str, str]
    ) -> BuiltImage:
        """The image, once every layer of it is written."""
        self.unmount()
        written = [f.result() for f in self.layers]
        return _image(run, shared, self.installed, written, version, labels)


def _layers(run: _Run, shared: _Shared, installed: _ArchRoot, pool: Executor) -> _Pending:
    """The layers of ``installed``, each being written in ``pool`` unless one with the same
    entries with the same status (what the tar records of each: mode, owners, size,
    clamped mtime, link target) was for an earlier arch. Each arch's root is a copy of
    the shared one (an overlay over it, or cp -a: both keep mtimes), so the host layer
    is written once. Called from one thread only, which alone reads and adds to
    ``shared.written``."""
    layers, own = [], []
    for planned in installed.planned:
        entries = sorted(
            {q for p in planned.paths for q in (*parents(p.lstrip("/")), p.lstrip("/"))}
        )
        key = (
            planned.what,
            planned.whiteouts,
            tuple(
                (path, mode, uid, gid, size, min(mtime // 10**9, run.epoch), link)
                for path in entries
                for mode, uid, gid, size, mtime, link in [installed.after["/" + path]]
            ),
        )
        layer = shared.written.get(key)
        if layer is None:
            layer = pool.submit(
                write_layer, installed.root, planned.paths, run.epoch, run.layout, planned.what,
                planned.whiteouts, run.compression,
            )  # fmt: skip
            shared.written[key] = layer
            own.append(layer)
        layers.append(layer)
    return _Pending(installed, layers, own)


def _image(
    run: _Run,
    shared: _Shared,
    arch_root: _ArchRoot,
    layers: list[Layer],
    version: str | None,
    labels: dict[str, str],
) -> BuiltImage:
    arch, names, packages = arch_root.arch, arch_root.names, arch_root.packages
    layout, epoch = run.layout, run.epoch
    installed = packages.get(names[0])
    full_version = installed.version if installed else ""
    tag_version = version or upstream_version(full_version)
    if not tag_version:
        raise ImageError(f"{names[0]}: not installed by name; give the image's --version")
    tag = tag_of(tag_version, arch)
    image_labels = {
        **labels,
        LABEL_ARCH: arch,
        LABEL_ROCM: tag_version,
        LABEL_VERSION: tag_version,
        LABEL_PACKAGES: " ".join(names),
    }
    config = image_config(run.base.config, layers, image_labels, epoch)
    config_descriptor = put_json(layout, CONFIG, config)
    document = manifest(config_descriptor, [*run.base_layers, *(x.descriptor for x in layers)], {})
    manifest_descriptor = put_json(layout, MANIFEST, document)
    reports = [
        LayerReport("base", d.digest, d.size, _unpacked(layout, d), 0) for d in run.base_layers
    ] + [
        LayerReport(x.what, x.descriptor.digest, x.size, x.unpacked_size, len(x.paths))
        for x in layers
    ]
    return BuiltImage(
        arch,
        tag,
        tag_version,
        manifest_descriptor.digest,
        names,
        reports,
        shared.stand_ins,
        shared.compared.get(arch),
    )


def _check_out(out: Path, force: bool) -> None:
    """``out`` may be new; with ``force``, an OCI layout (which is replaced) or an empty
    directory; never anything else (--force must not remove a directory of files)."""
    if not os.path.lexists(out):
        return
    if not force:
        raise ImageError(f"{out}: already exists (--force replaces an OCI layout)")
    if out.is_symlink() or not out.is_dir():
        raise ImageError(f"{out}: not a directory; give a new directory or an OCI layout")
    if any(out.iterdir()) and not (out / "oci-layout").is_file():
        raise ImageError(
            f"{out}: holds files and is not an OCI layout (no oci-layout); --force replaces "
            "only a layout"
        )


def _refuse_other_archs(
    arch: str, planned: Sequence[Any], packages: dict[str, Installed], base: dict[str, Installed]
) -> None:
    foreign = sorted(
        name for name in packages if name not in base and (a := arch_of(name)) and a != arch
    )
    files = [
        (path, found)
        for layer in planned
        for path in layer.paths
        if (found := other_archs(path, [arch]))
    ]
    if foreign or files:
        shown = [f"{path} ({', '.join(a)})" for path, a in files[:SHOWN_PATHS]]
        more = f" and {len(files) - SHOWN_PATHS} more" if len(files) > SHOWN_PATHS else ""
        raise ImageError(
            f"the {arch} image would hold {len(foreign)} package{'s' * (len(foreign) != 1)} "
            f"({', '.join(foreign) or 'none'}) and {len(files)} file"
            f"{'s' * (len(files) != 1)} of another arch: {', '.join(shown) or 'none'}{more}"
        )


def _size(layout: Path, digest: str) -> int:
    return (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).stat().st_size


def _unpacked(layout: Path, descriptor: Descriptor) -> int:
    """The bytes a base layer unpacks to (gzip and zstd are read through; a plain tar is
    itself)."""
    path = layout / "blobs" / "sha256" / descriptor.digest.removeprefix("sha256:")
    sink = hasher()
    with contextlib.suppress(OSError, EOFError, *DECOMPRESSION_ERRORS), decompressed(path) as tar:
        while chunk := tar.read(1 << 20):
            sink.write(chunk)
    return sink.size
