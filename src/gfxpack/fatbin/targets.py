"""AMDGPU target ids and the e_flags that encode them, as the splitter reads them.

A target id is ``<processor>[:<feature><+|->]...`` (``gfx90a``, ``gfx906:xnack-``,
``gfx90a:sramecc+:xnack+``); a code object's ELF header must agree with it. The
processor table, the parser and the check live in :mod:`gfxpack.amdgpu`, the one
table plan, split, kpack and descriptors share; this module names what the
splitter uses of it.
"""

from __future__ import annotations

from gfxpack.amdgpu import (
    ABI_V3,
    FEATURES,
    GENERIC_OF,
    MACH,
    SRAMECC_V3,
    SRAMECC_V4_MASK,
    XNACK_V3,
    XNACK_V4_MASK,
    TargetId,
    flags_disagreement,
)

__all__ = [
    "ABI_V3",
    "FEATURES",
    "GENERIC_OF",
    "MACH",
    "SRAMECC_V3",
    "SRAMECC_V4_MASK",
    "XNACK_V3",
    "XNACK_V4_MASK",
    "TargetId",
    "flags_disagreement",
]
