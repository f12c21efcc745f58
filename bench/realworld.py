"""Split real Debian ROCm libraries end to end, checked by real tools (make realworld).

Downloads librocsparse0 and librocrand1 with ``apt-get download``, unpacks them,
and for each: ``gfxpack split`` (archives in usr/lib/x86_64-linux-gnu/.kpack);
``gfxpack build`` of both with a small package.json (amdrocm-sparse,
amdrocm-rand, one device package per arch); ``dpkg --root`` install of the
gfx90a closure; ``gfxpack kpack resolve`` of every wrapper of every binary for
every target, compared with ``clang-offload-bundler --unbundle`` of the
original's bundle; ``gfxpack join`` compared with the original; and
``ctypes.CDLL`` of the rewritten library. Prints one table.

``--rocblas``: Debian 13's librocblas0 (real per-arch Tensile libraries: 166 MB
download, 2.2 GB installed; not in Debian 12, so fetched through a private trixie
sources list with its own apt state), split with ``gfxpack split``, packaged with
``gfxpack build``, published with ``gfxpack repo``, installed for one arch with
``gfxpack try-install`` and probed with ``gfxpack probe``: every library finds its
data for that arch, not for another. Skipped, with the reason, when trixie cannot
be reached.

    python bench/realworld.py [--work build/realworld] [--wheels | --rocblas]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.resolve import ResolveError, read_references, resolve
from gfxpack.fatbin.split import split_tree

PACKAGES = {"librocsparse0": ("sparse", "amdrocm-sparse"), "librocrand1": ("rand", "amdrocm-rand")}
KPACK_DIR = "usr/lib/x86_64-linux-gnu/.kpack"
BUNDLER = "clang-offload-bundler-15"
ARCH = "gfx90a"
DEVICE = "gfx90a:sramecc+:xnack-"  # what an MI210 reports; Debian builds gfx90a:xnack+/-


def package_json(names: list[tuple[str, str]]) -> list[dict[str, object]]:
    return [
        {
            "Package": package,
            "Version": "",
            "Architecture": "amd64",
            "BuildArch": "x86_64",
            "DEBDepends": ["libc6"],
            "RPMRequires": [],
            "Maintainer": "gfxpack realworld <realworld@example.org>",
            "Description_Short": f"Debian's {artifact} library, split per GPU arch",
            "Description_Long": "Host part and per-arch device code of a Debian ROCm library.",
            "Section": "libs",
            "Priority": "optional",
            "Group": "unknown",
            "License": "MIT",
            "Vendor": "Debian",
            "Homepage": "https://www.debian.org",
            "Artifactory": [
                {
                    "Artifact": artifact,
                    "Artifact_Subdir": [{"Name": "stage", "Components": ["lib"]}],
                }
            ],
            "Gfxarch": "True",
        }
        for artifact, package in names
    ]


def run(*command: str, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=True, text=True, capture_output=True, **options)  # type: ignore[call-overload, no-any-return]


def download(work: Path) -> dict[str, Path]:
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = {}
    for name in PACKAGES:
        existing = sorted(debs.glob(f"{name}_*.deb"))
        if not existing:
            run("apt-get", "download", name, cwd=str(debs))
            existing = sorted(debs.glob(f"{name}_*.deb"))
        found[name] = existing[-1]
    return found


def check_every_code_object(original: Path, installed: Path, scratch: Path) -> int:
    """Resolve every wrapper for every target and compare with the bundler's output."""
    section = scratch / "section"
    run("objcopy", "--dump-section", f".hip_fatbin={section}", str(original), str(scratch / "x"))
    checked = 0
    with FatBinary(original) as fat, open(section, "rb") as dumped:
        starts = sorted({d.bundle.offset for d in fat.devices})
        ends = {s: e for s, e in zip(starts, [*starts[1:], section.stat().st_size], strict=True)}
        targets = sorted({str(o.target) for d in fat.devices for o in d.bundle.code_objects})
        found = {t: {f.index: f for f in resolve(installed, t, environ={})} for t in targets}
        for device in fat.devices:
            dumped.seek(device.bundle.offset)
            bundle = scratch / "bundle"
            bundle.write_bytes(dumped.read(ends[device.bundle.offset] - device.bundle.offset))
            for obj in device.bundle.code_objects:
                out = scratch / "code"
                run(BUNDLER, "--unbundle", "--type=o", f"--input={bundle}", f"--output={out}",
                    f"--targets={obj.triple}")  # fmt: skip
                if found[str(obj.target)][device.wrapper.index].code != out.read_bytes():
                    sys.exit(f"{original}: wrapper {device.wrapper.index} {obj.target} differs")
                checked += 1
    section.unlink()
    return checked


