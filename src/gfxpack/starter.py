"""A starter package.json for an artifacts tree: one package per artifact name.

What ``gfxpack init`` writes. An artifacts tree (TheRock's, or what ``gfxpack split``
made of a fat build) names its content ``<name>_<component>_<target>/``; a starter
proposes one package per artifact name, ``amdrocm-<name>``, listing every component
and every manifest line the tree has for that name, with ``Gfxarch`` set when
per-arch directories exist, so that ``gfxpack plan`` and ``gfxpack build`` take it
as it is. What only a person can say (descriptions, maintainer, license,
dependencies, a separate -devel package) comes back as notes to review.

Before anything is written the proposal is planned and routed as ``gfxpack build``
would on that tree; what build would refuse (two packages installing one path, say)
is a note too, so the user hears it now rather than at build time.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack._io import write_atomically
from gfxpack.artifact_layout import GENERIC
from gfxpack.artifacts import ArtifactTree, route, scan, selects
from gfxpack.config import COMPONENTS, PackageSpec, parse_config
from gfxpack.errors import GfxpackError
from gfxpack.plan import Mode, PlanOptions, plan
from gfxpack.plan.artifact_index import ArtifactDir
from gfxpack.plan.targets import sort_targets
from gfxpack.text_fields import escaped

# A starter's package names: ROCm's (dependencies on amdrocm* names are the release's own).
PREFIX = "amdrocm-"
# Placeholders a maintainer replaces; each is reported in the notes.
MAINTAINER = "Your Name <you@example.invalid>"
# Any version plans: the check that the proposal builds needs one, not the release's.
CHECK_VERSION = "1.0.0"
# The problems of a proposal shown at most (a tree's first few say what is wrong).
MAX_SHOWN = 10


class StarterError(GfxpackError, ValueError):
    """An artifacts tree a starter cannot be proposed for, or an output not written."""


@dataclass(frozen=True)
class Starter:
    """A proposed package.json and what to review before building with it."""

    root: Path
    text: str  # the package.json, as written
    packages: tuple[str, ...]
    directories: int  # artifact directories read
    mode: Mode  # what gfxpack build --mode auto will choose on this tree
    targets: tuple[str, ...]
    notes: tuple[str, ...]


def propose(artifacts: str | os.PathLike[str]) -> Starter:
    """A starter package.json for the artifacts tree ``artifacts``."""
    tree = scan(artifacts)
    shown = escaped(str(tree.root))  # a path may hold a newline; a message is one line
    notes: list[str] = list(tree.warnings)
    index = tree.index
    kept = {_dir_name(d) for d in index.dirs}
    for name in tree.directories:
        if name not in kept:
            notes.append(
                f"{name}/: its target is neither 'generic' nor a GPU target (such as "
                "gfx942); gfxpack does not package it"
            )
    by_artifact: dict[str, list[ArtifactDir]] = {}
    for directory in index.dirs:
        if directory.component not in COMPONENTS:
            notes.append(
                f"{_dir_name(directory)}/: component {directory.component!r} is none of "
                f"{', '.join(COMPONENTS)}; not packaged"
            )
            continue
        by_artifact.setdefault(directory.name, []).append(directory)
    mode = Mode.KPACK if tree.kpack_split else Mode.SINGLE_ARCH
    entries = []
    packages: dict[str, str] = {}  # package name -> its artifact
    for artifact, directories in sorted(by_artifact.items()):
        name = PREFIX + artifact.lower()
        if name in packages:
            raise StarterError(
                f"{shown}: artifacts {packages[name]!r} and {artifact!r} would both be "
                f"package {name}; rename one of their directories"
            )
        entry = _entry(tree, name, artifact, directories, mode, notes, f"{shown}/{artifact}_*")
        if entry is not None:
            packages[name] = artifact
            entries.append(entry)
    if not entries:
        raise StarterError(f"{shown}: no artifact directory lists content to package")
    text = json.dumps(entries, indent=2) + "\n"
    targets = index.targets()
    notes[:0] = _review(entries, mode, targets)
    notes.extend(_build_problems(tree, text, mode, targets))
    return Starter(
        tree.root,
        text,
        tuple(packages),
        len(tree.directories),
        mode,
        targets,
        tuple(notes),
    )


def write(starter: Starter, out: str | os.PathLike[str], force: bool = False) -> None:
    """Write the starter to ``out``, whole or not at all; an existing ``out`` (a file,
    or a symlink, which is replaced, never written through) only with ``force``."""
    out = Path(out)
    shown = escaped(str(out))
    if out.is_dir() and not out.is_symlink():
        raise StarterError(f"{shown}: is a directory; give the name of the file to write")
    if os.path.lexists(out) and not force:
        raise StarterError(f"{shown}: already exists (give --force to replace it)")
    try:
        write_atomically(out, starter.text.encode("utf-8"))
    except OSError as e:
        raise StarterError(f"{shown}: cannot write: {e.strerror}") from None


# --- one package -----------------------------------------------------------------------


def _entry(
    tree: ArtifactTree,
    name: str,
    artifact: str,
    directories: list[ArtifactDir],
    mode: Mode,
    notes: list[str],
    where: str,
) -> dict[str, Any] | None:
    """The package.json entry of one artifact name (its directories ``where``), or None
    when it lists no content."""
    manifests = {d: tree.manifest(_dir_name(d)) for d in directories}
    prefixes = sorted({prefix for lines in manifests.values() for prefix in lines})
    if not prefixes:
        notes.append(f"{artifact}_*/: the manifests list no content; no package proposed")
        return None
    names = subdir_names(prefixes, where)
    # Per-arch directories listing nothing have no device code to package.
    per_arch = sort_targets(
        {d.target.split(":", 1)[0] for d in directories if d.target != GENERIC and manifests[d]}
    )
    gfxarch = bool(per_arch)
    if gfxarch and mode is Mode.SINGLE_ARCH:
        # A single-arch build reads a gfxarch artifact from the family's directory only:
        # what the tree keeps generic needs an entry of its own, read from generic.
        generic = [d for d in directories if d.target == GENERIC]
        family = [d for d in directories if d.target != GENERIC]
        sources = [
            _source(artifact, names, {d: manifests[d] for d in generic}, gfxarch=False),
            _source(artifact, names, {d: manifests[d] for d in family}),
        ]
    else:
        sources = [_source(artifact, names, manifests)]
    artifactory = [source for source in sources if source["Artifact_Subdir"]]
    components = [c for c in COMPONENTS if any(d.component == c for d in directories)]
    if gfxarch and name.endswith("-devel"):
        notes.append(
            f"{name}: a -devel package is never split per GPU target, so its per-arch "
            f"directories ({', '.join(per_arch)}) are not packaged; rename the package"
        )
    defaults = {f.name: f.default for f in dataclasses.fields(PackageSpec)}
    shipped = ", ".join(components)
    devices = f", with device code for {', '.join(per_arch)}" if gfxarch else ""
    return {
        "Package": name,
        "Version": "",
        "Architecture": defaults["architecture"],
        "BuildArch": defaults["build_arch"],
        "DEBDepends": [],
        "RPMRequires": [],
        "Maintainer": MAINTAINER,
        "Description_Short": f"{artifact} ({shipped})",
        "Description_Long": (
            f"Packaged by gfxpack from the {artifact}_* artifact directories: "
            f"{shipped} content{devices}."
        ),
        "Section": "devel",
        "Priority": "optional",
        "Group": "",
        "License": "",
        "Vendor": "",
        "Homepage": "",
        "Artifactory": artifactory,
        "Gfxarch": "True" if gfxarch else "False",
    }


def _source(
    artifact: str,
    names: dict[str, tuple[str, ...]],
    manifests: dict[ArtifactDir, tuple[str, ...]],
    gfxarch: bool = True,
) -> dict[str, Any]:
    """One Artifactory entry: each subdir with the components whose directories
    (of ``manifests``) list a line it selects."""
    subdirs = []
    for name, selected in names.items():
        components = [
            c
            for c in COMPONENTS
            if any(
                d.component == c and set(lines) & set(selected) for d, lines in manifests.items()
            )
        ]
        if components:
            subdirs.append({"Name": name, "Components": components})
    source: dict[str, Any] = {"Artifact": artifact}
    if not gfxarch:
        source["Artifact_Gfxarch"] = "False"
    source["Artifact_Subdir"] = subdirs
    return source


def subdir_names(prefixes: Sequence[str], where: str = "") -> dict[str, tuple[str, ...]]:
    """Subdir names for an artifact's manifest lines, each with the lines it selects;
    every line is selected by exactly one name, since a line two names select would
    be packaged twice. A name is the shortest run of a line's components that selects
    that line alone (``rocBLAS`` of ``math-libs/BLAS/rocBLAS/stage``), the line itself
    when the artifact has one line or no shorter run is its own.

    >>> subdir_names(["math-libs/BLAS/hipBLAS/stage", "math-libs/BLAS/rocBLAS/stage"])
    {'hipBLAS': ('math-libs/BLAS/hipBLAS/stage',), 'rocBLAS': ('math-libs/BLAS/rocBLAS/stage',)}
    """
    ordered = sorted(set(prefixes), key=lambda p: (p.count("/"), p))
    names: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}  # line -> the name selecting it
    for prefix in ordered:
        if prefix in owner:
            continue
        name = prefix if len(ordered) == 1 else _distinctive(prefix, ordered)
        selected = tuple(line for line in ordered if selects(name, line))
        taken = [line for line in selected if line in owner]
        if taken:
            raise StarterError(
                f"{where}: no subdir names select each manifest line once: a name selects "
                f"every line holding it as a run of components, so both {owner[taken[0]]!r} "
                f"and {name!r} select {taken[0]!r}; give that content a line of its own"
            )
        names[name] = selected
        owner.update(dict.fromkeys(selected, name))
    return names


def _distinctive(prefix: str, lines: Sequence[str]) -> str:
    """The shortest run of ``prefix``'s components selecting no other line (the
    rightmost of equal length: nearest the project's own directory), else ``prefix``."""
    parts = prefix.split("/")
    for length in range(1, len(parts)):
        for start in range(len(parts) - length, -1, -1):
            run = "/".join(parts[start : start + length])
            if [line for line in lines if selects(run, line)] == [prefix]:
                return run
    return prefix


