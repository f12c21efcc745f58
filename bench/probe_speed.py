"""gfxpack probe on installed roots, against the floor of listing them.

Two roots, each probed for gfx942:

* TheRock's package.json (``../shared/fixtures/therock``; skipped, with the reason,
  when absent) planned for gfx90a, gfx942 and gfx1100, its artifacts made by
  examples/generate_artifacts.py, built (deb), published by ``gfxpack repo`` and
  installed for gfx942 by ``gfxpack try-install`` (apt-get into a throwaway root):
  what a user's machine holds after ``apt-get install amdrocm-core8.2-gfx942``;
* a root of 12,000 files for gfx942, each family at the size it has upstream:
  split libraries with their .kpack archive, rocBLAS's flat Tensile library of code
  objects, hipBLASLt's ``library/gfx942/`` with its manifest, MIOpen's databases,
  rocFFT's cache, thousands of AOTriton images, headers and documentation.

Side by side, best of N: what a user would otherwise run to see what is there
(``find ROOT -type f | wc -l``: the floor, a listing without reading anything),
``probe_root`` in this process, and ``gfxpack probe --root ROOT --device gfx942`` as
a user runs it (start-up included). Making the roots is not timed.

    python bench/probe_speed.py [--repeat 5] [--files 12000] [--work build/bench-probe]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from gfxpack.probe import probe_root

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.code_objects import code_object  # noqa: E402
from tests.conftest import SHARED, load_generator  # noqa: E402
from tests.probe.roots import archive, split_binary  # noqa: E402

from timing import best_of, compile_bytecode  # noqa: E402

DEVICE = "gfx942"
THEROCK_TARGETS = ["gfx90a", "gfx942", "gfx1100"]
PREFIX = "opt/rocm/core-8.2"
LIBRARIES = 40  # split libraries of the synthetic root, one .kpack for them all


def gfxpack(*args: str) -> subprocess.CompletedProcess[str]:
    gfxpack_bin = Path(sys.executable).with_name("gfxpack")
    return subprocess.run([str(gfxpack_bin), *args], capture_output=True, text=True)


def therock_root(work: Path) -> Path | str:
    """TheRock's config installed for DEVICE; or why it cannot be made."""
    config = SHARED / "fixtures" / "therock" / "package.json"
    if not config.is_file():
        return f"{config} is absent (the shared fixtures are not checked out beside the clone)"
    base = work / "therock"
    shutil.rmtree(base, ignore_errors=True)
    load_generator().generate(base / "artifacts", config, THEROCK_TARGETS, 0.01, seed=7)
    for args in (
        ["build", "--config", str(config), "--artifacts", str(base / "artifacts"),
         "--out", str(base / "packages"), "--rocm-version", "8.2.0", "--format", "deb",
         "--target", ",".join(THEROCK_TARGETS), "-q"],
        ["repo", "--in", str(base / "packages"), "--out", str(base / "repo")],
        ["try-install", "--repo", str(base / "repo"), "--client", "apt", "--root",
         str(base / "root"), f"amdrocm-core8.2-{DEVICE}"],
    ):  # fmt: skip
        result = gfxpack(*args)
        if result.returncode != 0:
            sys.exit(f"gfxpack {args[0]} failed:\n{result.stdout}{result.stderr}")
    return base / "root"


def write(root: Path, relative: str, data: bytes) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def synthetic_root(work: Path, files: int) -> Path:
    """A root of ``files`` regular files for DEVICE (see the module docstring)."""
    root = work / "synthetic"
    shutil.rmtree(root, ignore_errors=True)
    lib = f"{PREFIX}/lib"
    keys = []
    for index in range(LIBRARIES):
        kernel = f"math-libs/x{index}/stage/lib/libx{index}.so"
        split_binary(root / lib / f"libx{index}.so", kernel=kernel)
        keys.append(f"{kernel}#0")
    archive(root / PREFIX / f".kpack/x_lib_{DEVICE}.kpack", {DEVICE: keys})
    write(root, f"{lib}/librocfft.so.0", b"\x7fELF")
    write(root, f"{lib}/rocfft_kernel_cache_{DEVICE}.db", b"SQLite format 3\x00")
    left = files - LIBRARIES - 3
    shares = {"rocblas": 0.35, "hipblaslt": 0.15, "aotriton": 0.25, "miopen": 0.01}
    counts = {family: int(left * share) for family, share in shares.items()}
    code = code_object(DEVICE, b"kernels")
    for index in range(counts["rocblas"]):
        name = f"TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_{index:05}_{DEVICE}.co"
        write(root, f"{lib}/rocblas/library/{name}", code)
    lt = f"{lib}/hipblaslt/library"
    names = [
        f"TensileLibrary_Type_HH_HPA_{index:05}_{DEVICE}.co" for index in range(counts["hipblaslt"])
    ]
    for name in names:
        write(root, f"{lt}/{DEVICE}/{name}", code)
    manifest = "".join(f"/build/lib/hipblaslt/library/{DEVICE}/{name}\n" for name in names)
    write(root, f"{lt}/TensileManifest.txt", manifest.encode())
    for index in range(counts["aotriton"]):
        kernel = f"attn_fwd/FONLY__^bf16@{index:05}___MI300X.aks2"
        write(root, f"{lib}/aotriton.images/amd-{DEVICE}/flash/{kernel}", b"aks2")
    for index in range(counts["miopen"]):
        write(root, f"{PREFIX}/share/miopen/db/{DEVICE}130.{index}.HIP.fdb.txt", b"db")
    write(root, f"{PREFIX}/share/miopen/db/{DEVICE}130.kdb", b"kdb")
    made = LIBRARIES + 3 + sum(counts.values()) + 2
    for index in range(files - made):  # headers and documentation: no family's
        write(root, f"{PREFIX}/include/x{index % 50}/header{index}.h", b"#pragma once\n")
    return root


def count_files(root: Path) -> int:
    find = subprocess.run(["find", str(root), "-type", "f"], capture_output=True, check=True)
    return len(find.stdout.splitlines())


def measure(name: str, root: Path, repeat: int) -> str:
    files = count_files(root)
    floor = best_of(repeat, lambda: subprocess.run(
        f"find '{root}' -type f | wc -l", shell=True, capture_output=True, check=True))  # fmt: skip
    report = probe_root(root, [DEVICE], environ={})
    in_process = best_of(repeat, lambda: probe_root(root, [DEVICE], environ={}))
    command = best_of(repeat, lambda: gfxpack("probe", "--root", str(root), "--device", DEVICE))
    counts = {s: sum(1 for f in report.findings if f.status.value == s) for s in ("found",)}
    failed = len(report.failed)
    verdict = f"{counts['found']} found, {failed} not" if failed else f"{counts['found']} found"
    return (
        f"| {name} | {files:,} | {verdict} | {floor:.3f} s | {in_process:.3f} s | "
        f"{command:.3f} s | {command / floor:.1f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", type=int, default=12_000)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-probe")
    arguments = parser.parse_args()
    work = arguments.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    rows = []
    therock = therock_root(work)
    if isinstance(therock, str):
        print(f"TheRock's config: skipped: {therock}", file=sys.stderr)
    else:
        rows.append(measure(f"TheRock's config, installed for {DEVICE}", therock, arguments.repeat))
    synthetic = synthetic_root(work, arguments.files)
    rows.append(measure(f"{arguments.files:,}-file root", synthetic, arguments.repeat))
    print(
        "| root | files | probe for gfx942 | find -type f \\| wc -l | probe_root (in process) "
        "| gfxpack probe | ratio to find |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
