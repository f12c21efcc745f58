"""The pure planner: package.json specs + targets + version -> ReleasePlan."""

from gfxpack.plan.artifact_index import ArtifactIndex
from gfxpack.plan.model import (
    Cause,
    Kind,
    MissingDependencies,
    Mode,
    Note,
    PinPolicy,
    PlanError,
    PlannedPackage,
    Reason,
    ReleasePlan,
    Req,
    Severity,
    Variant,
    WarningRule,
)
from gfxpack.plan.planner import PlanOptions, plan

__all__ = [
    "ArtifactIndex",
    "Cause",
    "Kind",
    "MissingDependencies",
    "Mode",
    "Note",
    "PinPolicy",
    "PlanError",
    "PlanOptions",
    "PlannedPackage",
    "Reason",
    "ReleasePlan",
    "Req",
    "Severity",
    "Variant",
    "WarningRule",
    "plan",
]
