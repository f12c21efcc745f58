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
from typing import Any

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

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


@dataclass(frozen=True, slots=True)
class Hop:
    """``package`` came in because ``via`` (a requirement of the previous hop) needs it."""

    package: str
    via: str | None = None


@dataclass
class Resolution:
    requested: list[str]
    starts: list[int] = field(default_factory=list)  # solvable ids of the requests
    steps: list[Step] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Requirements nothing provides that made the resolution fail, by dependency id.
    unprovided: set[int] = field(default_factory=set)
    # Every package on the system afterwards, by solvable id.
    world: set[int] = field(default_factory=set)
    _parents: dict[int, dict[int, tuple[int, int] | None]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def reached(self, universe: Universe, start: int) -> dict[int, tuple[int, int] | None]:
        """Every package ``start`` pulls in, with the (package, dependency) that pulled it:
        breadth first over Depends/Requires whose provider is on the system, so following
        the parents gives a shortest requirement chain."""
        parents = self._parents.get(start)
        if parents is None:
            parents = self._parents[start] = {start: None}
            queue = deque([start])
            world = self.world
            while queue:
                current = queue.popleft()
                for dep, providers in universe.requirements(current):
                    for provider in providers:
                        if provider in world and provider not in parents:
                            parents[provider] = (current, dep)
                            queue.append(provider)
        return parents

    def path(self, universe: Universe, start: int, target: int) -> tuple[Hop, ...]:
        """The requirement chain from ``start`` to ``target`` (empty if it is not reached)."""
        parents = self.reached(universe, start)
        if target not in parents:
            return ()
        hops = []
        while (link := parents[target]) is not None:
            hops.append(Hop(universe.nevr(target), universe.show_dep(link[1])))
            target = link[0]
        hops.append(Hop(universe.nevr(target)))
        return tuple(reversed(hops))


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
    universe: Universe,
    names: list[str] | None = None,
    solvable: solv.XSolvable | None = None,
    steps: bool = True,
) -> Resolution:
    """Install ``names`` (or exactly ``solvable``) on the universe's system; ``steps``
    False skips describing the transaction (the repository-wide sweep needs only
    the resulting system)."""
    pool = universe.pool
    if solvable is not None:
        requested = [f"{solvable.name}={solvable.evr}"]
        jobs = [pool.Job(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_SOLVABLE, solvable.id)]
    else:
        requested = list(names or [])
        selections = [select(universe, name) for name in requested]
        jobs = [
            job
            for selection in selections
            for job in selection.jobs(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_FORCEBEST)
        ]
    solver = pool.Solver()
    # As dnf and apt do: a system list has no vendors, so the repository's must not block.
    solver.set_flag(solv.Solver.SOLVER_FLAG_ALLOW_VENDORCHANGE, 1)
    resolution = Resolution(requested)
    problems = solver.solve(jobs)
    if problems:
        resolution.problems = [_describe_problem(universe, p) for p in problems]
        resolution.unprovided = {
            rule.info().dep_id
            for problem in problems
            for rule in problem.findallproblemrules()
            if rule.info().type == solv.Solver.SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP
        }
        return resolution
    transaction = solver.transaction()
    resolution.world = {s.id for s in transaction.keptsolvables()} | {
        s.id for s in transaction.newsolvables()
    }
    if steps:
        resolution.steps = _steps(universe, transaction)
    if solvable is not None:
        resolution.starts = [solvable.id]
    else:
        for selection in selections:
            chosen = [s.id for s in selection.solvables() if s.id in resolution.world]
            resolution.starts.append(chosen[0])
    return resolution


def _steps(universe: Universe, transaction: solv.Transaction) -> list[Step]:
    steps = []
    mode = _T.SOLVER_TRANSACTION_SHOW_OBSOLETES | _T.SOLVER_TRANSACTION_OBSOLETE_IS_UPGRADE
    for kind in transaction.classify(mode):
        action = _ACTIONS.get(kind.type)
        if action is None:
            continue  # a summary class (vendor or arch changes) repeating packages above
        for package in kind.solvables():
            old = None
            if action not in ("install", "remove"):
                old, package = package, transaction.othersolvable(package)
            steps.append(
                Step(
                    action,
                    package.name,
                    package.evr,
                    universe.show_arch(package.arch),
                    old.evr if old is not None else None,
                )
            )
    return sorted(steps, key=lambda s: (s.name, s.version))


_S = solv.Solver
# What the rules behind a failed resolution say, in words of our own so that the
# relations and packages can be spelled as the repository's format spells them:
# libsolv's own sentences (problemstr) write every relation as RPM does.
_RULE_TEXTS = {
    _S.SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP: "nothing provides {dep} needed by {package}",
    _S.SOLVER_RULE_PKG_REQUIRES: "{package} requires {dep}, but none of its providers can "
    "be installed",
    _S.SOLVER_RULE_PKG_CONFLICTS: "{package} conflicts with {dep}, which {other} provides",
    _S.SOLVER_RULE_PKG_SAME_NAME: "cannot install both {package} and {other}",
    _S.SOLVER_RULE_PKG_OBSOLETES: "{package} replaces {dep}, which {other} provides",
    _S.SOLVER_RULE_PKG_INSTALLED_OBSOLETES: "{package} replaces {dep}, which {other} provides",
    _S.SOLVER_RULE_PKG_IMPLICIT_OBSOLETES: "{package} replaces {dep}, which {other} provides",
    _S.SOLVER_RULE_PKG_NOT_INSTALLABLE: "{package} is not installable",
    _S.SOLVER_RULE_JOB_NOTHING_PROVIDES_DEP: "nothing provides the requested {dep}",
}


def _describe_problem(universe: Universe, problem: solv.Problem) -> str:
    rules = [_describe_rule(universe, r.info()) for r in problem.findallproblemrules()]
    return "; ".join(dict.fromkeys(rules)) or str(problem)


def _describe_rule(universe: Universe, info: solv.Ruleinfo) -> str:
    text = _RULE_TEXTS.get(info.type)
    if text is None or universe.fmt.solv_prints_relations:
        return str(info.problemstr())  # libsolv's words are the format's own
    return text.format(
        dep=universe.show_dep(info.dep_id) if info.dep_id else "",
        package=universe.nevr(info.solvable.id) if info.solvable else "",
        other=universe.nevr(info.othersolvable.id) if info.othersolvable else "",
    )
