"""GPU targets a release may name: the planner's view of :mod:`gfxpack.amdgpu`.

A target is a processor (``gfx942``), optionally followed by target features
(``gfx942:sramecc+:xnack-``), a generic target (``gfx11-generic``) or a family of
processors (``gfx94X-dcgpu``, TheRock's single-arch build families;
``gfx1151-strict``). Anything else is a typo that would build a release of empty
arch metapackages, so :func:`check_target` refuses it with the closest processor
as a suggestion. Targets are listed in processor order (Decision 16,
:func:`sort_targets`). The processor table itself lives in :mod:`gfxpack.amdgpu`.
"""

from __future__ import annotations

from gfxpack.amdgpu import (
    FEATURES,
    GENERIC_PROCESSORS,
    PROCESSORS,
    TargetOrder,
    check_target,
    sort_targets,
    target_order,
)

__all__ = [
    "FEATURES",
    "GENERIC_PROCESSORS",
    "PROCESSORS",
    "TargetOrder",
    "check_target",
    "sort_targets",
    "target_order",
]
