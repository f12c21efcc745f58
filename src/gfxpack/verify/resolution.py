"""One install resolved by libsolv: the transaction, the resulting system, and the
requirement edges between its packages (to say *why* a package came in).

Requests behave like ``apt-get install NAME``: the newest version of the
name (or, failing that, of a package providing it) is wanted even when an
older one is installed, so asking for a newer release upgrades in place.
"""

from __future__ import annotations

import difflib
from collections import deque
from dataclasses import dataclass, field

import solv

from gfxpack.verify.system import VerifyError
from gfxpack.verify.universe import Universe

_T = solv.Transaction
# Transaction classes: for the *-ED kinds libsolv lists the installed package and
# othersolvable() is its replacement.
_ACTIONS = {
    _T.SOLVER_TRANSACTION_INSTALL: "install",
    _T.SOLVER_TRANSACTION_MULTIINSTALL: "install",
    _T.SOLVER_TRANSACTION_ERASE: "remove",
    _T.SOLVER_TRANSACTION_UPGRADED: "upgrade",
    _T.SOLVER_TRANSACTION_DOWNGRADED: "downgrade",
    _T.SOLVER_TRANSACTION_REINSTALLED: "reinstall",
    _T.SOLVER_TRANSACTION_MULTIREINSTALL: "reinstall",
    _T.SOLVER_TRANSACTION_CHANGED: "change",
}


@dataclass(frozen=True, slots=True)
class Step:
    action: str
    name: str
    version: str
    arch: str
    old_version: str | None = None

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


@dataclass(frozen=True, slots=True)
class Hop:
    """``package`` came in because ``via`` (a requirement of the previous hop) needs it."""

    package: str
    via: str | None = None


@dataclass
class Resolution:
    requested: list[str]
    starts: list[solv.XSolvable] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Every package on the system afterwards, by solvable id.
    world: dict[int, solv.XSolvable] = field(default_factory=dict)
    _paths: dict[int, dict[int, tuple[Hop, ...]]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def paths_from(self, universe: Universe, start: solv.XSolvable) -> dict[int, tuple[Hop, ...]]:
        """Shortest requirement chain from ``start`` to every package it pulls in
        (breadth first over Depends/Requires whose provider is on the system)."""
        if start.id in self._paths:
            return self._paths[start.id]
        paths = {start.id: (Hop(_nevr(start)),)}
        self._paths[start.id] = paths
        queue = deque([start])
        pool = start.pool
        while queue:
            current = queue.popleft()
            for dep in current.lookup_deparray(solv.SOLVABLE_REQUIRES):
                for provider in pool.whatprovides(dep.id):
                    if provider.id in self.world and provider.id not in paths:
                        paths[provider.id] = (
                            *paths[current.id],
                            Hop(_nevr(provider), universe.show_dep(dep)),
                        )
                        queue.append(provider)
        return paths


def _nevr(solvable: solv.XSolvable) -> str:
    return f"{solvable.name} ({solvable.evr})"


def select(universe: Universe, name: str) -> solv.Selection:
    """The packages a request names: by name, else by what they provide."""
    pool = universe.pool
    selection = pool.select(name, solv.Selection.SELECTION_NAME)
    if selection.isempty():
        selection = pool.select(name, solv.Selection.SELECTION_PROVIDES)
    if selection.isempty():
        names = sorted({s.name for s in universe.packages()})
        near = difflib.get_close_matches(name, names, n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise VerifyError(f"{name}: no package of that name in {universe.label}{hint}")
    return selection


def resolve(
    universe: Universe, names: list[str] | None = None, solvable: solv.XSolvable | None = None
) -> Resolution:
    """Install ``names`` (or exactly ``solvable``) on the universe's system."""
    pool = universe.pool
    if solvable is not None:
        requested = [f"{solvable.name}={solvable.evr}"]
        jobs = [pool.Job(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_SOLVABLE, solvable.id)]
    else:
        requested = list(names or [])
        jobs = []
        for name in requested:
            jobs += select(universe, name).jobs(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_FORCEBEST)
    solver = pool.Solver()
    # As dnf and apt do: a system list has no vendors, so the repository's must not block.
    solver.set_flag(solv.Solver.SOLVER_FLAG_ALLOW_VENDORCHANGE, 1)
    resolution = Resolution(requested)
    problems = solver.solve(jobs)
    if problems:
        resolution.problems = [_describe_problem(p) for p in problems]
        return resolution
    transaction = solver.transaction()
    removed = set()
    mode = _T.SOLVER_TRANSACTION_SHOW_OBSOLETES | _T.SOLVER_TRANSACTION_OBSOLETE_IS_UPGRADE
    for kind in transaction.classify(mode):
        action = _ACTIONS.get(kind.type)
        if action is None:
            continue  # a summary class (vendor or arch changes) repeating packages above
        for package in kind.solvables():
            old = None
            if action not in ("install", "remove"):
                old, package = package, transaction.othersolvable(package)
                removed.add(old.id)
            elif action == "remove":
                removed.add(package.id)
            resolution.steps.append(
                Step(
                    action,
                    package.name,
                    package.evr,
                    universe.show_arch(package.arch),
                    old.evr if old is not None else None,
                )
            )
    resolution.steps.sort(key=lambda s: (s.name, s.version))
    world = {s.id: s for s in universe.system.solvables_iter() if s.id not in removed}
    world.update((s.id, s) for s in transaction.newsolvables())
    resolution.world = world
    if solvable is not None:
        resolution.starts = [solvable]
    else:
        for name in requested:
            chosen = [s for s in select(universe, name).solvables() if s.id in world]
            resolution.starts.append(chosen[0])
    return resolution


def _describe_problem(problem: solv.Problem) -> str:
    rules = [r.info().problemstr() for r in problem.findallproblemrules()]
    return "; ".join(dict.fromkeys(rules)) or str(problem)
