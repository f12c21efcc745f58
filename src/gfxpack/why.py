"""Why an install brings a package in, or why it does not.

The install is resolved by libsolv as ``verify`` resolves it; the answer is the
shortest chain of requirements from a requested package to the one asked about
(breadth first over the resolved system), or, when it is not installed, what keeps
it out: nothing installed requires it, or it is another GPU arch's package, which
no package of the requested arch may require.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.formats import PackageFormat
from gfxpack.plan.targets import sort_targets
from gfxpack.verify import formats_in
from gfxpack.verify.resolution import Hop, resolve, select
from gfxpack.verify.rules import RULES, arch_of
from gfxpack.verify.system import VerifyError, read_system
from gfxpack.verify.universe import Universe, load

ARROW = " → "


@dataclass
class Answer:
    fmt: PackageFormat
    package: str  # name (version) of the package asked about
    install: list[str]
    installed: bool
    chain: tuple[Hop, ...] = ()  # from a requested package to it, when installed
    reason: str = ""  # one sentence: how it came in, or what keeps it out
    required_by: list[str] = field(default_factory=list)  # in the repository, by name

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.fmt.name,
            "package": self.package,
            "install": self.install,
            "installed": self.installed,
            "chain": [{"package": h.package, "via": h.via} for h in self.chain],
            "reason": self.reason,
            "required_by": self.required_by,
        }


def chain_text(chain: tuple[Hop, ...]) -> str:
    """``a requires b (= 1) → requires c (>= 1)``: the names of the first package and
    the requirements as the packages write them."""
    if not chain:
        return ""
    text = _name(chain[0].package)
    for i, hop in enumerate(chain[1:]):
        via = hop.via or ""
        provider = _name(hop.package)
        text += (" requires " if i == 0 else ARROW + "requires ") + via
        if not via.startswith(provider):
            text += f" (provided by {provider})"
    return text


def _name(nevr: str) -> str:
    return nevr.split(" (", 1)[0]


def why(
    root: Path,
    install: list[str],
    package: str,
    fmt: PackageFormat | None = None,
    system: Path | None = None,
    suite: str | None = None,
) -> list[Answer]:
    """The answer for ``fmt``, or for every format of the repository at ``root``."""
    if not install:
        raise VerifyError("give the install to explain: --install NAME (repeatable)")
    if not Path(root).is_dir():
        raise VerifyError(f"{root}: not a directory (give the --out directory of gfxpack repo)")
    present = formats_in(Path(root))
    if fmt is not None and fmt not in present:
        raise VerifyError(f"{root}: no {fmt} repository here")
    chosen = [fmt] if fmt else present
    if not chosen:
        raise VerifyError(f"{root}: neither an apt repository (dists/) nor an rpm-md one")
    if system is not None and len(chosen) > 1:
        raise VerifyError("--system describes one format's packages: add --format deb or rpm")
    return [
        explain(load(Path(root), f, read_system(system, f), suite), install, package)
        for f in chosen
    ]


def explain(universe: Universe, install: list[str], package: str) -> Answer:
    resolution = resolve(universe, install, steps=False)
    if not resolution.ok:
        raise VerifyError(
            f"cannot install {' '.join(install)} from {universe.label}: "
            + " | ".join(resolution.problems)
        )
    candidates = select(universe, package).solvables()
    installed = [s.id for s in candidates if s.id in resolution.world]
    target = installed[0] if installed else universe.newest(candidates).id
    answer = Answer(universe.fmt, universe.nevr(target), install, bool(installed))
    answer.required_by = _required_by(universe, target)
    if installed:
        chains = [resolution.path(universe, start, target) for start in resolution.starts]
        chains = [c for c in chains if c]
        answer.chain = min(chains, key=len) if chains else ()
        on_system = target in {s.id for s in universe.system.solvables_iter()}
        if len(answer.chain) == 1:
            answer.reason = "it is requested"
        elif on_system:
            answer.reason = "it was already installed on the system" + (
                f"; {chain_text(answer.chain)}" if answer.chain else ""
            )
        elif answer.chain:
            answer.reason = chain_text(answer.chain)
        else:
            answer.reason = "it came in as a recommendation, which no requirement makes"
        return answer
    answer.reason = _kept_out(universe, resolution.world, target, answer.required_by)
    return answer


def _required_by(universe: Universe, target: int) -> list[str]:
    """The repository's packages that require ``target`` (or something it provides)."""
    names = {
        universe.name_evr(solvable.id)[0]
        for solvable in universe.packages()
        if any(target in providers for _, providers in universe.requirements(solvable.id))
    }
    return sorted(names)


def _kept_out(universe: Universe, world: set[int], target: int, required_by: list[str]) -> str:
    name = universe.name_evr(target)[0]
    arch = arch_of(name)
    installed_arches = sort_targets(
        {a for s in world if (a := arch_of(universe.name_evr(s)[0])) is not None}
    )
    others = ", ".join(required_by[:6]) + (
        f" and {len(required_by) - 6} more" if len(required_by) > 6 else ""
    )
    if arch is not None and installed_arches and arch not in installed_arches:
        return (
            f"it is a {arch} package and the install is for {', '.join(installed_arches)}: "
            f"the cross-arch rule ({RULES['cross-arch']}) keeps every other arch's device "
            "and arch meta out; "
            + (
                f"it comes with {others}, none of which is installed"
                if required_by
                else "nothing in the repository requires it"
            )
        )
    if required_by:
        return (
            f"nothing installed requires it: it is required by {others}, none of which is installed"
        )
    return "no package of the repository requires it"


__all__ = ["Answer", "chain_text", "explain", "why"]
