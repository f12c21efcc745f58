"""Loading descriptor trees: walk, parse, catalog, resolve, validate.

:func:`load_descriptor_sets` is upstream's ``resolveDescriptorSets``;
:func:`load_validated` is the provider entry point
``loadValidatedDescriptorSets`` (spec section 11). Both are total: whatever
the files hold, they return a :class:`LoadResult` and never raise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack._gc import paused_gc
from gfxpack.descriptors.archives import KpackArchives
from gfxpack.descriptors.catalog import Catalog
from gfxpack.descriptors.diagnostics import Diagnostics
from gfxpack.descriptors.parse import parse_file
from gfxpack.descriptors.registry import EngineNames, SymbolRegistry
from gfxpack.descriptors.resolve import (
    DescriptorSet,
    ResolvedPack,
    Resolver,
    completed_metadata,
    engine_hex,
)
from gfxpack.descriptors.types import KernelDescriptor, arch_overlaps, device_base
from gfxpack.descriptors.walk import descriptor_files
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE

OWNER = "gfxpack.descriptors"
SYMBOLS_UNCHECKED = "D510"  # INFO: no symbol registry, so no symbol was checked


@dataclass
class LoadResult:
    roots: list[Path]
    sets: list[DescriptorSet]
    diagnostics: Diagnostics
    catalog: Catalog = field(default_factory=Catalog)

    def engine(self, name: str) -> DescriptorSet | None:
        return next((s for s in self.sets if s.name == name), None)


def provider_roots(
    installed: Sequence[str | os.PathLike[str]],
    environ: Mapping[str, str],
    runtime: str | None = None,
    diags: Diagnostics | None = None,
) -> list[Path]:
    """Roots as the provider finds them: HIPDNN_DESCRIPTOR_DIR replaces the installed
    tree when it names a directory; HIPDNN_DESCRIPTOR_RUNTIME_DIR (or ``runtime``) adds a
    drop-in root after it. A variable naming no directory is a WARN D107."""
    diags = diags if diags is not None else Diagnostics()
    roots = [Path(p) for p in installed]
    override = environ.get("HIPDNN_DESCRIPTOR_DIR")
    if override is not None:
        if os.path.isdir(override):
            roots = [Path(override)]
        else:
            diags.warn(
                "D107",
                override,
                f'HIPDNN_DESCRIPTOR_DIR "{override}" is not a directory; ignoring it',
            )
    drop_in = runtime if runtime is not None else environ.get("HIPDNN_DESCRIPTOR_RUNTIME_DIR")
    if drop_in is not None:
        if os.path.isdir(drop_in):
            roots.append(Path(drop_in))
        else:
            diags.warn(
                "D107",
                drop_in,
                f'HIPDNN_DESCRIPTOR_RUNTIME_DIR "{drop_in}" is not a directory; ignoring it',
            )
    return roots


def build_catalog(roots: Sequence[Path], diags: Diagnostics, authored: bool = False) -> Catalog:
    """Walk every root in order; a root's entries are settled before the next is read.
    ``authored``: the roots are authored trees, walked by the packager's rule (walk.py)."""
    catalog = Catalog()
    for index, root in enumerate(roots):
        catalog.begin_root(index)
        for path, suffix in descriptor_files(Path(root), diags, authored):
            try:
                descriptor = parse_file(path, os.fspath(root), suffix, diags, catalog.rejected)
            except Exception as e:
                diags.error("D202", path, f'failed to parse "{path}": {type(e).__name__}: {e}')
                continue
            if descriptor is not None:
                catalog.insert(descriptor, diags)
    return catalog


def load_descriptor_sets(
    roots: Sequence[str | os.PathLike[str]],
    disabled: str | None = None,
    diags: Diagnostics | None = None,
    max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
    authored: bool = False,
) -> LoadResult:
    """Resolve the descriptors under ``roots`` into per-engine sets (no symbol checks).
    ``disabled`` is HIPDNN_DISABLE_ENGINES' value; no kpack code object larger than
    ``max_object_size`` is read. ``authored``: the roots are authored sources (what
    ``descriptors pack`` reads), walked by the packager's rule (see walk.py) and whose
    packs may leave their kernels to the kernel list."""
    diags = diags if diags is not None else Diagnostics()
    paths = [Path(r) for r in roots]
    catalog = build_catalog(paths, diags, authored)
    with KpackArchives(max_object_size) as archives:
        sets = Resolver(catalog, diags, archives, disabled, authored).run()
    return LoadResult(paths, sets, diags, catalog)


def load_validated(
    roots: Sequence[str | os.PathLike[str]],
    registry: SymbolRegistry | None = None,
    disabled: str | None = None,
    names: EngineNames | None = None,
    diags: Diagnostics | None = None,
    max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
    authored: bool = False,
) -> LoadResult:
    """Load, resolve and validate: only engines that would construct are returned.
    ``names`` is the engine-name registry engines are registered in (a provider
    process keeps one); without it, a fresh one for this load. ``authored``: see
    :func:`load_descriptor_sets`."""
    with paused_gc():
        return _load_validated(
            roots,
            registry,
            disabled,
            names if names is not None else EngineNames(),
            diags,
            max_object_size,
            authored,
        )


