"""Fat binaries made by Debian's hipcc (ROCm 5.2, clang 15), built once per session.

Three targets including an xnack variant; one library from two .hip files (two
bundles, two wrappers), one from a single file, and one executable whose
``--help`` runs without touching a GPU. Tests skip, naming hipcc, when it is
not installed (``make test`` installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

TARGETS = ("gfx90a", "gfx1030", "gfx906:xnack-")
BUNDLER = "clang-offload-bundler-15"

KERNEL_A = """#include <hip/hip_runtime.h>
__global__ void add_one(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
extern "C" int a_answer(void) { return 42; }
"""
KERNEL_B = """#include <hip/hip_runtime.h>
__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
extern "C" int b_answer(void) { return 7; }
"""
PROGRAM = """#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>
__global__ void fill(int *x) { x[threadIdx.x] = threadIdx.x; }
int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--help") == 0) {
    std::puts("usage: fill [--help]");
    return 0;
  }
  int *x = nullptr;
  if (hipMalloc(&x, 64 * sizeof(int)) != hipSuccess) return 2;
  hipLaunchKernelGGL(fill, dim3(1), dim3(64), 0, 0, x);
  return hipDeviceSynchronize() == hipSuccess ? 0 : 3;
}
"""


@dataclass(frozen=True)
class HipBuild:
    root: Path
    two_files: Path  # libtwo.so: two bundles
    one_file: Path  # libone.so: one bundle
    program: Path  # a position-independent executable
    fixed_program: Path  # the same built -no-pie: absolute pointers, a PT_PHDR to move
    variants: Path  # libvariants.so: gfx90a:xnack+ and gfx90a:xnack-


def _hipcc(
    out: Path,
    sources: list[Path],
    shared: bool,
    targets: tuple[str, ...] = TARGETS,
    extra: tuple[str, ...] = (),
) -> None:
    command = ["hipcc", "-O1", *[f"--offload-arch={t}" for t in targets], *extra]
    if shared:
        command += ["-fPIC", "-shared"]
    command += [str(s) for s in sources] + ["-o", str(out)]
    environment = {**os.environ, "HIP_PLATFORM": "amd"}
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode:
        pytest.fail(f"hipcc failed: {' '.join(command)}\n{result.stderr}")


_BUILT: list[HipBuild] = []


def build_once(tmp_path_factory: pytest.TempPathFactory) -> HipBuild:
    """The session's build, made on first use (the fuzz harness shares it)."""
    if _BUILT:
        return _BUILT[0]
    for tool in ("hipcc", BUNDLER, "readelf"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make system-tools installs it)")
    root = tmp_path_factory.mktemp("hip")
    sources = {"a.hip": KERNEL_A, "b.hip": KERNEL_B, "fill.hip": PROGRAM}
    for name, text in sources.items():
        (root / name).write_text(text)
    build = HipBuild(
        root,
        root / "libtwo.so",
        root / "libone.so",
        root / "fill",
        root / "fill-no-pie",
        root / "variants" / "lib.so",
    )
    _hipcc(build.two_files, [root / "a.hip", root / "b.hip"], shared=True)
    _hipcc(build.one_file, [root / "a.hip"], shared=True)
    _hipcc(build.program, [root / "fill.hip"], shared=False)
    _hipcc(build.fixed_program, [root / "fill.hip"], False, extra=("-no-pie",))
    build.variants.parent.mkdir()
    _hipcc(build.variants, [root / "b.hip"], True, ("gfx90a:xnack+", "gfx90a:xnack-"))
    _BUILT.append(build)
    return build


@pytest.fixture(scope="session")
def hip_build(tmp_path_factory: pytest.TempPathFactory) -> HipBuild:
    return build_once(tmp_path_factory)
