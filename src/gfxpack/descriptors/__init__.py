"""hipDNN kernel descriptors: load, resolve, validate and lint (spec descriptors.md)."""

from gfxpack.descriptors.diagnostics import Diagnostic, Diagnostics, Level
from gfxpack.descriptors.loader import (
    LoadResult,
    load_descriptor_sets,
    load_validated,
    provider_roots,
    visible_to,
)
from gfxpack.descriptors.registry import EngineNames, SymbolRegistry
from gfxpack.descriptors.resolve import DescriptorSet, engine_hex, engine_id

__all__ = [
    "DescriptorSet",
    "Diagnostic",
    "Diagnostics",
    "EngineNames",
    "Level",
    "LoadResult",
    "SymbolRegistry",
    "engine_hex",
    "engine_id",
    "load_descriptor_sets",
    "load_validated",
    "provider_roots",
    "visible_to",
]