TRIXIE = (
    "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian trixie main\n"
)
ROCBLAS_DEB = "librocblas0"
ROCBLAS_ARCH = "gfx90a"  # built by Debian, with xnack variants
NOT_BUILT = "gfx942"  # not among Debian's librocblas0 targets


def download_from_trixie(work: Path, name: str) -> Path | str:
    """The .deb of ``name`` from Debian 13, through apt-get with its own sources list,
    keys, state and cache under ``work`` (the machine's apt is neither read nor
    changed); or why it cannot be had."""
    from gfxpack.trial.apt import apt_options

    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    existing = sorted(debs.glob(f"{name}_*.deb"))
    if existing:
        return existing[-1]
    home = work / "apt-trixie"
    home.mkdir(parents=True, exist_ok=True)
    (home / "sources.list").write_text(TRIXIE)
    (home / "status").touch()
    options = apt_options(home, home / "status")
    for command, where in ((["update"], home), (["download", name], debs)):
        result = subprocess.run(
            ["apt-get", *options, "-q", *command], cwd=where, capture_output=True, text=True
        )
        if result.returncode != 0:
            last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:]
            return f"apt-get {' '.join(command)} from trixie failed: {' '.join(last)}"
    return sorted(debs.glob(f"{name}_*.deb"))[-1]


def gfxpack(*args: str) -> subprocess.CompletedProcess[str]:
    """A gfxpack command as a user runs it (exit code and output kept, not checked)."""
    return subprocess.run(
        [sys.executable, "-m", "gfxpack", *args], capture_output=True, text=True, check=False
    )


def rocblas(work: Path) -> None:
    """librocblas0 split, packaged, installed for ROCBLAS_ARCH and probed."""
    deb = download_from_trixie(work, ROCBLAS_DEB)
    if isinstance(deb, str):
        print(f"rocblas: skipped: {deb}")
        return
    base = work / "rocblas"
    shutil.rmtree(base, ignore_errors=True)
    tree, split, packages = base / "tree", base / "artifacts", base / "packages"
    tree.mkdir(parents=True)
    run("dpkg-deb", "-x", str(deb), str(tree))
    fat = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
    config = base / "package.json"
    config.write_text(json.dumps(package_json([("blas", "amdrocm-blas")])))
    result = gfxpack("split", str(tree), "--out", str(split), "--name", "blas_lib",
                     "--kpack-dir", KPACK_DIR, "-q")  # fmt: skip
    if result.returncode != 0:
        sys.exit(f"rocblas: gfxpack split failed:\n{result.stdout}{result.stderr}")
    (split / "therock_manifest.json").write_text('{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}\n')
    arches = sorted(p.name.removeprefix("blas_lib_") for p in split.glob("blas_lib_gfx*"))
    for step, args in (
        ("build", ["build", "--config", str(config), "--artifacts", str(split), "--out",
                   str(packages), "--rocm-version", "8.2.0", "--format", "deb", "--target",
                   ",".join(arches), "-q"]),
        ("repo", ["repo", "--in", str(packages), "--out", str(base / "repo")]),
        ("try-install", ["try-install", "--repo", str(base / "repo"), "--client", "apt",
                         "--root", str(base / "root"), "--probe",
                         f"amdrocm-blas8.2-{ROCBLAS_ARCH}"]),
    ):  # fmt: skip
        result = gfxpack(*args)
        if result.returncode != 0:
            sys.exit(f"rocblas: gfxpack {step} failed:\n{result.stdout}{result.stderr}")
    installed = sum(
        p.stat().st_size
        for p in (base / "root").rglob("*")
        if p.is_file() and not p.is_symlink() and "/var/" not in str(p)
    )
    print(f"rocblas: {deb.name}: {fat / 1e6:.0f} MB fat, split for {len(arches)} arches; "
          f"installed for {ROCBLAS_ARCH} with apt-get: {installed / 1e6:.0f} MB")  # fmt: skip
    for device, expected in ((ROCBLAS_ARCH, 0), (NOT_BUILT, 1)):
        probed = gfxpack("probe", "--root", str(base / "root"), "--device", device)
        for line in probed.stdout.splitlines():
            print(f"  probe {device}: {line}")
        if probed.returncode != expected:
            sys.exit(f"rocblas: probe for {device} exited {probed.returncode}, not {expected}")
    print(f"rocblas: found for {ROCBLAS_ARCH}, not for {NOT_BUILT} (exit 1)")


