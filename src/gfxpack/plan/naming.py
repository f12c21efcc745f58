"""Every package name gfxpack produces, in one place (spec packaging.md section 6).

Names are built from the base name, the ``X.Y`` of the ROCm version, an
optional arch suffix and the build variant. The format spells the base before
anything is appended (DEB writes a ``-devel`` base as ``-dev``); without a format,
a name keeps package.json's spelling, which is the package's key in a plan.

>>> version_xy("7.14.0~dev20260625")
'7.14'
>>> arch_suffix("gfx94X-dcgpu"), arch_suffix("gfx942:xnack+")
('gfx94x', 'gfx942')
>>> n = Naming("8.2")
>>> from gfxpack.formats import DEB, RPM
>>> n.host("amdrocm-blas", DEB), n.device("amdrocm-blas", "gfx942", DEB)
('amdrocm-blas-host8.2', 'amdrocm-blas8.2-gfx942')
>>> n.versioned("amdrocm-core-devel", DEB, "gfx1100"), n.versioned("amdrocm-core-devel", RPM)
('amdrocm-core-dev8.2-gfx1100', 'amdrocm-core-devel8.2')
>>> Naming("8.2", asan=True).host("amdrocm-fft")
'amdrocm-fft-host-asan8.2'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gfxpack.amdgpu import OWNER_OF
from gfxpack.formats.package_format import PackageFormat

_LEADING_DIGITS = re.compile(r"^\d+")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+~]*$")
_RELEASE = re.compile(r"^[A-Za-z0-9.+~]+$")
TARGET = re.compile(r"^gfx[0-9a-zA-Z]+(-[A-Za-z0-9-]+)?(:[A-Za-z0-9+\-]+)*$")
DEFAULT_PREFIX = "/opt/rocm/core"


class InvalidName(ValueError):
    """A version, release or target that cannot form package names."""


def version_xy(version: str) -> str:
    """The ``X.Y`` of a release version: the leading digits of its first two dot fields."""
    fields = version.split(".")
    digits = [_LEADING_DIGITS.match(f) for f in fields[:2]]
    if not _VERSION.match(version) or len(fields) < 2 or not all(digits):
        raise InvalidName(
            f"ROCm version {version!r}: expected at least two numeric dot fields, such as 8.2.0"
        )
    return ".".join(d.group(0) for d in digits if d)


def check_release(release: str) -> str:
    if not _RELEASE.match(release):
        raise InvalidName(
            f"release {release!r}: expected letters, digits, '.', '+' or '~' (no '-'), such as 1"
        )
    return release


def arch_suffix(target: str) -> str:
    """The name suffix of a target: lowercased, xnack feature and family tail cut off;
    a target with an owner (``gfx1250-strict``, :data:`gfxpack.amdgpu.OWNERS`) takes
    its owner's."""
    if not TARGET.match(target):
        raise InvalidName(
            f"target {target!r}: expected a GPU architecture such as gfx942, "
            "gfx942:xnack+ or a family such as gfx94X-dcgpu"
        )
    processor = target.split(":", 1)[0].lower()
    owner = OWNER_OF.get(processor)
    return owner if owner is not None else processor.split("-", 1)[0]


def spelled(base: str, fmt: PackageFormat | None = None) -> str:
    """``base`` as ``fmt`` spells it; as package.json does without a format."""
    return base if fmt is None else fmt.spell(base)


def install_prefix(prefix: str | None, xy: str, asan: bool = False) -> str:
    """The default prefix gets ``-X.Y`` (``-asan-X.Y`` for ASAN); any other is verbatim."""
    if prefix is None or prefix.rstrip("/") == DEFAULT_PREFIX:
        return f"{DEFAULT_PREFIX}-asan-{xy}" if asan else f"{DEFAULT_PREFIX}-{xy}"
    return prefix


@dataclass(frozen=True, slots=True)
class Naming:
    """Names for one release: ``xy`` is the version's ``X.Y``; ``asan`` the ASAN variant."""

    xy: str
    asan: bool = False

    @property
    def _version_tag(self) -> str:
        # ASAN inserts -asan right before the version: amdrocm-core-asan7.15.
        return f"-asan{self.xy}" if self.asan else self.xy

    def host(self, base: str, fmt: PackageFormat | None = None) -> str:
        return f"{spelled(base, fmt)}-host{self._version_tag}"

    def device(self, base: str, arch: str, fmt: PackageFormat | None = None) -> str:
        return f"{spelled(base, fmt)}{self._version_tag}-{arch}"

    def versioned(
        self, base: str, fmt: PackageFormat | None = None, arch: str | None = None
    ) -> str:
        """Versioned, per-package meta, generic meta or versioned meta; arch-suffixed
        for an arch meta and for gfxarch packages in single-arch mode."""
        name = f"{spelled(base, fmt)}{self._version_tag}"
        return f"{name}-{arch}" if arch else name

    def non_versioned(
        self, base: str, fmt: PackageFormat | None = None, arch: str | None = None
    ) -> str:
        name = spelled(base, fmt) + ("-asan" if self.asan else "")
        return f"{name}-{arch}" if arch else name
