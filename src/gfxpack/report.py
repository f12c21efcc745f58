"""The release report: one static HTML page (or JSON) answering what a build ships.

Everything comes from a build directory's index.json (the files with their sizes,
and the plan they were built from): the summary, what installing each GPU arch
costs against installing every arch, the biggest packages, a dependency picture per
base (inline SVG drawn by Graphviz) and the plan's notes. What an install pulls in
is the plan's Depends and Recommends followed from the package, or, with a
repository, libsolv's resolution of it (what apt and dnf would install).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from gfxpack import build_index, graphviz, views
from gfxpack.build_index import BuildIndex, IndexedFile
from gfxpack.errors import GfxpackError
from gfxpack.formats import FORMATS, PackageFormat
from gfxpack.outdir import INDEX
from gfxpack.plan import Kind, ReleasePlan
from gfxpack.plan.targets import sort_targets
from gfxpack.units import human

BIGGEST = 12  # packages listed as the biggest
# The install every arch meta is compared against: its base's generic meta.
_CORE = "amdrocm-core"


class ReportError(GfxpackError):
    """A build directory the report cannot be made from."""


@dataclass(frozen=True, slots=True)
class Sizes:
    """Bytes of a set of packages, split into device packages and everything else."""

    packages: int
    download_host: int
    download_device: int
    installed_host: int
    installed_device: int

    @property
    def download(self) -> int:
        return self.download_host + self.download_device

    @property
    def installed(self) -> int:
        return self.installed_host + self.installed_device

    def as_dict(self) -> dict[str, int]:
        return {**asdict(self), "download": self.download, "installed": self.installed}


@dataclass(frozen=True, slots=True)
class Install:
    """Installing one package: what it pulls in, against installing every arch."""

    package: str
    arch: str | None
    sizes: Sizes
    every_arch: str | None  # the generic meta of the same base
    every_arch_sizes: Sizes | None

    @property
    def share(self) -> float | None:
        """Download of this arch's install as a fraction of every arch's."""
        if self.every_arch_sizes is None or not self.every_arch_sizes.download:
            return None
        return self.sizes.download / self.every_arch_sizes.download

    def as_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "arch": self.arch,
            "sizes": self.sizes.as_dict(),
            "every_arch": self.every_arch,
            "every_arch_sizes": self.every_arch_sizes.as_dict() if self.every_arch_sizes else None,
            "share": self.share,
        }


@dataclass
class ReleaseReport:
    build: str
    fmt: PackageFormat  # the format whose files the sizes are of
    resolver: str  # how install sets were found
    plan: ReleasePlan
    counts: dict[str, dict[str, int]]  # kind -> format -> packages
    totals: dict[str, dict[str, int]]  # format -> {"packages", "download", "installed"}
    installs: dict[str, list[Install]]  # arch -> its arch metas, core first
    biggest: list[dict[str, Any]]
    pictures: dict[str, str] = field(default_factory=dict)  # base -> Graphviz source

    def as_dict(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "build": self.build,
            "version": plan.full_version,
            "mode": str(plan.mode),
            "targets": sort_targets(plan.targets),
            "prefix": plan.prefix,
            "sizes_of": self.fmt.name,
            "resolver": self.resolver,
            "counts": self.counts,
            "totals": self.totals,
            "installs": {a: [i.as_dict() for i in rows] for a, rows in self.installs.items()},
            "biggest": self.biggest,
            "notes": [
                {"severity": str(n.severity), "message": n.message, "packages": list(n.packages)}
                for n in plan.notes
            ],
        }


# What a package pulls in: a function of its plan key, giving plan keys.
Resolver = Callable[[str], set[str]]


def make(build: Path, fmt: PackageFormat | None = None, repo: Path | None = None) -> ReleaseReport:
    """The report of the build in ``build``; sizes of ``fmt`` (default: the first format
    built, in FORMATS order: deb if built)."""
    index = _read_index(build)
    plan = views.plan_from_dict(index.plan, f"{build / INDEX} (its plan)")
    files = index.files
    built_formats = sorted({f.format or "" for f in files})
    if fmt is None:
        fmt = next((f for f in FORMATS if f.name in built_formats), None)
        if fmt is None:
            raise ReportError(f"{build / INDEX}: the build has no packages")
    if fmt.name not in built_formats:
        raise ReportError(f"{build / INDEX}: the build has no {fmt} packages")
    sizes = {f.package or "": f for f in files if f.format == fmt.name}
    missing = [p.key for p in plan.packages if p.key not in sizes]
    if missing:
        raise ReportError(f"{build / INDEX}: its plan has {missing[0]}, but no {fmt} file of it")
    unplanned = [f.package for f in files if f.package not in plan.by_key]
    if unplanned:
        raise ReportError(
            f"{build / INDEX}: lists a file of {unplanned[0]}, which its plan has not"
        )
    if repo is None:
        resolver: Resolver = lambda key: install_set(plan, key, fmt)  # noqa: E731
        how = "the plan's Depends and Recommends"
    else:
        resolver = _libsolv(plan, repo, fmt)
        how = f"libsolv against {repo}"

    def measure(key: str) -> Sizes:
        return measure_sizes(plan, resolver(key), sizes)

    counts: dict[str, dict[str, int]] = {}
    kinds = {p.key: p.kind for p in plan.packages}
    for kind in Kind:
        per_format = Counter(f.format for f in files if kinds.get(f.package or "") is kind)
        if per_format:
            counts[kind.title] = {f: per_format.get(f, 0) for f in built_formats}
    totals = {
        f: {
            "packages": sum(1 for x in files if x.format == f),
            "download": sum(x.size for x in files if x.format == f),
            "installed": sum(x.installed_size or 0 for x in files if x.format == f),
        }
        for f in built_formats
    }
    return ReleaseReport(
        build=str(build),
        fmt=fmt,
        resolver=how,
        plan=plan,
        counts=counts,
        totals=totals,
        installs=_installs(plan, fmt, measure),
        biggest=[
            {
                "package": plan.by_key[key].name(fmt),
                "kind": str(plan.by_key[key].kind),
                "arch": plan.by_key[key].arch,
                "download": f.size,
                "installed": f.installed_size or 0,
            }
            for key, f in sorted(sizes.items(), key=lambda kf: (-kf[1].size, kf[0]))[:BIGGEST]
        ],
        pictures={
            base: views.dot(plan, plan.family(base), fmt, legend=False)
            for base in dict.fromkeys(p.base for p in plan.packages)
        },
    )


def _read_index(build: Path) -> BuildIndex:
    """The build's index, with its plan and, for every file, what the report counts."""
    path = build / INDEX
    if not build.is_dir():
        raise ReportError(f"{build}: not a directory (give the --out directory of gfxpack build)")
    try:
        index = build_index.read(build)
    except build_index.MissingBuildIndex:
        raise ReportError(f"{build}: no {INDEX} (not a gfxpack build directory)") from None
    except build_index.InvalidBuildIndex as e:
        raise ReportError(str(e)) from None
    if index.plan is None:
        raise ReportError(f"{path}: records no plan (built by an older gfxpack); build it again")
    for i, item in enumerate(index.files):
        if item.package is None or item.format is None:
            raise ReportError(f"{path}: /files/{i}: expected package and format")
    return index