def _dir_name(directory: ArtifactDir) -> str:
    return f"{directory.name}_{directory.component}_{directory.target}"


# --- what to review --------------------------------------------------------------------


def _review(entries: Sequence[dict[str, Any]], mode: Mode, targets: Sequence[str]) -> list[str]:
    """What every starter leaves to a person, and what the tree makes of it."""
    gfxarch = [e["Package"] for e in entries if e["Gfxarch"] == "True"]
    notes = [
        f"Maintainer ({MAINTAINER!r}), License, Vendor, Homepage and the descriptions are "
        "placeholders: fill them in",
        "no dependencies are declared: add the system packages (such as libc6) and the "
        "amdrocm-* packages each package needs to DEBDepends and RPMRequires",
    ]
    if gfxarch:
        notes.append(
            f'Gfxarch is "True" for {", ".join(gfxarch)} (the tree has per-arch directories '
            f"for them: {', '.join(targets)})"
        )
    with_dev = [e["Package"] for e in entries if "dev" in _components(e)]
    if with_dev:
        notes.append(
            f"{', '.join(with_dev)} ship their dev content (headers, CMake files) themselves; "
            "ROCm puts it in a separate <name>-devel package: move the 'dev' components "
            "to such an entry if you want one"
        )
    if mode is Mode.KPACK:
        notes.append(
            "the tree is kpack-split (a therock_manifest.json says KPACK_SPLIT_ARTIFACTS): "
            "build makes a host package and one device package per GPU target of each "
            "Gfxarch package"
        )
    elif targets:
        notes.append(
            "no therock_manifest.json says KPACK_SPLIT_ARTIFACTS: build runs in single-arch "
            f"mode, for the first target only ({targets[0]})"
        )
    return notes


def _components(entry: dict[str, Any]) -> set[str]:
    return {
        component
        for source in entry["Artifactory"]
        for subdir in source["Artifact_Subdir"]
        for component in subdir["Components"]
    }


def _build_problems(tree: ArtifactTree, text: str, mode: Mode, targets: Sequence[str]) -> list[str]:
    """What gfxpack build would refuse in the proposal on this tree, as notes."""
    config = parse_config(text, "the starter package.json")  # a bug if it fails
    try:
        release_plan = plan(
            config.packages,
            targets,
            CHECK_VERSION,
            options=PlanOptions(mode=mode),
            artifacts=tree.index,
        )
        route(release_plan, tree, 0)
    except GfxpackError as e:
        lines = str(e).splitlines()
        shown = [f"gfxpack build will refuse this tree until fixed: {line}" for line in lines]
        if len(lines) > MAX_SHOWN:
            shown = [*shown[:MAX_SHOWN], f"... and {len(lines) - MAX_SHOWN} more problems"]
        return shown
    return []
