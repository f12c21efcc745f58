"""Install resolution: gfxpack verify (libsolv) against apt-get install --simulate.

Two repositories, both published by gfxpack repo: the example release (80
packages, built from generated artifacts) and a synthetic release of about
5,000 packages (plan_scale.py's synthetic package.json planned for 16
targets; empty payloads, real .deb and .rpm files). For each, side by side in
one run, best of N:

* apt-get install --simulate of one gfx942 arch meta, on a warm apt cache
  (apt-get update done beforehand, not timed);
* gfxpack's resolution of the same request: load the indexes into libsolv
  and solve (what one `apt-get install` does);
* gfxpack verify in full: that resolution plus every package of the
  repository resolved on its own and held to every rule.

    python bench/verify_scale.py [--repeat 5] [--bases 620] [--targets 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from gfxpack.formats import DEB, FORMATS, RPM, PackageInfo
from gfxpack.plan import plan
from gfxpack.repo import publish
from gfxpack.verify import verify
from gfxpack.verify.resolution import resolve
from gfxpack.verify.system import bundled, read_system
from gfxpack.verify.universe import load
from gfxpack.views import reachable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.conftest import build_example, generate_example  # noqa: E402
from tests.verify.helpers import Apt  # noqa: E402

from plan_scale import TARGETS, synthetic_release  # noqa: E402
from timing import best_of  # noqa: E402

EPOCH = 1_700_000_000


def example_repo(work: Path) -> Path:
    release = build_example(generate_example(work / "artifacts"), work / "packages")
    publish(release.out, work / "repo", "stable", EPOCH)
    return work / "repo"


def realistic(specs):
    """plan_scale's random release without the edges real releases do not have: a
    runtime package or a meta depending on a -devel package, a library depending on a
    metapackage, and a meta marked non-gfxarch while it contains gfxarch packages.
    Each makes gfx942 packages pull in every other arch (a -devel package, a meta and
    a non-gfxarch meta need the full metas of gfxarch dependencies), which gfxpack
    verify reports, thousands of times."""
    devel = {spec.name for spec in specs if spec.name.endswith("-devel")}
    metas = {spec.name for spec in specs if spec.metapackage}
    gfxarch: set[str] = set()
    result = []
    for spec in specs:  # dependencies come earlier in the list
        unwanted = (set() if spec.name in devel else devel) | (set() if spec.metapackage else metas)

        def keep(relations, unwanted=unwanted):
            return tuple(r for r in relations if not unwanted & set(r.names()))

        spec = replace(
            spec,
            deb=replace(spec.deb, depends=keep(spec.deb.depends)),
            rpm=replace(spec.rpm, depends=keep(spec.rpm.depends)),
        )
        names = {n for r in spec.deb.depends for n in r.names()}
        if spec.metapackage and names & gfxarch:
            spec = replace(spec, gfxarch=True)
        if spec.gfxarch and spec.name not in devel:
            gfxarch.add(spec.name)
        result.append(spec)
    return result


def synthetic_repo(work: Path, bases: int, targets: int) -> tuple[Path, str]:
    """The synthetic release as tiny real packages; the repo and a gfx942 package."""
    release = plan(realistic(synthetic_release(bases)), TARGETS[:targets], "8.2.0")
    build = work / "packages"
    build.mkdir(parents=True)
    for package in release.packages:
        for fmt in FORMATS:
            relations = package.relations(fmt)
            fields = {
                name: tuple(fmt.render(dep) for dep in getattr(relations, name))
                for name in ("depends", "provides", "conflicts")
            }
            info = PackageInfo(
                name=relations.name,
                version="8.2.0",
                release="1",
                arch=fmt.arch(release.specs[package.base]),
                summary=f"synthetic {package.base}",
                **fields,
            )
            with open(build / fmt.filename(info), "wb") as file:
                fmt.write(info, file)
    publish(build, work / "repo", "stable", EPOCH)
    # The gfx942 package that pulls in the most: the hardest single request.
    target = max(
        (p for p in release.packages if p.deb.name.endswith("-gfx942")),
        key=lambda p: len(reachable(release, p.key)),
    )
    return work / "repo", target.deb.name


def check_all(repo: Path, target: str) -> None:
    (report,) = verify(repo, [target], DEB)
    assert report.ok, report.violations[:3]


def compare(label: str, repo: Path, target: str, repeat: int, work: Path) -> dict:
    apt = Apt(
        work / "apt",
        f"deb [trusted=yes] file:{(repo / 'apt').resolve()} stable main\n",
        bundled(DEB),
    )
    apt.run("update")
    planned = apt.simulate(target)  # also builds apt's binary cache
    system = read_system(None, DEB)

    def gfxpack_resolve():
        resolution = resolve(load(repo, DEB, system), [target])
        assert resolution.ok, resolution.problems
        return resolution

    resolution = gfxpack_resolve()
    assert {s.name for s in resolution.steps} == set(planned), "apt and libsolv disagree"
    packages = len(load(repo, DEB, system).packages())
    timings = {
        "apt": best_of(repeat, lambda: apt.simulate(target)),
        "resolve": best_of(repeat, gfxpack_resolve),
        "verify": best_of(max(1, repeat // 2), lambda: check_all(repo, target)),
        "rpm_resolve": best_of(
            repeat, lambda: resolve(load(repo, RPM, read_system(None, RPM)), [target])
        ),
    }
    return {"label": label, "packages": packages, "installs": len(planned), **timings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bases", type=int, default=620)
    parser.add_argument("--targets", type=int, default=16)
    args = parser.parse_args()
    if "gfx942" not in TARGETS[: args.targets]:
        parser.error(
            f"--targets {args.targets}: the request needs gfx942, target "
            f"{TARGETS.index('gfx942') + 1} of plan_scale's list"
        )
    rows = []
    with tempfile.TemporaryDirectory(prefix="gfxpack-verify-bench-") as tmp:
        work = Path(tmp)
        rows.append(
            compare(
                "example",
                example_repo(work / "example"),
                "amdrocm-core8.2-gfx942",
                args.repeat,
                work / "example",
            )
        )
        started = time.perf_counter()
        repo, target = synthetic_repo(work / "synthetic", args.bases, args.targets)
        print(
            f"(synthetic repository written and published in {time.perf_counter() - started:.1f} s)"
        )
        rows.append(compare("synthetic", repo, target, args.repeat, work / "synthetic"))
    print(
        f"{'repository':<10} {'packages':>8} {'installs':>8} {'apt-get -s':>11} "
        f"{'libsolv':>9} {'ratio':>6} {'rpm-md':>8} {'verify all':>11}"
    )
    for row in rows:
        print(
            f"{row['label']:<10} {row['packages']:>8} {row['installs']:>8} "
            f"{row['apt']:>10.3f}s {row['resolve']:>8.3f}s {row['resolve'] / row['apt']:>5.2f}x "
            f"{row['rpm_resolve']:>7.3f}s {row['verify']:>10.3f}s"
        )
    print("ratio = gfxpack's load-and-solve time / apt-get install --simulate's (below 1: faster)")


if __name__ == "__main__":
    main()
