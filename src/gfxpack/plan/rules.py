"""The dependency rules of spec packaging.md section 7.1, one function per variant.

Each rule answers one question: a variant of some base declares a dependency
on base ``dep``; which variant of ``dep`` does it depend on? The answer is a
:class:`Resolution`: the variant (or None, with the reason it is omitted) and
why. Pins are a separate question, answered by :func:`pin_op`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gfxpack.plan.model import Kind, PinPolicy, Reason


@dataclass(frozen=True, slots=True)
class Ref:
    """A variant of a base: ``host``, ``versioned`` (also metas, devices and arch
    metas, which all share the ``<base><X.Y>[-<arch>]`` shape) or ``non-versioned``."""

    shape: str
    base: str
    arch: str | None = None


@dataclass(frozen=True, slots=True)
class Resolution:
    ref: Ref | None
    reason: Reason
    warning: str | None = None


class Universe(Protocol):
    """What the rules need to know about the other bases of the release."""

    def is_gfxarch(self, base: str) -> bool: ...

    def is_metapackage(self, base: str) -> bool: ...

    def has_arch(self, base: str, arch: str) -> bool:
        """Whether the gfxarch base has a device (or arch meta) for ``arch``."""
        ...

    def host_name(self, base: str) -> str: ...


def host(u: Universe, dep: str, arch: str | None) -> Resolution:
    """Host packages (and non-gfxarch versioned packages, extending Decision 1):
    the host variant of a gfxarch dependency, else its versioned package."""
    if not u.is_gfxarch(dep):
        return Resolution(Ref("versioned", dep), Reason.NON_GFXARCH)
    if u.is_metapackage(dep):
        return Resolution(
            Ref("versioned", dep),
            Reason.FULL_META,
            f"{dep} is a gfxarch metapackage, which has no host variant: "
            "depending on its generic meta (every arch)",
        )
    return Resolution(Ref("host", dep), Reason.HOST_VARIANT)


def device(u: Universe, dep: str, arch: str | None) -> Resolution:
    """Device packages: the same-arch variant of each gfxarch dependency; the
    non-gfxarch ones are carried by the device's own host."""
    assert arch is not None
    if not u.is_gfxarch(dep):
        return Resolution(None, Reason.NON_GFXARCH)
    if u.has_arch(dep, arch):
        return Resolution(Ref("versioned", dep, arch), Reason.SAME_ARCH)
    return Resolution(
        None, Reason.SAME_ARCH, f"{dep} has no {arch} device package: dependency omitted"
    )


def devel(u: Universe, dep: str, arch: str | None) -> Resolution:
    """-devel packages (Decision 2): the full meta of a gfxarch dependency, so that
    headers, host libraries and kernels for every arch come along."""
    reason = Reason.FULL_META if u.is_gfxarch(dep) else Reason.NON_GFXARCH
    return Resolution(Ref("versioned", dep), reason)


def arch_meta(u: Universe, dep: str, arch: str | None) -> Resolution:
    """Arch metas: the same-arch variant, falling back to the host variant."""
    assert arch is not None
    if not u.is_gfxarch(dep):
        return Resolution(Ref("versioned", dep), Reason.NON_GFXARCH)
    if u.has_arch(dep, arch):
        return Resolution(Ref("versioned", dep, arch), Reason.SAME_ARCH)
    return Resolution(
        Ref("host", dep),
        Reason.HOST_FALLBACK,
        f"{dep} has no {arch} device package: depending on {u.host_name(dep)} instead",
    )


def versioned_meta(u: Universe, dep: str, arch: str | None) -> Resolution:
    """Gfxarch=False metapackages and devel metas: every dependency's full package."""
    reason = Reason.FULL_META if u.is_gfxarch(dep) else Reason.NON_GFXARCH
    return Resolution(Ref("versioned", dep), reason)


def single_arch(u: Universe, dep: str, arch: str | None) -> Resolution:
    """Single-arch (legacy) mode: gfxarch dependencies carry the family suffix."""
    if u.is_gfxarch(dep):
        return Resolution(Ref("versioned", dep, arch), Reason.SAME_ARCH)
    return Resolution(Ref("versioned", dep), Reason.NON_GFXARCH)


Rule = Callable[[Universe, str, "str | None"], Resolution]

# Which rule a variant follows, and whether it carries system dependencies.
RULES: Mapping[str, tuple[Rule, bool]] = {
    "host": (host, True),
    "versioned": (host, True),
    "device": (device, False),
    "devel": (devel, True),
    "arch-meta": (arch_meta, True),
    "versioned-meta": (versioned_meta, True),
    "single-arch": (single_arch, True),
}

_FAMILY_REASONS = frozenset({Reason.OWN_HOST, Reason.MEMBER, Reason.ALIAS})


def pin_op(policy: PinPolicy, kind: Kind, reason: Reason, from_metapackage: bool) -> str | None:
    """The operator pinning an in-set edge (Decision 4), or None for no pin.

    ``family``: ``=`` inside a package's own family (device → own host, meta →
    host and devices, non-versioned → versioned) and from every aggregator to
    its members; ``>=`` on every other package of the run.
    """
    if policy is PinPolicy.EXACT:
        return "="
    if policy is PinPolicy.MINIMUM:
        return ">="
    if policy is PinPolicy.FAMILY:
        return "=" if reason in _FAMILY_REASONS or kind.is_aggregator else ">="
    # upstream: metapackages pin exactly; the non-versioned alias only of a metapackage.
    if kind.is_aggregator or (reason is Reason.ALIAS and from_metapackage):
        return "="
    return None


def dependency_base(name: str, bases: Mapping[str, object]) -> str | None:
    """The base a dependency names: exactly, or by its DEB ``-dev`` spelling."""
    if name in bases:
        return name
    if name.endswith("-dev") and name + "el" in bases:
        return name + "el"
    return None


def is_package_dependency(name: str) -> bool:
    """Names starting ``amdrocm`` are packages of the release; others are system packages."""
    return name.startswith("amdrocm")