def install_set(plan: ReleasePlan, key: str, fmt: PackageFormat) -> set[str]:
    """The planned packages installing ``key`` brings: its Depends and Recommends (which
    apt and dnf install by default) followed, the first planned alternative of each."""
    seen = {key}
    stack = [key]
    while stack:
        relations = plan.by_key[stack.pop()].relations(fmt)
        for dep in (*relations.depends, *relations.recommends):
            target = next((r.target for r in dep if r.target is not None), None)
            if target is not None and target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def _libsolv(plan: ReleasePlan, repo: Path, fmt: PackageFormat) -> Resolver:
    """Install sets resolved by libsolv on the repository, for this build's version."""
    from gfxpack.verify.resolution import resolve
    from gfxpack.verify.system import read_system
    from gfxpack.verify.universe import load

    universe = load(repo, fmt, read_system(None, fmt))
    ours = {s.name: s for s in universe.packages() if s.evr == plan.full_version}
    keys = {p.name(fmt): p.key for p in plan.packages}

    def resolver(key: str) -> set[str]:
        name = plan.by_key[key].name(fmt)
        solvable = ours.get(name)
        if solvable is None:
            raise ReportError(f"{repo}: has no {name} {plan.full_version} (publish the build)")
        resolution = resolve(universe, solvable=solvable, steps=False)
        if not resolution.ok:
            raise ReportError(f"{repo}: cannot install {name}: {' | '.join(resolution.problems)}")
        found = set()
        for solvable_id in resolution.world:
            pulled, evr = universe.name_evr(solvable_id)
            if pulled in keys and evr == plan.full_version:
                found.add(keys[pulled])
        return found

    return resolver


