"""The pure planner: package.json specs + targets + version -> ReleasePlan."""

from gfxpack.plan.artifact_index import ArtifactIndex
from gfxpack.plan.model import (
    Cause,
    Kind,
    Mode,
    Note,
    PinPolicy,
    PlanError,
    PlannedPackage,
    Reason,
    ReleasePlan,
    Req,
    Severity,
)
from gfxpack.plan.planner import PlanOptions, plan

__all__ = [
    "ArtifactIndex",
    "Cause",
    "Kind",
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
    "plan",
]
