"""Resolution: the catalog's descriptors, joined by UUID into per-engine sets (spec section 9)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gfxpack.descriptors.archives import ArchiveSource
from gfxpack.descriptors.catalog import Catalog, CatalogEntry
from gfxpack.descriptors.diagnostics import Diagnostics
from gfxpack.descriptors.parse import PACK_ENGINE, resolved_library
from gfxpack.descriptors.types import (
    Descriptor,
    KernelDescriptor,
    Key,
    MetadataSchema,
    arch_covers,
    arch_overlaps,
    arch_text,
)

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def engine_id(name: str) -> int:
    """FNV-1a 64 over the UTF-8 name, as a two's-complement int64.

    >>> engine_id("hipkernel:Gfx950AttentionDense")
    -8518255706404043867
    >>> engine_hex(engine_id("hipkernel:FlydslAttention"))
    '0x45D33A15C6A70E0B'
    """
    value = FNV_OFFSET
    for byte in name.encode("utf-8"):
        value = ((value ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def engine_hex(value: int) -> str:
    return f"0x{value & 0xFFFFFFFFFFFFFFFF:016X}"


@dataclass(frozen=True)
class ResolvedPack:
    descriptor: Descriptor  # the .kdp.json
    kernels: tuple[
        KernelDescriptor, ...
    ]  # inline kernels, then the referenced ones, authored order
    matchers: tuple[Descriptor, ...]
    dispatch: Descriptor

    @property
    def arch(self) -> tuple[str, ...]:
        return self.descriptor.arch

    def effective_arch(self, kernel: KernelDescriptor) -> tuple[str, ...]:
        return kernel.arch or self.arch


@dataclass(frozen=True)
class DescriptorSet:
    engine: Descriptor  # the .ued.json
    engine_id: int
    schema: Descriptor  # the .kmd.json
    heuristic: Descriptor | None
    packs: tuple[ResolvedPack, ...]
    matchers: tuple[Descriptor, ...]
    dispatches: tuple[Descriptor, ...]

    @property
    def name(self) -> str:
        return self.engine.name

    def label(self) -> str:
        return f"engine '{self.engine.name}' id={self.engine.id}"


def engine_label(descriptor: Descriptor) -> str:
    return f"engine '{descriptor.name}' id={descriptor.id}"


def disabled_by(entries: str | None, descriptor: Descriptor) -> bool:
    """HIPDNN_DISABLE_ENGINES: names, signed decimal ids, 0x hex ids or UUIDs, comma separated."""
    if not entries:
        return False
    ident = engine_id(descriptor.name)
    wanted = {descriptor.name, str(ident)}
    for item in (part.strip() for part in entries.split(",")):
        if not item:
            continue
        if item in wanted or item.lower() in (engine_hex(ident).lower(), descriptor.id.lower()):
            return True
    return False


class _PackDropped(Exception):
    def __init__(self, code: str, reason: str):
        self.code = code
        self.reason = reason


class Resolver:
    """Joins a catalog into engine sets; kpack kernels are checked against ``archives``."""

    def __init__(
        self,
        catalog: Catalog,
        diags: Diagnostics,
        archives: ArchiveSource,
        disabled: str | None = None,
        authored: bool = False,
    ):
        self.catalog = catalog
        self.diags = diags
        self.disabled = disabled
        self.archives = archives
        # An authored tree (what ``descriptors pack`` reads): a pack without kernels
        # is one the kernel list fills, not a pack to drop.
        self.authored = authored

    def run(self) -> list[DescriptorSet]:
        engines = self.catalog.of_type(".ued.json")
        active: list[CatalogEntry] = []
        for entry in engines:
            if disabled_by(self.disabled, entry.descriptor):
                self.diags.info(
                    "D401",
                    entry.descriptor.path,
                    f"{engine_label(entry.descriptor)} is disabled by "
                    "HIPDNN_DISABLE_ENGINES; skipping it",
                )
            else:
                active.append(entry)
        claims = Counter(engine_id(e.descriptor.name) for e in active if not e.conflicted)
        sets = []
        for entry in active:
            resolved = self.engine(entry, claims)
            if resolved is not None:
                sets.append(resolved)
        self.orphans()
        return sets

    def engine(self, entry: CatalogEntry, claims: Counter[int]) -> DescriptorSet | None:
        ued = entry.descriptor
        label = engine_label(ued)
        body = ued.body
        if entry.conflicted:
            self.diags.error("D402", ued.path, f"{label} is defined by conflicting files")
            return None
        ident = engine_id(ued.name)
        if claims[ident] > 1:
            self.diags.error(
                "D403",
                ued.path,
                f"engine name '{ued.name}' is claimed by more than one UED; dropping "
                f"every one of them, including id={ued.id}. Disable all but one with "
                "HIPDNN_DISABLE_ENGINES",
            )
            return None
        heuristic = None
        if ued.body.heuristic is not None:
            heuristic = self.catalog.healthy(".uhd.json", body.heuristic)
            if heuristic is None:
                self.diags.error(
                    "D404",
                    ued.path,
                    f"{label} names heuristic {body.heuristic}, "
                    f"{self.undefined('.uhd.json', body.heuristic)}",
                )
                return None
        schema = self.catalog.healthy(".kmd.json", body.metadata)
        if schema is None:
            self.diags.error(
                "D405",
                ued.path,
                f"{label} names metadata schema {body.metadata}, "
                f"{self.undefined('.kmd.json', body.metadata)}",
            )
            return None
        for knob in body.knobs:
            if schema.body.field(knob) is None:
                self.diags.error(
                    "D406",
                    ued.path,
                    f"{label} exposes knob '{knob}', which metadata schema "
                    f"'{schema.name}' does not declare",
                )
                return None
        packs = []
        for pack_entry in self.catalog.packs_of(ued.id):
            pack = pack_entry.descriptor
            if pack_entry.conflicted:
                continue
            try:
                packs.append(self.pack(pack, schema))
            except _PackDropped as dropped:
                self.diags.error(
                    dropped.code,
                    pack.path,
                    f"pack '{pack.name}' id={pack.id} {dropped.reason}; dropping the pack",
                )
        if not packs:
            rejected = self.catalog.rejected.get((PACK_ENGINE, ued.id))
            why = f' ("{rejected.path}" names it, but was {rejected.outcome})' if rejected else ""
            self.diags.error(
                "D408",
                ued.path,
                f"engine '{ued.name}' has no loadable kernel pack{why}; dropping it",
            )
            return None
        matchers = {m.id: m for p in packs for m in p.matchers}
        dispatches = {p.dispatch.id: p.dispatch for p in packs}
        return DescriptorSet(
            ued,
            ident,
            schema,
            heuristic,
            tuple(packs),
            tuple(matchers[k] for k in sorted(matchers)),
            tuple(dispatches[k] for k in sorted(dispatches)),
        )

    def pack(self, pack: Descriptor, schema: Descriptor) -> ResolvedPack:
        body = pack.body
        matchers = []
        for ident in body.matchers:
            matcher = self.catalog.healthy(".umd.json", ident)
            if matcher is None:
                raise _PackDropped(
                    "D410", f"names matcher {ident}, {self.undefined('.umd.json', ident)}"
                )
            matchers.append(matcher)
        dispatch = self.catalog.healthy(".udd.json", body.dispatch)
        if dispatch is None:
            raise _PackDropped(
                "D411",
                f"names dispatch descriptor {body.dispatch}, "
                f"{self.undefined('.udd.json', body.dispatch)}",
            )
        kernels = list(body.kernels)
        for ident in body.references:
            code, found = self.find_kernel(ident, pack.arch)
            if found is None:
                raise _PackDropped(code, self._reference_reason(code, ident, pack.arch))
            kernels.append(found.descriptor.body)
        seen = set()
        for kernel in kernels:
            if kernel.id in seen:
                raise _PackDropped("D416", f"names kernel {kernel.id} more than once")
            seen.add(kernel.id)
        for kernel in kernels:
            self.check_metadata(kernel, schema)
        resolved = ResolvedPack(pack, tuple(kernels), tuple(matchers), dispatch)
        for kernel in kernels:
            if kernel.source.kind == "kpack":
                self.check_kpack(kernel, resolved.effective_arch(kernel))
        if not kernels and not self.authored:
            raise _PackDropped("D424", "declares no kernels")
        return resolved

    def _reference_reason(self, code: str, ident: str, pack_arch: tuple[str, ...]) -> str:
        if code == "D412":
            return f"names kernel {ident}, which several descriptors define within the pack's arch"
        if code == "D414":
            overlapping = next(
                e.descriptor
                for e in self._candidates(ident)
                if arch_overlaps(pack_arch, e.descriptor.arch)
            )
            return (
                f"names kernel {ident}, which declares arch {arch_text(overlapping.arch)} "
                f"reaching past the pack's {arch_text(pack_arch)}"
            )
        if code == "D415":
            return f"names kernel {ident}, which is defined only for another arch"
        if self._candidates(ident):  # D413 for a conflicted kernel
            return f"names kernel {ident}, which no descriptor defines"
        return f"names kernel {ident}, {self.undefined('.ukd.json', ident)}"

    def undefined(self, suffix: str, ident: str) -> str:
        """Why a reference finds no descriptor: none defines it, or the file that does was
        rejected (then its own diagnostic, reported earlier, is the one to fix)."""
        rejected = self.catalog.rejected.get((suffix, ident))
        catalogued = (
            bool(self._candidates(ident))  # standalone kernels are keyed by arch too
            if suffix == ".ukd.json"
            else (suffix, ident) in self.catalog.entries
        )
        if rejected is None or catalogued:
            return "which no descriptor defines"  # absent, or conflicted (D303/D304)
        return rejected.reason()

    def _candidates(self, ident: str) -> list[CatalogEntry]:
        return self.catalog.kernels_with_id(ident)

    def find_kernel(
        self, ident: str, pack_arch: tuple[str, ...]
    ) -> tuple[str, CatalogEntry | None]:
        """findKernelForPack: (code, catalog entry); the code says why there is none."""
        candidates = self._candidates(ident)
        covered = [e for e in candidates if arch_covers(pack_arch, e.descriptor.arch)]
        if len(covered) >= 2:
            return "D412", None
        if len(covered) == 1:
            entry = covered[0]
            return ("D413", None) if entry.conflicted else ("", entry)
        if any(arch_overlaps(pack_arch, e.descriptor.arch) for e in candidates):
            return "D414", None
        return ("D415" if candidates else "D413"), None

    def check_metadata(self, kernel: KernelDescriptor, schema: Descriptor) -> None:
        problem = metadata_problem(kernel.name, kernel.metadata, schema)
        if problem is not None:
            raise _PackDropped(*problem)

    def check_kpack(self, kernel: KernelDescriptor, arch: tuple[str, ...]) -> None:
        library = resolved_library(kernel)
        source = kernel.source
        _, toc_key = source.archive
        if not self.archives.exists(library):
            raise _PackDropped(
                "D420",
                f"kernel '{kernel.name}' names kpack archive \"{library}\", which does not exist",
            )
        try:
            held = self.archives.arches(library, toc_key)
            for wanted in arch or tuple(held) or ("any",):
                if wanted not in held:
                    raise _PackDropped(
                        "D422",
                        f"kernel '{kernel.name}' names toc_key '{toc_key}', which "
                        f'"{library}" does not hold for arch {wanted}',
                    )
                actual = self.archives.digest(library, toc_key, wanted)
                if actual != source.sha256:
                    raise _PackDropped(
                        "D423",
                        f"kernel '{kernel.name}' has sha256 {source.sha256}, "
                        f'but "{library}" holds {actual}',
                    )
        except ValueError as e:  # an InvalidKpack among them
            why = getattr(e, "problem", None) or str(e)
            raise _PackDropped(
                "D421",
                f"kernel '{kernel.name}' names kpack archive \"{library}\", "
                f"which cannot be read: {why}",
            ) from None

    def orphans(self) -> None:
        """Packs naming no catalogued engine (D409); standalone kernels no pack uses (D407)."""
        engines = {e.descriptor.id for e in self.catalog.of_type(".ued.json")}
        referenced: set[Key] = set()
        for entry in self.catalog.of_type(".kdp.json"):
            if entry.conflicted:
                continue
            pack = entry.descriptor
            if pack.body.engine not in engines:
                self.diags.error(
                    "D409",
                    pack.path,
                    f"pack '{pack.name}' id={pack.id} names engine {pack.body.engine}, "
                    f"{self.undefined('.ued.json', pack.body.engine)}; dropping it",
                )
            for ident in pack.body.references:
                _, found = self.find_kernel(ident, pack.arch)
                if found is not None:
                    referenced.add(found.descriptor.key)
        for entry in self.catalog.of_type(".ukd.json"):
            kernel = entry.descriptor
            if not entry.conflicted and kernel.key not in referenced:
                self.diags.warn(
                    "D407",
                    kernel.path,
                    f"kernel '{kernel.name}' id={kernel.id} loaded from "
                    f'"{kernel.path}", but no pack references it; it will never be '
                    "dispatched",
                )


def metadata_problem(
    kernel: str, values: Mapping[str, Any], schema: Descriptor
) -> tuple[str, str] | None:
    """(code, reason) when a kernel's metadata does not fit its engine's schema (a
    ``.kmd.json``): an undefaulted field omitted, a value of the wrong type, or a field
    the schema does not declare; None when it fits."""
    fields = schema.body.by_name
    for field in schema.body.fields:
        if field.name not in values:
            if field.mandatory:
                return (
                    "D417",
                    f"kernel '{kernel}' omits metadata field '{field.name}', which declares "
                    "no default",
                )
        elif not value_has_type(values[field.name], field.type):
            return (
                "D418",
                f"kernel '{kernel}' sets metadata field '{field.name}' with a value of the "
                "wrong type",
            )
    if not fields.keys() >= values.keys():
        key = min(values.keys() - fields.keys())  # the first undeclared, in sorted order
        return (
            "D419",
            f"kernel '{kernel}' sets metadata field '{key}', which schema '{schema.name}' "
            "does not declare",
        )
    return None


def value_has_type(value: Any, kind: str) -> bool:
    """Whether a metadata value fits a field type; an integer widens to float."""
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, list)


def completed_metadata(
    kernel: KernelDescriptor, schema: MetadataSchema
) -> tuple[tuple[str, Any], ...]:
    """The kernel's metadata tuple with defaults applied, floats widened, in field order."""
    values = []
    for field in schema.fields:
        value = kernel.metadata.get(field.name, field.default)
        if field.type == "float":
            value = float(value)
        if isinstance(value, list):
            value = tuple(value)
        values.append((field.name, value))
    return tuple(values)
