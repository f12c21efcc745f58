"""What a removal leaves behind: the kept packages that lose a dependency, found with
the libsolv universe ``gfxpack verify`` resolves against (verify/universe.py).

A removal that takes a package some kept package requires (a ``=`` dependency of the
newest build on the package removed, say) would leave that package uninstallable
while the run exits 0. The repository as published now is loaded with the system
``verify`` assumes; a requirement of a kept package whose every provider leaves is
lost, and a kept package is uninstallable when it loses one, directly or through a
package that became uninstallable itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from gfxpack.formats import FORMATS


@dataclass
class Holes:
    """What removing some package files does to the packages that stay."""

    # "deb: name (version) needs dependency", one per requirement a kept package loses
    lost: list[str] = field(default_factory=list)
    # "deb: name (version)" of every kept package that no longer installs
    uninstallable: list[str] = field(default_factory=list)


def holes(out: Path, suite: str, leaving: Collection[str]) -> Holes:
    """What removing the package files ``leaving`` (file names) from the repository at
    ``out`` (apt suite ``suite``) leaves unmet, per format; formats none of them belongs
    to are not loaded."""
    # Imported here: libsolv is loaded by a removal only, and verify/ imports repo's
    # package (whose __init__ imports the run that imports this module).
    from gfxpack.verify.system import read_system
    from gfxpack.verify.universe import load, locate

    found = Holes()
    for fmt in FORMATS:
        if not any(name.endswith(f".{fmt.name}") for name in leaving):
            continue
        if locate(out / fmt.repo_dir, fmt) is None:
            continue  # no indexes yet: nothing installs from it
        universe = load(out / fmt.repo_dir, fmt, read_system(None, fmt), suite)
        packages = universe.packages()
        gone = {s.id for s in packages if Path(universe.location(s)).name in leaving}
        kept = [s for s in packages if s.id not in gone]
        for solvable in kept:
            for dep, providers in universe.requirements(solvable.id):
                if providers and gone.issuperset(providers):
                    found.lost.append(
                        f"{fmt.name}: {universe.nevr(solvable.id)} needs {universe.show_dep(dep)}"
                    )
        # A package that needs an uninstallable one is uninstallable too: until no more.
        broken: list[int] = []
        changed = True
        while changed:
            changed = False
            for solvable in kept:
                if solvable.id in gone:
                    continue
                if any(p and gone.issuperset(p) for _, p in universe.requirements(solvable.id)):
                    gone.add(solvable.id)
                    broken.append(solvable.id)
                    changed = True
        found.uninstallable += sorted(f"{fmt.name}: {universe.nevr(s)}" for s in broken)
    return found
