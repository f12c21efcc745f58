"""The AMDGPU processors gfxpack knows: one table for plan, split, kpack and descriptors.

Each processor LLVM's AMDGPU backend knows (``llvm/docs/AMDGPUUsage.rst``, "AMDGPU
Processors" and "AMDGPU Generic Processors") is one row: its name, the
``EF_AMDGPU_MACH_*`` value a code object's ``e_flags & 0xff`` carries for it
(``llvm/include/llvm/BinaryFormat/ELF.h``), the generic target whose code runs on
it, and whether LLVM still accepts it (gfx940 and gfx941 were removed; code objects
built for them are still recognised, but no release or device names them). A
processor's ``gfx_target_version`` (the number the kernel driver reports in
``/sys/class/kfd/kfd/topology/nodes/*/properties``) follows from its name.

On top of the table: target ids (``gfx942:sramecc+:xnack-``) and the e_flags bits
that encode them, the checks every command applies to a name it is given (a release
target may be one of TheRock's families such as ``gfx94X-dcgpu``; a device, an
arch a kernel is built for or an archive's arch may not), the check that a file
is a code object for the arch it is filed under, and the processor order every
listing uses (Decision 16).

>>> MACH["gfx942"], gfx_target_version("gfx942"), gfx_target_version("gfx90a")
(76, 90402, 90010)
>>> check_target("gfx94")
"target 'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"
>>> sort_targets(["gfx1201", "gfx90a", "gfx1100", "gfx950", "gfx942", "gfx1151"])
['gfx90a', 'gfx942', 'gfx950', 'gfx1100', 'gfx1151', 'gfx1201']
"""

from __future__ import annotations

import difflib
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Processor:
    """One row of the table."""

    name: str
    mach: int  # EF_AMDGPU_MACH_*: e_flags & 0xff of its code objects
    generic: str | None = None  # the generic target whose code objects run on it
    in_llvm: bool = True  # False: removed from LLVM, recognised in old code objects only

    @property
    def gfx_target_version(self) -> int:
        """major * 10000 + minor * 100 + stepping, as the kernel driver numbers it
        (gfx<major><minor><stepping>, the stepping one hex digit: gfx90a is 90010)."""
        # A variant built as its own target (gfx1250-strict) reports its processor's.
        body = self.name.removeprefix("gfx").split("-", 1)[0]
        return int(body[:-2]) * 10000 + int(body[-2]) * 100 + int(body[-1], 16)


_G9, _G94, _G101, _G103 = "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic"
_G11, _G117, _G12, _G125 = "gfx11-generic", "gfx11-7-generic", "gfx12-generic", "gfx12-5-generic"
_G13 = "gfx13-generic"

TABLE: tuple[Processor, ...] = (
    # GFX6 - GFX8
    Processor("gfx600", 0x20), Processor("gfx601", 0x21), Processor("gfx602", 0x3A),
    Processor("gfx700", 0x22), Processor("gfx701", 0x23), Processor("gfx702", 0x24),
    Processor("gfx703", 0x25), Processor("gfx704", 0x26), Processor("gfx705", 0x3B),
    Processor("gfx801", 0x28), Processor("gfx802", 0x29), Processor("gfx803", 0x2A),
    Processor("gfx805", 0x3C), Processor("gfx810", 0x2B),
    # GFX9 (Vega, CDNA)
    Processor("gfx900", 0x2C, _G9), Processor("gfx902", 0x2D, _G9),
    Processor("gfx904", 0x2E, _G9), Processor("gfx906", 0x2F, _G9),
    Processor("gfx908", 0x30), Processor("gfx909", 0x31, _G9),
    Processor("gfx90a", 0x3F), Processor("gfx90c", 0x32, _G9),
    Processor("gfx940", 0x40, _G94, in_llvm=False), Processor("gfx941", 0x4B, _G94, in_llvm=False),
    Processor("gfx942", 0x4C, _G94), Processor("gfx950", 0x4F, _G94),
    # GFX10 (RDNA 1, 2)
    Processor("gfx1010", 0x33, _G101), Processor("gfx1011", 0x34, _G101),
    Processor("gfx1012", 0x35, _G101), Processor("gfx1013", 0x42, _G101),
    Processor("gfx1030", 0x36, _G103), Processor("gfx1031", 0x37, _G103),
    Processor("gfx1032", 0x38, _G103), Processor("gfx1033", 0x39, _G103),
    Processor("gfx1034", 0x3E, _G103), Processor("gfx1035", 0x3D, _G103),
    Processor("gfx1036", 0x45, _G103),
    # GFX11 (RDNA 3, 3.5), GFX11.7
    Processor("gfx1100", 0x41, _G11), Processor("gfx1101", 0x46, _G11),
    Processor("gfx1102", 0x47, _G11), Processor("gfx1103", 0x44, _G11),
    Processor("gfx1150", 0x43, _G11), Processor("gfx1151", 0x4A, _G11),
    Processor("gfx1152", 0x55, _G11), Processor("gfx1153", 0x58, _G11),
    Processor("gfx1154", 0x57, _G11),
    Processor("gfx1170", 0x5D, _G117), Processor("gfx1171", 0x5E, _G117),
    Processor("gfx1172", 0x5C, _G117),
    # GFX12 (RDNA 4), GFX12.5, GFX13
    Processor("gfx1200", 0x48, _G12), Processor("gfx1201", 0x4E, _G12),
    Processor("gfx1250", 0x49, _G125), Processor("gfx1251", 0x5A, _G125),
    # A strict-mode variant of gfx1250: its own target and e_flags, gfx1250's ISA
    # version; not a gfx12-5-generic member (LLVM #218543, ROCm llvm-project #4121).
    Processor("gfx1250-strict", 0xEB),
    Processor("gfx1310", 0x50, _G13),
)  # fmt: skip

