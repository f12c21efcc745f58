"""The dependency rules of spec packaging.md section 7.1, one function per variant.

Each rule answers one question: a variant of some base declares a dependency
on base ``dep``; which variant of ``dep`` does it depend on? The answer is a
:class:`Choice`: the variant (or None, with the reason it is omitted) and
why. Pins are a separate question, answered by :func:`pin_op`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from gfxpack.plan.model import Kind, PinPolicy, Reason


class Shape(StrEnum):
    """How a variant's name is built from its base."""

    HOST = "host"  # <base>-host<X.Y>
    # <base><X.Y>[-<arch>]: versioned packages, metas, devices and arch metas
    VERSIONED = "versioned"
    NON_VERSIONED = "non-versioned"  # <base>[-<arch>]


class RuleName(StrEnum):
    """The dependency rule a variant follows (see :data:`VARIANT_RULES`)."""

    HOST = "host"
    VERSIONED = "versioned"
    DEVICE = "device"
    DEVEL = "devel"
    ARCH_META = "arch-meta"
    VERSIONED_META = "versioned-meta"
    SINGLE_ARCH = "single-arch"


@dataclass(frozen=True, slots=True)
class Ref:
    """A variant of a base, by the shape of its name (and its arch suffix)."""

    shape: Shape
    base: str
    arch: str | None = None


@dataclass(frozen=True, slots=True)
class Choice:
    """A rule's answer: the variant depended on (None: the dependency is omitted),
    why, and what the user should hear about it."""

    ref: Ref | None
    reason: Reason
    warning: str | None = None


class Bases(Protocol):
    """What the rules need to know about the other bases of the release."""

    def is_gfxarch(self, base: str) -> bool: ...

    def is_metapackage(self, base: str) -> bool: ...

    def has_arch(self, base: str, arch: str) -> bool:
        """Whether the gfxarch base has a device (or arch meta) for ``arch``."""
        ...

    def host_name(self, base: str) -> str: ...


def host(u: Bases, dep: str, arch: str | None) -> Choice:
    """Host packages (and non-gfxarch versioned packages, extending Decision 1):
    the host variant of a gfxarch dependency, else its versioned package."""
    if not u.is_gfxarch(dep):
        return Choice(Ref(Shape.VERSIONED, dep), Reason.NON_GFXARCH)
    if u.is_metapackage(dep):
        return Choice(
            Ref(Shape.VERSIONED, dep),
            Reason.FULL_META,
            f"{dep} is a gfxarch metapackage, which has no host variant: "
            "depending on its generic meta (every arch)",
        )
    return Choice(Ref(Shape.HOST, dep), Reason.HOST_VARIANT)


def device(u: Bases, dep: str, arch: str | None) -> Choice:
    """Device packages: the same-arch variant of each gfxarch dependency; the
    non-gfxarch ones are carried by the device's own host."""
    assert arch is not None
    if not u.is_gfxarch(dep):
        return Choice(None, Reason.NON_GFXARCH)
    if u.has_arch(dep, arch):
        return Choice(Ref(Shape.VERSIONED, dep, arch), Reason.SAME_ARCH)
    return Choice(None, Reason.SAME_ARCH, f"{dep} has no {arch} device package: dependency omitted")


def devel(u: Bases, dep: str, arch: str | None) -> Choice:
    """Non-meta -devel packages (Decision 15): the host variant of a gfxarch dependency,
    else its versioned package. Compiling and linking need headers and host libraries;
    a -devel never pulls device code, so a per-arch SDK meta installs one arch."""
    if not u.is_gfxarch(dep):
        return Choice(Ref(Shape.VERSIONED, dep), Reason.NON_GFXARCH)
    if u.is_metapackage(dep):
        return Choice(
            None,
            Reason.HOST_VARIANT,
            f"{dep} is a gfxarch metapackage, which has no host variant: dependency omitted "
            "(a -devel package pulls no device code; depend on the -devel packages of its "
            "members instead)",
        )
    return Choice(Ref(Shape.HOST, dep), Reason.HOST_VARIANT)


def arch_meta(u: Bases, dep: str, arch: str | None) -> Choice:
    """Arch metas: the same-arch variant, falling back to the host variant."""
    assert arch is not None
    if not u.is_gfxarch(dep):
        return Choice(Ref(Shape.VERSIONED, dep), Reason.NON_GFXARCH)
    if u.has_arch(dep, arch):
        return Choice(Ref(Shape.VERSIONED, dep, arch), Reason.SAME_ARCH)
    return Choice(
        Ref(Shape.HOST, dep),
        Reason.HOST_FALLBACK,
        f"{dep} has no {arch} device package: depending on {u.host_name(dep)} instead",
    )


def versioned_meta(u: Bases, dep: str, arch: str | None) -> Choice:
    """Gfxarch=False metapackages (a devel meta among them): every dependency's full
    package."""
    reason = Reason.FULL_META if u.is_gfxarch(dep) else Reason.NON_GFXARCH
    return Choice(Ref(Shape.VERSIONED, dep), reason)


def single_arch(u: Bases, dep: str, arch: str | None) -> Choice:
    """Single-arch (legacy) mode: gfxarch dependencies carry the family suffix."""
    if u.is_gfxarch(dep):
        return Choice(Ref(Shape.VERSIONED, dep, arch), Reason.SAME_ARCH)
    return Choice(Ref(Shape.VERSIONED, dep), Reason.NON_GFXARCH)


Rule = Callable[[Bases, str, "str | None"], Choice]

# Which rule a variant follows, and whether it carries system dependencies.
VARIANT_RULES: Mapping[RuleName, tuple[Rule, bool]] = {
    RuleName.HOST: (host, True),
    RuleName.VERSIONED: (host, True),
    RuleName.DEVICE: (device, False),
    RuleName.DEVEL: (devel, True),
    RuleName.ARCH_META: (arch_meta, True),
    RuleName.VERSIONED_META: (versioned_meta, True),
    RuleName.SINGLE_ARCH: (single_arch, True),
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