def measure_sizes(plan: ReleasePlan, keys: set[str], files: Mapping[str, IndexedFile]) -> Sizes:
    device = [k for k in keys if plan.by_key[k].kind is Kind.DEVICE]
    host = [k for k in keys if plan.by_key[k].kind is not Kind.DEVICE]

    def download(chosen: list[str]) -> int:
        return sum(files[k].size for k in chosen if k in files)

    def installed(chosen: list[str]) -> int:
        return sum(files[k].installed_size or 0 for k in chosen if k in files)

    return Sizes(len(keys), download(host), download(device), installed(host), installed(device))


def _installs(
    plan: ReleasePlan, fmt: PackageFormat, measure: Callable[[str], Sizes]
) -> dict[str, list[Install]]:
    generic = {p.base: p for p in plan.packages if p.kind is Kind.GENERIC_META}
    every: dict[str, Sizes] = {}
    installs: dict[str, list[Install]] = {}
    for arch in sort_targets(plan.arches):  # a plan of an older build may list others first
        metas = [p for p in plan.packages if p.kind is Kind.ARCH_META and p.arch == arch]
        metas.sort(key=lambda p: (p.base != _CORE, p.key))
        rows = []
        for meta in metas:
            whole = generic.get(meta.base)
            if whole is not None and whole.key not in every:
                every[whole.key] = measure(whole.key)
            rows.append(
                Install(
                    meta.name(fmt),
                    arch,
                    measure(meta.key),
                    whole.name(fmt) if whole else None,
                    every[whole.key] if whole else None,
                )
            )
        installs[arch] = rows
    return installs


# --- HTML ---------------------------------------------------------------------------------

_SVG_START = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_ID = re.compile(r'\b(id|href)="#?([^"]*)"')


def _inline_svg(svg: bytes, prefix: str) -> Markup:
    """dot's SVG without its XML prolog, every id prefixed (many pictures share a page)."""
    text = _SVG_START.sub("", svg.decode("utf-8"), count=1)
    text = text.replace("<svg ", f'<svg class="graph" aria-label="{prefix}" ', 1)
    text = _ID.sub(lambda m: f'{m[1]}="{"#" if m[1] == "href" else ""}{prefix}-{m[2]}"', text)
    return Markup(text)  # safe: dot escapes the labels it draws


def html(report: ReleaseReport) -> str:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("gfxpack", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["human"] = human
    pictures = {
        base: _inline_svg(graphviz.render(source, "svg"), re.sub(r"\W", "-", base))
        for base, source in report.pictures.items()
    }
    legend = _inline_svg(graphviz.render(views.legend(), "svg"), "legend")
    families = {base: report.plan.family(base) for base in report.pictures}
    return environment.get_template("report.html.j2").render(
        report=report,
        data=report.as_dict(),
        plan=report.plan,
        pictures=pictures,
        families=families,
        legend=legend,
        # Open by default: the families split per arch, the ones worth a look.
        split={
            base
            for base, members in families.items()
            if any(p.kind in (Kind.DEVICE, Kind.GENERIC_META) for p in members)
        },
    )