# Target owners (TheRock#8280, #8327): processor variants upstream builds as their
# own targets but ships in their processor's packages. Each owner lists every target
# its device package (and its ``device-<owner>`` wheel) carries, itself first; each
# target's payload keeps its own name (``<name>_<comp>_gfx1250-strict``,
# ``..._gfx1250-strict.kpack``). A processor not listed owns itself alone.
OWNERS: dict[str, tuple[str, ...]] = {
    "gfx1250": ("gfx1250", "gfx1250-strict"),
}
OWNER_OF: dict[str, str] = {target: owner for owner, ts in OWNERS.items() for target in ts}


def owner_of(target: str) -> str:
    """The processor whose packages carry ``target``'s code: its owner in
    :data:`OWNERS`, else the target itself (features are the caller's to strip).

    >>> owner_of("gfx1250-strict"), owner_of("gfx942")
    ('gfx1250', 'gfx942')
    """
    return OWNER_OF.get(target, target)


# EF_AMDGPU_MACH_* of each generic target (code object v6 and later).
GENERIC_MACH: dict[str, int] = {
    _G9: 0x51, _G94: 0x5F, _G101: 0x52, _G103: 0x53, _G11: 0x54, _G117: 0x62,
    _G12: 0x59, _G125: 0x5B, _G13: 0x63,
}  # fmt: skip

BY_NAME: dict[str, Processor] = {p.name: p for p in TABLE}
# The processors a release, a device or a kernel may name (LLVM's current list).
PROCESSORS = frozenset(p.name for p in TABLE if p.in_llvm)
GENERIC_PROCESSORS = frozenset(GENERIC_MACH)
# Every name a code object's e_flags can carry, removed processors included.
MACH: dict[str, int] = {**{p.name: p.mach for p in TABLE}, **GENERIC_MACH}
# The generic target whose code objects run on each processor of its family
# (gfx942 -> gfx9-4-generic). Not artifact_layout.GENERIC, an artifact's host content.
GENERIC_OF: dict[str, str] = {p.name: p.generic for p in TABLE if p.generic}
# Every processor code objects and file names may carry, longest name first, so
# that the first one a word starts with is the right one (gfx1100 before gfx110...).
PROCESSORS_BY_LENGTH: tuple[str, ...] = tuple(sorted(sorted(BY_NAME), key=len, reverse=True))
FEATURES = ("sramecc", "xnack")  # the target features a target id may set
# The processors with an xnack mode (LLVM's AMDGPUUsage processor table, the rows
# listing the xnack feature). A device of one runs each process with xnack on or off
# (HSA_XNACK=1: on; off by default) and loads code built for that mode or for either.
XNACK_PROCESSORS = frozenset(
    {"gfx801", "gfx810", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a",
     "gfx90c", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012",
     "gfx1013"}
)  # fmt: skip


def gfx_target_version(processor: str) -> int | None:
    """The kernel driver's number for a processor (``gfx942`` -> 90402); None for a
    name that is no processor (a generic target is never a device)."""
    found = BY_NAME.get(processor)
    return found.gfx_target_version if found else None


def processor_of(version: int) -> str | None:
    """The processor a device reporting ``gfx_target_version`` ``version`` is.

    >>> processor_of(110000), processor_of(90010), processor_of(1)
    ('gfx1100', 'gfx90a', None)
    """
    return next((p.name for p in TABLE if p.gfx_target_version == version), None)


