"""What ``gfxpack image`` built: each image's layers with their sizes, and its
packages against the same packages for every arch of the repository (the report
``--json`` prints and the text report is made from)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gfxpack.amdgpu import PROCESSORS, sort_targets
from gfxpack.image.registry import Pushed
from gfxpack.verify.resolution import resolve
from gfxpack.verify.rules import arch_of
from gfxpack.verify.universe import Universe


@dataclass(frozen=True, slots=True)
class LayerReport:
    what: str  # base, host, device gfx942, top, ...
    digest: str
    size: int  # compressed bytes (what a pull downloads)
    unpacked_size: int
    files: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "digest": self.digest,
            "size": self.size,
            "unpacked_size": self.unpacked_size,
            "files": self.files,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """The packages of one arch's image against the same packages for every arch the
    repository has, as the repository lists them (libsolv: download and installed
    sizes of the package files each install's whole closure over the base downloads)."""

    archs: tuple[str, ...]  # every arch the repository has
    download: int  # this image's packages
    all_download: int  # the same packages for every arch

    def as_dict(self) -> dict[str, Any]:
        return {
            "archs": list(self.archs),
            "download": self.download,
            "all_arch_download": self.all_download,
        }


@dataclass
class BuiltImage:
    arch: str
    tag: str
    version: str
    manifest: str  # the manifest's digest
    packages: list[str]
    layers: list[LayerReport]
    stand_ins: list[str] = field(default_factory=list)
    compared: Comparison | None = None

    @property
    def size(self) -> int:
        return sum(layer.size for layer in self.layers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "tag": self.tag,
            "version": self.version,
            "manifest": self.manifest,
            "packages": self.packages,
            "stand_ins": self.stand_ins,
            "all_arch": self.compared.as_dict() if self.compared else None,
            "layers": [layer.as_dict() for layer in self.layers],
            "size": self.size,
        }


@dataclass
class Images:
    out: str
    base: str
    client: str
    grouping: str
    images: list[BuiltImage]
    pushed: Pushed | None = None

    @property
    def all_arch_size(self) -> int:
        """An image holding every built arch: each distinct layer once."""
        distinct = {layer.digest: layer.size for i in self.images for layer in i.layers}
        return sum(distinct.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "base": self.base,
            "client": self.client,
            "layers": self.grouping,
            "images": [image.as_dict() for image in self.images],
            "all_arch_size": self.all_arch_size,
            "pushed": self.pushed.as_dict() if self.pushed else None,
        }


def compare(universe: Universe, arch: str, names: list[str]) -> Comparison:
    """``names`` (arch ``arch``'s packages) against the same names for every arch the
    repository has packages of (``-gfx942`` made ``-gfx90a``...)."""
    archs = sort_targets(
        {a for s in universe.packages() if (a := arch_of(s.name)) and a in PROCESSORS}
    )
    known = {s.name for s in universe.packages()}
    everyone = sorted(
        {
            other_name
            for other in archs
            for name in names
            if (other_name := with_arch(name, arch, other)) in known
        }
    )
    sizes = {where: listed.size for where, listed in universe.package_files()}
    one, every = closure_size(universe, names, sizes), closure_size(universe, everyone, sizes)
    return Comparison(tuple(archs), one, every)


def with_arch(name: str, arch: str, other: str) -> str:
    return name.removesuffix(f"-{arch}") + f"-{other}" if name.endswith(f"-{arch}") else name


def closure_size(universe: Universe, names: list[str], sizes: dict[str, int]) -> int:
    """The bytes of the package files installing ``names`` downloads."""
    resolution = resolve(universe, names, steps=False)
    return sum(
        sizes.get(universe.location(solvable), 0)
        for id_ in resolution.world
        if (solvable := universe.pool.solvables[id_]).repo == universe.repo
    )