JAX_WHEELS = ("jax-rocm7-plugin==0.10.2", "jax-rocm7-pjrt==0.10.2")
WHEEL_ARCH = "gfx942"


def _split(library: Path) -> bool:
    """Whether ``library`` is a host part that references kpack archives."""
    try:
        return bool(read_references(library))
    except ResolveError:
        return False


def wheels(work: Path) -> None:
    """The jax ROCm wheels from PyPI: split, join (every file identical), then pip and uv
    install the host wheels and the gfx942 device wheels only into fresh virtual
    environments, where ``gfxpack kpack resolve`` finds every gfx942 code object with
    no variable set and every extension module loads as the unsplit one does."""
    from gfxpack.wheels.join import join_wheels
    from gfxpack.wheels.split import split_wheels

    bin_dir = Path(sys.executable).parent
    downloads = work / "wheels"
    downloads.mkdir(parents=True, exist_ok=True)
    if len(list(downloads.glob("*.whl"))) < len(JAX_WHEELS):
        run(str(bin_dir / "pip"), "download", "-q", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.11", "-d", str(downloads), *JAX_WHEELS)  # fmt: skip
    split, joined = work / "wheels-split", work / "wheels-joined"
    results = split_wheels(downloads, split, os.cpu_count() or 1, force=True)
    join_wheels(split, joined, force=True)
    for original in sorted(downloads.glob("*.whl")):
        with zipfile.ZipFile(original) as a, zipfile.ZipFile(joined / original.name) as b:
            assert sorted(a.namelist()) == sorted(b.namelist()), original.name
            assert all(a.read(n) == b.read(n) for n in a.namelist()), original.name
    wanted = [f"{r.source.split('-')[0].replace('_', '-')}[device-{WHEEL_ARCH}]" for r in results]
    loads = {}
    for client in ("fat", "pip", "uv"):
        venv = work / f"venv-{client}"
        shutil.rmtree(venv, ignore_errors=True)
        run(str(bin_dir / "uv"), "venv", "-q", "--python", sys.executable, str(venv))
        python = str(venv / "bin" / "python")
        if client == "pip":
            run(str(bin_dir / "pip"), "--python", python, "install", "-q", "--no-cache-dir",
                "--no-index", "--find-links", str(split), *wanted)  # fmt: skip
        else:
            sources = [str(w) for w in downloads.glob("*.whl")] if client == "fat" else wanted
            links = [] if client == "fat" else ["--no-index", "--find-links", str(split)]
            run(str(bin_dir / "uv"), "pip", "install", "-q", "--python", python, "--offline",
                "--no-deps" if client == "fat" else "--no-cache", *links, *sources)  # fmt: skip
        site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))")
                    .stdout.strip())  # fmt: skip
        libraries = sorted(p for p in site.glob("jax_*/**/*.so"))
        loads[client] = [
            subprocess.run(
                [python, "-c", f"import ctypes; ctypes.CDLL({str(p)!r})"], capture_output=True
            ).returncode
            for p in libraries
        ]
        if client == "fat":
            continue
        kpacks = sorted(p.name for p in site.rglob("*.kpack") if p.is_file())
        assert all(WHEEL_ARCH in name for name in kpacks) and len(kpacks) == 2, kpacks
        resolved = 0
        for library in libraries:
            # Kept whole (too little device code) or no HIP code at all: nothing to find.
            if not _split(library):
                continue
            resolved += len(resolve(library, WHEEL_ARCH, environ={}))
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        print(f"{client}: {' '.join(wanted)}: {len(kpacks)} archives, {resolved} {WHEEL_ARCH} "
              f"code objects resolved, {size / 1e6:.1f} MB installed")  # fmt: skip
    assert loads["pip"] == loads["uv"] == loads["fat"], loads
    fat_size = sum(p.stat().st_size for p in downloads.glob("*.whl"))
    one_arch = sum(
        (split / name).stat().st_size for r in results for name in (r.host, r.devices[WHEEL_ARCH])
    )
    print(f"download for {WHEEL_ARCH}: {one_arch / 1e6:.1f} MB of {fat_size / 1e6:.1f} MB fat; "
          "join gave every file back identical; extension modules load as unsplit")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("build/realworld"))
    parser.add_argument("--wheels", action="store_true", help="the jax ROCm wheels only")
    parser.add_argument("--rocblas", action="store_true", help="Debian 13's librocblas0 only")
    arguments = parser.parse_args()
    work = arguments.work.resolve()
    if arguments.wheels:
        wheels(work)
        return
    if arguments.rocblas:
        rocblas(work)
        return
    debs = download(work)
    artifacts = work / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    rows = []
    for name, deb in debs.items():
        artifact, package = PACKAGES[name]
        tree = work / name / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        run("dpkg-deb", "-x", str(deb), str(tree))
        split = work / name / "split"
        report = split_tree(tree, split, f"{artifact}_lib", KPACK_DIR, os.cpu_count() or 1, True)
        for item in split.iterdir():
            if item.is_dir():
                shutil.copytree(item, artifacts / item.name, copy_function=os.link)
        joined = work / name / "joined"
        join_tree(split, joined, force=True)
        run("diff", "-r", "--no-dereference", str(tree), str(joined))
        # Every arch installed at once, for resolving every target.
        everything = work / name / "all-arches"
        shutil.rmtree(everything, ignore_errors=True)
        for item in sorted(split.iterdir()):
            if item.is_dir():
                shutil.copytree(item / "stage", everything, symlinks=True, dirs_exist_ok=True)
        checked = 0
        for library in sorted(tree.rglob("*.so.*")):
            if library.is_symlink():
                continue
            relative = library.relative_to(tree)
            host = split / f"{artifact}_lib_generic" / "stage" / relative
            run(sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(host)!r})")
            with tempfile.TemporaryDirectory(dir=work) as scratch:
                checked += check_every_code_object(library, everything / relative, Path(scratch))
        rows.append((package, report, checked))
    (artifacts / "therock_manifest.json").write_text('{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}\n')
    config = work / "package.json"
    config.write_text(json.dumps(package_json([(PACKAGES[n][0], PACKAGES[n][1]) for n in debs])))
    arches = sorted({a for _, report, _ in rows for a in report.arches})
    packages = work / "packages"
    run(sys.executable, "-m", "gfxpack", "build", "--config", str(config), "--artifacts",
        str(artifacts), "--out", str(packages), "--rocm-version", "8.2.0", "--format", "deb",
        "--target", ",".join(arches), "-q")  # fmt: skip
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    wanted = [
        str(p)
        for _, package in PACKAGES.values()
        for p in sorted(packages.glob(f"{package}-host8.2_*.deb"))
        + sorted(packages.glob(f"{package}8.2-{ARCH}_*.deb"))
    ]
    run("dpkg", "--root", str(root), "--force-depends", "--force-script-chrootless",
        "--log=/dev/null", "-i", *wanted)  # fmt: skip
    for library in sorted((root / "opt").rglob("*.so.*")):
        if not library.is_symlink():
            resolve(library, DEVICE, environ={})  # every wrapper finds its gfx90a code
    installed_size = sum(
        p.stat().st_size for p in (root / "opt").rglob("*") if p.is_file() and not p.is_symlink()
    )

    print(f"| package | fat | host | {' | '.join(arches)} | code objects checked |")
    print("|---|---:|---:|" + "---:|" * len(arches) + "---:|")
    for package, report, checked in rows:
        sizes = [
            f"{report.arches[a].archive_bytes / 1e6:.1f} MB" if a in report.arches else "-"
            for a in arches
        ]
        print(
            f"| {package} | {report.fat_bytes / 1e6:.1f} MB | {report.host_bytes / 1e6:.1f} MB | "
            f"{' | '.join(sizes)} | {checked} |"
        )
    fat = sum(report.fat_bytes for _, report, _ in rows)
    print(
        f"\ninstalled with dpkg --root for {ARCH} (host + {ARCH} packages of both): "
        f"{installed_size / 1e6:.1f} MB of {fat / 1e6:.1f} MB fat "
        f"({100 * installed_size / fat:.1f} %); every wrapper resolved there for {DEVICE}; "
        "join byte-identical; ctypes.CDLL loads every host library; every code object of every "
        "target equals clang-offload-bundler's"
    )


if __name__ == "__main__":
    main()