# --- target ids and the e_flags that encode them --------------------------------------

_TARGET = re.compile(r"^(gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic|-strict)?)((?::[a-z]+[+-])*)$")

# e_flags bits (EI_ABIVERSION 1 is code object v3, 2 and later are v4+).
ABI_V3 = 1
XNACK_V3, SRAMECC_V3 = 0x100, 0x200
XNACK_V4_MASK, SRAMECC_V4_MASK = 0x300, 0xC00
_V4_SETTING = {0x000: None, 0x100: None, 0x200: "-", 0x300: "+"}  # unsupported, any, off, on


@dataclass(frozen=True, order=True)
class TargetId:
    """A parsed target id; ``str()`` gives the canonical spelling (features sorted)."""

    processor: str
    features: tuple[tuple[str, str], ...] = ()  # (name, "+" or "-"), sorted by name

    def __str__(self) -> str:
        return self.processor + "".join(f":{name}{sign}" for name, sign in self.features)

    def compatible(self) -> list[str]:
        """The target ids whose code a device with this id loads, most specific first:
        every subset of its features, in the order ROCm's kpack runtime tries them
        (rocm-systems ``shared/kpack/runtime/src/isa_target_match.h``,
        ``for_each_compatible_target``: masks counted down, the last feature dropped
        first). No generic target: the kpack runtime never tries one.

        >>> TargetId.parse("gfx942:sramecc+:xnack-").compatible()
        ['gfx942:sramecc+:xnack-', 'gfx942:sramecc+', 'gfx942:xnack-', 'gfx942']
        """
        count = len(self.features)
        forms: list[str] = []
        for mask in range((1 << count) - 1, -1, -1):
            kept = tuple(f for i, f in enumerate(self.features) if mask & (1 << (count - 1 - i)))
            forms.append(str(TargetId(self.processor, kept)))
        return forms

    def less_specific(self) -> list[str]:
        """Every form a fat binary's inline code objects may carry for this device, most
        specific first: :meth:`compatible`, then its family's generic target (the HIP
        runtime loads a generic code object from a bundle; the kpack runtime does not
        look for a generic archive).

        >>> TargetId.parse("gfx942:sramecc+:xnack-").less_specific()
        ['gfx942:sramecc+:xnack-', 'gfx942:sramecc+', 'gfx942:xnack-', 'gfx942', 'gfx9-4-generic']
        """
        generic = GENERIC_OF.get(self.processor)
        return self.compatible() + ([generic] if generic else [])

    @classmethod
    def parse(cls, text: str) -> TargetId:
        """Parse ``gfx90a:xnack-``; raises ValueError naming what was expected.

        >>> str(TargetId.parse("gfx90a:xnack+:sramecc-"))
        'gfx90a:sramecc-:xnack+'
        """
        match = _TARGET.match(text)
        if not match:
            raise ValueError(
                f"target id {text!r}: expected a processor with optional features, "
                "such as gfx90a or gfx90a:xnack-"
            )
        features: dict[str, str] = {}
        for part in match.group(2).split(":")[1:]:
            name, sign = part[:-1], part[-1]
            if name not in FEATURES or name in features:
                raise ValueError(
                    f"target id {text!r}: feature {name!r} unknown or repeated "
                    f"(expected {' and '.join(FEATURES)})"
                )
            features[name] = sign
        return cls(match.group(1), tuple(sorted(features.items())))


def flags_disagreement(
    target: TargetId, e_flags: int, abi_version: int, claimed: str = "the bundle entry"
) -> str | None:
    """Why a code object's e_flags do not encode ``target``, or None when they agree.
    ``claimed`` names what says the code object is for ``target``, for the message."""
    problem = _mach_problem(target.processor, e_flags, claimed)
    if problem:
        return problem
    wanted = dict(target.features)
    if abi_version <= ABI_V3:
        actual = {
            "xnack": "+" if e_flags & XNACK_V3 else "-",
            "sramecc": "+" if e_flags & SRAMECC_V3 else "-",
        }
        for name in FEATURES:
            if wanted.get(name, "-") != actual[name]:
                return f"e_flags say {name}{actual[name]}, the target id {target} does not"
        return None
    found = {
        "xnack": _V4_SETTING[e_flags & XNACK_V4_MASK],
        "sramecc": _V4_SETTING[(e_flags & SRAMECC_V4_MASK) >> 2],
    }
    for name in FEATURES:
        if wanted.get(name) != found[name]:
            said = f"{name}{found[name]}" if found[name] else f"no {name} setting"
            return f"e_flags say {said}, the target id {target} does not"
    return None


