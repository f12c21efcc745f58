"""hipDNN providers: what each installed provider loads for a device.

The providers installed in the root (:func:`gfxpack.descriptors.installed.installed_roots`:
``<prefix>/lib/hipdnn/arch_content/<provider>/``) are loaded as the provider loads
them (:func:`gfxpack.descriptors.load_validated`, seed 001's loader: the tree walked
whole, every pack resolved, kpack kernels checked against their archives). A
provider is ``found`` when every engine it defines gives the device a kernel,
``shadowed`` when an engine has kernels for other arches only (or this arch's shard
was installed as a provider of its own, ``arch_content/<arch>/``, where the loader
reads no shard), ``missing`` when an engine gives it none at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from gfxpack.descriptors import load_validated
from gfxpack.descriptors.installed import installed_roots
from gfxpack.descriptors.listing import engines_as_dicts
from gfxpack.file_arch import file_arch
from gfxpack.probe.model import Finding, Status
from gfxpack.probe.tree import InstalledTree
from gfxpack.regular_files import printable

FAMILY = "hipdnn"
ENGINE = ".ued.json"


def check_providers(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    for provider in installed_roots(tree.root):
        shown = printable(provider.relative_to(tree.root).as_posix())
        if file_arch(provider.name) == provider.name:  # arch_content/gfx942/: no provider
            if provider.name == processor:
                yield Finding(
                    f"{shown} (hipDNN)", FAMILY, device, Status.SHADOWED, shown,
                    "a shard installed as a provider of its own: the loader reads an arch's "
                    "shard inside its provider (arch_content/<provider>/<arch>/)",
                )  # fmt: skip
            continue
        yield _provider(provider, shown, device, processor, environ)


def _provider(
    provider: os.PathLike[str],
    shown: str,
    device: str,
    processor: str,
    environ: Mapping[str, str],
) -> Finding:
    library = f"{shown} (hipDNN)"
    result = load_validated([provider], disabled=environ.get("HIPDNN_DISABLE_ENGINES"))
    defined = sorted({e.descriptor.name for e in result.catalog.of_type(ENGINE)})
    loaded = {e["name"]: e for e in engines_as_dicts(result.sets, device)}
    if not defined:
        return Finding(
            library, FAMILY, device, Status.MISSING, "",
            f"no engine descriptor ({ENGINE}) under {shown}/",
        )  # fmt: skip
    none, elsewhere, used = [], [], []
    for name in defined:
        engine = loaded.get(name)
        kernels = [k for p in engine["packs"] for k in p["kernels"]] if engine else []
        if kernels:
            shard = os.path.join(shown, processor)
            arch_specific = any(p["arch"] for p in engine["packs"]) if engine else False
            used.append(f"{name} ({shard}/)" if arch_specific else f"{name} (any arch)")
        elif engine and engine["dropped_packs"]:
            archs = sorted({a for p in engine["dropped_packs"] for a in p["arch"]})
            elsewhere.append(f"{name} (packs for {', '.join(archs)} only)")
        else:
            none.append(name)
    looks = (
        f"each engine's kernels for {processor} in {shown}/ (a pack for any arch or "
        f"its {processor}/ shard)"
    )
    if none:
        why = "; ".join(f"{n}: not loaded or no kernel" for n in none)
        return Finding(library, FAMILY, device, Status.MISSING, "", f"{why}; looks for {looks}")
    if elsewhere:
        return Finding(
            library, FAMILY, device, Status.SHADOWED, "",
            f"only other arches' kernels: {'; '.join(elsewhere)}; looks for {looks}",
        )  # fmt: skip
    return Finding(library, FAMILY, device, Status.FOUND, ", ".join(used))