# One reason an engine does not validate: (diagnostic code, message).
Problem = tuple[str, str]


def _load_validated(
    roots: Sequence[str | os.PathLike[str]],
    registry: SymbolRegistry | None,
    disabled: str | None,
    names: EngineNames,
    diags: Diagnostics | None,
    max_object_size: int,
    authored: bool,
) -> LoadResult:
    result = load_descriptor_sets(roots, disabled, diags, max_object_size, authored)
    diags = result.diagnostics
    if registry is None:
        diags.info(SYMBOLS_UNCHECKED, None, "no symbol registry supplied; symbol checks skipped")
    accepted = []
    for candidate in result.sets:
        problems = [
            *symbol_problems(candidate, registry),
            *collision_problems(candidate, names),
            *probe_problems(candidate),
        ]
        for code, message in problems:
            diags.error(code, candidate.engine.path, message)
        if candidate.heuristic is None:
            diags.warn(
                "D507",
                candidate.engine.path,
                f"{candidate.label()} ships no heuristic; ranking kernels by priority, then id",
            )
        if problems:
            continue
        try:
            names.register(candidate.engine_id, candidate.name, OWNER)
        except ValueError as e:
            diags.info(
                "D508", candidate.engine.path, f"{candidate.label()} was not registered: {e}"
            )
        accepted.append(candidate)
    where = ", ".join(f'"{root}"' for root in result.roots) or "no roots"
    diags.info("D509", None, f"{len(accepted)} descriptor-backed engine(s) loaded from {where}")
    result.sets = accepted
    return result


def symbol_problems(candidate: DescriptorSet, registry: SymbolRegistry | None) -> Iterator[Problem]:
    if registry is None:
        return
    label = candidate.label()
    for matcher in candidate.matchers:
        kind = "graph_match" if matcher.body.scope == "graph" else "kernel_match"
        if not registry.has(kind, matcher.body.symbol):
            yield (
                "D501",
                f"{label} names unregistered match symbol '{matcher.body.symbol}'; dropping it",
            )
    graph_match = candidate.engine.body.graph_match
    if graph_match is not None and not registry.has("graph_match", graph_match):
        yield "D504", f"{label} names unregistered graph match symbol '{graph_match}'; dropping it"
    for dispatch in candidate.dispatches:
        if not registry.has("dispatch", dispatch.body.symbol):
            yield (
                "D502",
                f"{label} names unregistered dispatch symbol '{dispatch.body.symbol}'; dropping it",
            )
    heuristic = candidate.heuristic
    if (
        heuristic is not None
        and heuristic.body.kind == "native"
        and not registry.has("score", heuristic.body.payload)
    ):
        yield (
            "D503",
            f"{label} names unregistered score symbol '{heuristic.body.payload}'; dropping it",
        )


def collision_problems(candidate: DescriptorSet, names: EngineNames) -> Iterator[Problem]:
    holder = names.holder(candidate.engine_id)
    if holder is not None and not (holder.owner == OWNER and holder.name == candidate.name):
        yield (
            "D505",
            (
                f"{candidate.label()} collides with already-registered '{holder.name}' on "
                f"engine id {engine_hex(candidate.engine_id)}; dropping it"
            ),
        )


def probe_problems(candidate: DescriptorSet) -> Iterator[Problem]:
    """The state-manager probe: completed metadata tuples unique per overlapping arch."""
    claims: dict[tuple[tuple[str, Any], ...], list[tuple[KernelDescriptor, tuple[str, ...]]]]
    claims = {}
    for pack in candidate.packs:
        for kernel in pack.kernels:
            values = completed_metadata(kernel, candidate.schema.body)
            arch = pack.effective_arch(kernel)
            for other, other_arch in claims.get(values, ()):
                if arch_overlaps(arch, other_arch):
                    shown = ", ".join(f"{k}={v}" for k, v in values)
                    yield (
                        "D506",
                        (
                            f"engine '{candidate.name}' does not validate: kernels "
                            f"'{other.name}' and '{kernel.name}' share the metadata tuple "
                            f"({shown}) on overlapping arch; dropping it"
                        ),
                    )
                    return
            claims.setdefault(values, []).append((kernel, arch))


def visible_to(
    candidate: DescriptorSet, device: str | None
) -> Iterator[tuple[ResolvedPack, list[KernelDescriptor]]]:
    """(pack, kernels) a device sees: packs and kernels whose effective arch admits it."""
    base = device_base(device) if device else None
    for pack in candidate.packs:
        if base is not None and pack.arch and base not in pack.arch:
            continue
        kernels = [
            k
            for k in pack.kernels
            if base is None or not pack.effective_arch(k) or base in pack.effective_arch(k)
        ]
        yield pack, kernels