def _mach_problem(processor: str, e_flags: int, claimed: str) -> str | None:
    """Why e_flags do not name ``processor`` (their EF_AMDGPU_MACH byte), or None."""
    expected = MACH.get(processor)
    if expected is None:
        return f"unknown processor {processor!r}"
    mach = e_flags & 0xFF
    if mach != expected:
        names = {value: name for name, value in MACH.items()}
        return f"e_flags say {names.get(mach, hex(mach))}, {claimed} says {processor}"
    return None


# --- code objects ------------------------------------------------------------------------

# The ELF64 header fields a code object check reads: e_ident, e_type, e_machine
# (offset 0), e_flags (offset 48); the header is 64 bytes.
_IDENT_MACHINE = struct.Struct("<16sHH")
_FLAGS = struct.Struct("<I")
_FLAGS_AT, _HEADER_SIZE = 48, 64
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64


def code_object_problem(
    code: bytes | memoryview,
    target: TargetId,
    *,
    exact: bool = True,
    claimed: str = "the bundle entry",
) -> str | None:
    """Why ``code`` is not an AMDGPU code object for ``target`` (None when it is): an
    ELF64 little-endian file, e_machine EM_AMDGPU, OS/ABI HSA, and e_flags naming the
    target's processor. With ``exact`` (a bundle entry names the exact target id it
    was compiled for) the xnack/sramecc settings must match too; without it, an
    archive or kernel filed under a bare processor holds any of its variants."""
    if len(code) < _HEADER_SIZE or bytes(code[:4]) != b"\x7fELF":
        return "not an ELF file, expected an AMDGPU code object"
    ident, _type, machine = _IDENT_MACHINE.unpack_from(code, 0)
    if ident[4] != 2 or ident[5] != 1:  # ELFCLASS64, ELFDATA2LSB
        return "not a 64-bit little-endian ELF file, expected an AMDGPU code object"
    if machine != EM_AMDGPU:
        return f"e_machine {machine}, expected {EM_AMDGPU} (AMDGPU)"
    if ident[7] != ELFOSABI_AMDGPU_HSA:
        return f"OS/ABI {ident[7]}, expected {ELFOSABI_AMDGPU_HSA} (HSA)"
    (flags,) = _FLAGS.unpack_from(code, _FLAGS_AT)
    if not exact and not target.features:
        # Only the processor is claimed: any xnack/sramecc setting is one of its variants.
        return _mach_problem(target.processor, flags, claimed)
    return flags_disagreement(target, flags, ident[8], claimed)


# --- names users give ----------------------------------------------------------------------

_RELEASE_TARGETS = "a processor such as gfx942, gfx942:xnack+ or a family such as gfx94X-dcgpu"
_FAMILY = re.compile(r"^(?P<processor>gfx[0-9a-z]+?)(?P<any>x*)-(?P<tail>[a-z0-9-]+)$")


def check_target(target: str) -> str | None:
    """None if ``target`` is a release target: a known processor (with features), a
    generic target or one of TheRock's families (``gfx94X-dcgpu``); else why not."""
    processor, *features = target.split(":")
    lowered = processor.lower()
    if lowered in GENERIC_PROCESSORS or lowered in PROCESSORS:
        if processor != lowered:
            return f"target {target!r}: processor names are lowercase ({lowered})"
    elif not is_family(lowered):
        return (
            f"target {target!r} is not an AMDGPU processor LLVM knows"
            f"{_suggest(lowered.split('-', 1)[0])}"
        )
    return _feature_problem(f"target {target!r}", features)


def _feature_problem(label: str, features: list[str]) -> str | None:
    seen: set[str] = set()
    for feature in features:
        name, sign = feature[:-1], feature[-1:]
        if name not in FEATURES or sign not in ("+", "-") or name in seen:
            return (
                f"{label}: {feature!r} is not a target feature "
                "(expected xnack+, xnack-, sramecc+ or sramecc-, each at most once)"
            )
        seen.add(name)
    return None


def is_family(name: str) -> bool:
    """``gfx94x-dcgpu`` (any processor starting gfx94) or ``gfx1151-strict``: a name
    TheRock builds for, covering one or more processors, never a device's."""
    match = _FAMILY.match(name)
    if match is None:
        return False
    stem = match["processor"]
    if match["any"]:
        return any(p.startswith(stem) and len(p) > len(stem) for p in PROCESSORS)
    return stem in PROCESSORS


