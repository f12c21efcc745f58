"""A release from end to end: scan the artifacts, plan, route files, build packages.

This is what ``gfxpack build`` does, as one library call: the CLI parses its
arguments into :class:`ReleaseOptions`, calls :func:`build_release` and prints
what comes back; the tests' fixtures and the benchmarks call the same
functions. :func:`prepare` stops before writing anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gfxpack.artifact_files import InvalidArtifacts
from gfxpack.artifacts import ArtifactTree, route, scan
from gfxpack.build import BuildOptions, BuiltFile, build
from gfxpack.config import Config, load_config
from gfxpack.formats.payload import Entry
from gfxpack.plan import (
    ArtifactIndex,
    Mode,
    Note,
    PlanOptions,
    ReleasePlan,
    Severity,
    WarningRule,
    plan,
)
from gfxpack.shard import missing_artifacts, unlisted_release
from gfxpack.starter import MAINTAINER as INIT_MAINTAINER

# The packages a placeholder warning names before "and N more".
NAMED = 3


@dataclass(frozen=True, slots=True)
class ReleaseOptions:
    """Everything a release needs besides its paths."""

    rocm_version: str
    release: str = "1"
    targets: tuple[str, ...] = ()  # none: every target the artifacts hold
    plan: PlanOptions = field(default_factory=PlanOptions)
    # Choose the mode from the artifacts: kpack when a therock_manifest.json sets
    # KPACK_SPLIT_ARTIFACTS, else single-arch. False keeps plan.mode.
    detect_mode: bool = False
    build: BuildOptions = field(default_factory=BuildOptions)
    # gpg key (fingerprint or user id; GNUPGHOME applies) that signs every package of a
    # format that signs its packages (RPM) once built; None: unsigned.
    sign_key: str | None = None
    # Plan from these artifact directory names (the whole release's) instead of those in
    # the artifacts tree: a shard's machine holds only part of the artifacts, yet every
    # shard must compute the same plan.
    artifact_names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Release:
    """A planned release and the files of each of its packages."""

    config: Config
    tree: ArtifactTree
    plan: ReleasePlan
    routed: Mapping[str, tuple[Entry, ...]]


def prepare(
    config_path: str | os.PathLike[str],
    artifacts: str | os.PathLike[str],
    options: ReleaseOptions,
    on_planned: Callable[[ReleasePlan, tuple[str, ...]], None] | None = None,
) -> Release:
    """Scan ``artifacts``, plan the release of ``config_path`` and route every file.
    ``on_planned`` hears of the plan and of the warnings of the scan and of package.json
    before any file is routed; the plan's notes then include the build's own warnings
    (:func:`placeholder_notes`). A shard without ``artifact_names`` whose tree cannot
    stand for the whole release is refused in one line (:func:`unlisted_release`)."""
    config = load_config(config_path)
    tree = scan(artifacts)
    plan_options = options.plan
    if options.detect_mode:
        mode = Mode.KPACK if tree.kpack_split else Mode.SINGLE_ARCH
        plan_options = replace(plan_options, mode=mode)
    index = tree.index
    if options.artifact_names is None:
        unlisted = unlisted_release(options.build.shard, index)
        if unlisted:
            raise InvalidArtifacts(f"{artifacts}: {unlisted}")
    else:
        index = ArtifactIndex(options.artifact_names)
        lacking = missing_artifacts(options.build.shard, index, tree.index)
        if lacking:
            raise InvalidArtifacts(f"{artifacts}: {lacking}")
    release_plan = plan(
        config.packages,
        options.targets or index.targets(),
        options.rocm_version,
        options.release,
        plan_options,
        artifacts=index,
    )
    release_plan = replace(
        release_plan, notes=(*release_plan.notes, *placeholder_notes(release_plan, config.path))
    )
    if on_planned is not None:
        on_planned(release_plan, (*tree.warnings, *config.warnings))
    shard = options.build.shard
    if shard is not None and shard.fraction is None:
        # A shard by target reads only its own artifacts (all a machine may hold); a K/N
        # shard routes everything, as the cut is by payload size.
        to_route = replace(release_plan, packages=shard.select(release_plan, {}))
    else:
        to_route = release_plan
    routed = route(to_route, tree, options.build.epoch)
    return Release(config, tree, release_plan, routed)


def build_release(
    config_path: str | os.PathLike[str],
    artifacts: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: ReleaseOptions,
    on_planned: Callable[[ReleasePlan, tuple[str, ...]], None] | None = None,
    on_built: Callable[[BuiltFile, int, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> tuple[Release, list[BuiltFile]]:
    """:func:`prepare`, then build every package into ``out`` (and sign them with
    ``options.sign_key``); ``on_built`` hears of each package as it is written,
    ``on_note`` of what was removed from or left in ``out``."""
    release = prepare(config_path, artifacts, options, on_planned)
    built = build(release.plan, release.routed, Path(out), options.build, on_built, on_note)
    if options.sign_key:
        # Imported here: an unsigned build (most of them) need not load the signer.
        from gfxpack.sign import sign_built

        built = sign_built(Path(out), built, options.sign_key)
    return release, built


def placeholder_notes(release_plan: ReleasePlan, config_path: str) -> tuple[Note, ...]:
    """One warning per package.json field that packages about to be built still hold as
    ``gfxpack init`` wrote it: a package would ship it."""
    specs = release_plan.specs.values()
    fields = {
        "Maintainer": (
            [s.name for s in specs if s.maintainer == INIT_MAINTAINER],
            f"is gfxpack init's placeholder {INIT_MAINTAINER!r}: set who answers for the packages",
        ),
        "License": (
            [s.name for s in specs if not s.license],
            "is empty (an RPM then says 'Unknown'): set the license, such as MIT",
        ),
    }
    notes = []
    for key, (names, what) in fields.items():
        if names:
            more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
            shown = ", ".join(names[:NAMED]) + more
            notes.append(
                Note(
                    Severity.WARNING,
                    f"{config_path}: {key} of {shown} {what}",
                    tuple(names),
                    WarningRule.PLACEHOLDER,
                )
            )
    return tuple(notes)
