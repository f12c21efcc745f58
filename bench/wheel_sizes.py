"""What one GPU's user downloads and installs, split wheels against the fat wheel.

For each fat wheel: its size against the host wheel plus one arch's device wheel
(what ``pip install 'X[device-ARCH]'`` downloads), and the bytes each installs
(PyPA's ``installer`` into an empty prefix); and what ``[device-all]`` downloads (the
host and every device wheel: more than the fat wheel, as each arch's archive is
compressed apart and what the arches share is compressed once per arch). The wheels:

- ``jax-rocm7-plugin`` and ``jax-rocm7-pjrt`` 0.10.2 from PyPI (downloaded into
  WORK/wheels once), for gfx942;
- a small fat extension built here with Debian's ``hipcc`` (gfx90a, gfx1030, gfx906:
  two kernels in one shared library), for gfx90a.

    python bench/wheel_sizes.py [--work DIR] [--no-jax]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from gfxpack.wheels.split import split_wheels

JAX_WHEELS = ("jax-rocm7-plugin==0.10.2", "jax-rocm7-pjrt==0.10.2")
HIP_ARCHES = ("gfx90a", "gfx1030", "gfx906:xnack-")
KERNELS = """#include <hip/hip_runtime.h>
__global__ void add_one(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
extern "C" int answer(void) { return 42; }
"""


def hipcc_wheel(work: Path) -> Path:
    """A fat extension wheel, hipdemo 1.0, built with hipcc."""
    source = work / "hipdemo.hip"
    source.write_text(KERNELS)
    library = work / "_native.so"
    command = ["hipcc", "-O2", "-fPIC", "-shared", *[f"--offload-arch={a}" for a in HIP_ARCHES]]
    subprocess.run([*command, str(source), "-o", str(library)], check=True,
                   env={**os.environ, "HIP_PLATFORM": "amd"})  # fmt: skip
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    dist_info = "hipdemo-1.0.dist-info"
    members = {
        "hipdemo/__init__.py": b"",
        "hipdemo/_native.so": library.read_bytes(),
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: hipdemo\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\n"
            f"Tag: {tag}-{tag}-linux_x86_64\n"
        ).encode(),
    }
    record = ""
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    members[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    wheel = work / "fat" / f"hipdemo-1.0-{tag}-{tag}-linux_x86_64.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return wheel


def installed_bytes(*wheels: Path) -> int:
    """The bytes ``wheels`` install, with PyPA's installer, into an empty prefix."""
    with tempfile.TemporaryDirectory() as prefix:
        for wheel in wheels:
            subprocess.run(
                [sys.executable, "-m", "installer", "--destdir", prefix, str(wheel)],
                check=True,
                capture_output=True,
            )
        return sum(p.stat().st_size for p in Path(prefix).rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("build/wheel-sizes"))
    parser.add_argument("--no-jax", action="store_true", help="only the hipcc wheel")
    arguments = parser.parse_args()
    work = arguments.work
    work.mkdir(parents=True, exist_ok=True)
    fat: list[tuple[Path, str]] = []
    if not arguments.no_jax:
        downloads = work / "wheels"
        downloads.mkdir(exist_ok=True)
        if len(list(downloads.glob("*.whl"))) < len(JAX_WHEELS):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--python-version", "3.11", "-d",
                            str(downloads), *JAX_WHEELS], check=True)  # fmt: skip
        fat += [(wheel, "gfx942") for wheel in sorted(downloads.glob("*.whl"))]
    if shutil.which("hipcc"):
        fat.append((hipcc_wheel(work), "gfx90a"))
    else:
        print("hipcc is not installed (apt-get install hipcc): the hipcc wheel is left out")
    print(f"{'wheel':48} {'arch':7} {'download fat':>13} {'one arch':>13} "
          f"{'installed fat':>14} {'one arch':>13} {'device-all':>13}")  # fmt: skip
    for wheel, arch in fat:
        split = work / "split" / wheel.stem
        shutil.rmtree(split, ignore_errors=True)
        (result,) = split_wheels(wheel, split, os.cpu_count() or 1, force=True)
        chosen = [split / result.host, split / result.devices[arch]]
        download = sum(p.stat().st_size for p in chosen)
        fat_installed, one_installed = installed_bytes(wheel), installed_bytes(*chosen)
        size = wheel.stat().st_size
        sizes = result.sizes
        every = sizes["host"]["download"] + sum(d["download"] for d in sizes["devices"].values())

        def mb(n: int, whole: int) -> str:
            shown = f"{n / 1e6:7.1f} MB" if n >= 1e6 else f"{n / 1e3:7.1f} kB"
            return shown + (f" ({100 * n / whole:3.0f} %)" if n != whole else "")

        print(f"{wheel.name[:48]:48} {arch:7} {mb(size, size):>13} {mb(download, size):>19} "
              f"{mb(fat_installed, fat_installed):>14} "
              f"{mb(one_installed, fat_installed):>19} {mb(every, size):>19}")  # fmt: skip


if __name__ == "__main__":
    main()