def processor_problem(name: str, *, generic: bool = False, features: bool = False) -> str | None:
    """Why ``name`` is not one processor (None when it is): for a device, the arch a
    kernel is built for, an archive's arch. ``generic`` admits generic targets,
    ``features`` a target id's ``:xnack±``/``:sramecc±``. A family
    (``gfx94X-dcgpu``) covers several processors, so it is refused, naming one.

    >>> processor_problem("gfx9420")
    "'gfx9420' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"
    >>> processor_problem("GFX942")
    "'GFX942' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"
    """
    processor, *parts = name.split(":")
    if parts and not features:
        return f"{name!r}: no target features here; give the processor alone ({processor})"
    if processor in PROCESSORS or (generic and processor in GENERIC_PROCESSORS):
        return _feature_problem(repr(name), parts)
    lowered = processor.lower()
    if lowered in GENERIC_PROCESSORS:
        members = sorted((p for p, g in GENERIC_OF.items() if g == lowered and p in PROCESSORS))
        return (
            f"{name!r} is a generic target, not a processor; give one of the processors "
            f"it covers ({', '.join(sort_targets(members))})"
        )
    if is_family(lowered):
        stem = lowered.split("-", 1)[0].rstrip("x")
        members = sort_targets(p for p in PROCESSORS if p.startswith(stem))
        shown = ", ".join(members[:4]) + (", ..." if len(members) > 4 else "")
        return f"{name!r} is a family of processors, not a processor; give one of them ({shown})"
    expected = "a processor such as gfx942" + (", gfx90a:xnack+" if features else "")
    return f"{name!r} is not an AMDGPU processor LLVM knows{_suggest(lowered, expected, generic)}"


def closest(name: str, generic: bool = True) -> str | None:
    """The known processor (or, with ``generic``, generic target) ``name`` most likely
    meant: itself lowercased (``GFX942``), else the closest spelling, else None."""
    known = PROCESSORS | GENERIC_PROCESSORS if generic else PROCESSORS
    if name.lower() in known:
        return name.lower()
    close = difflib.get_close_matches(name.lower(), sorted(known), n=1)
    return close[0] if close else None


def _suggest(name: str, expected: str = _RELEASE_TARGETS, generic: bool = True) -> str:
    """`` (did you mean gfx942?)`` for the closest known name, else what is expected."""
    close = closest(name, generic)
    return f" (did you mean {close}?)" if close else f" (expected {expected})"


# --- order (Decision 16) ------------------------------------------------------------

# A position no digit reaches: an ``X`` of a family (gfx94X) or the part of a processor
# a generic target leaves open (gfx9-4-generic covers every gfx94N) comes after it.
_ANY = 99
_GENERIC = re.compile(r"^gfx(?P<major>[0-9]+)(?:-(?P<minor>[0-9]+))?-generic$")
_NUMBERED = re.compile(r"^(?P<major>[0-9]+)(?P<minor>[0-9?])(?P<stepping>[0-9a-f?])$")

TargetOrder = tuple[int, int, int, int, int, str, str]


def target_order(target: str) -> TargetOrder:
    """The sort key of a target or arch suffix: processor order (major, minor, stepping
    as LLVM numbers them), a family (gfx94X) after its processors, a generic target
    after its family's processors, features (``:xnack+``) after the bare processor.
    A name that is no target sorts after every target, by its text."""
    processor, _, features = target.lower().partition(":")
    generic = _GENERIC.match(processor)
    if generic is not None:
        minor = generic["minor"]
        numbers = (int(generic["major"]), _ANY if minor is None else int(minor), _ANY, 1)
        return (0, *numbers, features, target)
    name, dash, tail = processor.partition("-")
    body = name.removeprefix("gfx")
    stem = body.rstrip("x")
    numbered = _NUMBERED.match(stem + "?" * (len(body) - len(stem)))
    if not name.startswith("gfx") or numbered is None:
        return (1, 0, 0, 0, 0, target.lower(), target)
    minor, stepping = numbered["minor"], numbered["stepping"]
    return (
        0,
        int(numbered["major"]),
        _ANY if minor == "?" else int(minor),
        _ANY if stepping == "?" else int(stepping, 16),
        0,
        f"{dash}{tail}:{features}" if features else f"{dash}{tail}",
        target,
    )


def sort_targets(targets: Iterable[str]) -> list[str]:
    """``targets`` in processor order (Decision 16): every listing of targets or arch
    suffixes (plan, build, report, verify, pictures, JSON) is put in this order.

    >>> sort_targets(["gfx11-generic", "gfx1151", "gfx1100", "gfx942:xnack+", "gfx942"])
    ['gfx942', 'gfx942:xnack+', 'gfx1100', 'gfx1151', 'gfx11-generic']
    """
    return sorted(targets, key=target_order)
