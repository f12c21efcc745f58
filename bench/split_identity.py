"""Byte-for-byte: what ``gfxpack split`` writes, by one source tree against another.

A change to how the split is written (not to what it writes) must leave every
output byte as it was. This script makes the inputs once (under --inputs), runs
``gfxpack split`` on each with the source tree of each ``--src`` (PYTHONPATH, in a
child process), records the sha256 and mode of every file it wrote (a wheel's
members too) and compares the records:

- TheRock's shape: a fat artifact directory (``demo_lib_gfx94X-dcgpu``: the
  hipcc-built fixtures of tests/fatbin when hipcc is installed, a generated fat
  library of bench/fat_library.py, a Tensile file per arch, a symlink), a generic
  directory copied as it is and a therock_manifest.json;
- the example release: examples/generate_artifacts.py's tree as a single-arch (fat)
  build leaves it (``--single-arch gfx94X-dcgpu``, scale 0.05);
- the same fat files as an install tree (``--name demo_lib``);
- a fat wheel of them, and every wheel in --wheel-dir (the jax-rocm7-pjrt wheel
  of bench/wheel_split.py).

    python bench/split_identity.py --src /tmp/before/src --src src [--wheel-dir DIR]
    python bench/split_identity.py --src src --save digests.json
    python bench/split_identity.py --src src --against digests.json

Exits 1 naming the first differing files when two records differ.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

DIST_INFO = "demo_fat-1.0.dist-info"
WHEEL_NAME = "demo_fat-1.0-cp311-cp311-linux_x86_64.whl"
FAT_DIR = "demo_lib_gfx94X-dcgpu"
PREFIX = "math-libs/demo/stage"

Record = dict[str, str]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hip_libraries(work: Path) -> list[Path]:
    """The hipcc-built libraries of tests/fatbin/conftest.py (none without hipcc)."""
    if shutil.which("hipcc") is None:
        print("hipcc is not installed: the inputs hold the generated library only")
        return []
    sys.path.insert(0, str(ROOT))
    from tests.fatbin.conftest import KERNEL_A, KERNEL_B, TARGETS

    made = []
    for name, kernels in (("libtwo.so", [KERNEL_A, KERNEL_B]), ("libone.so", [KERNEL_A])):
        sources = []
        for number, text in enumerate(kernels):
            sources.append(work / f"{name}-{number}.hip")
            sources[-1].write_text(text)
        command = ["hipcc", "-O1", *[f"--offload-arch={t}" for t in TARGETS], "-fPIC"]
        command += ["-shared", *map(str, sources), "-o", str(work / name)]
        subprocess.run(command, check=True, env={**os.environ, "HIP_PLATFORM": "amd"})
        made.append(work / name)
    return made


def _fat_files(work: Path) -> dict[str, Path]:
    """The fat files every input holds, by their path in the tree."""
    from fat_library import generate

    work.mkdir(parents=True)
    files = {f"lib/{p.name}": p for p in _hip_libraries(work)}
    files["lib/libfat.so.1"] = generate(work / "libfat.so.1", 24, bundles=8)
    return files


def _write_tree(top: Path, fat: dict[str, Path]) -> None:
    for relpath, path in fat.items():
        (top / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, top / relpath)
    (top / "lib/libfat.so").symlink_to("libfat.so.1")
    for arch in ("gfx90a", "gfx942"):
        tensile = top / f"lib/demo/library/TensileLibrary_{arch}.co"
        tensile.parent.mkdir(parents=True, exist_ok=True)
        tensile.write_bytes(arch.encode() * 1000)
    (top / "include/demo.h").parent.mkdir(parents=True)
    (top / "include/demo.h").write_text("int demo(void);\n")


def _wheel(path: Path, fat: dict[str, Path]) -> None:
    """A fat wheel of the fat files, with a RECORD (as tests/wheels/conftest.py's)."""
    members = [(f"demo_fat/{relpath}", 0o755, p.read_bytes()) for relpath, p in fat.items()]
    members += [
        ("demo_fat/__init__.py", 0o644, b""),
        (f"{DIST_INFO}/METADATA", 0o644, b"Metadata-Version: 2.1\nName: demo-fat\nVersion: 1.0\n"),
        (
            f"{DIST_INFO}/WHEEL",
            0o644,
            b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
        ),
    ]
    record = ""
    for name, _mode, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    members.append((f"{DIST_INFO}/RECORD", 0o644, f"{record}{DIST_INFO}/RECORD,,\n".encode()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, mode, data in members:
            info = zipfile.ZipInfo(name, (2024, 1, 2, 3, 4, 6))
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)


def make_inputs(inputs: Path) -> None:
    """The inputs (see the module docstring), made once: each run splits the same bytes."""
    if (inputs / "done").exists():
        return
    shutil.rmtree(inputs, ignore_errors=True)
    fat = _fat_files(inputs / "fat")
    therock = inputs / "therock"
    _write_tree(therock / FAT_DIR / PREFIX, fat)
    (therock / FAT_DIR / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    generic = therock / "base_run_generic/base/stage/bin/tool"
    generic.parent.mkdir(parents=True)
    generic.write_text("#!/bin/sh\n")
    (therock / "base_run_generic/artifact_manifest.txt").write_text("base/stage\n")
    (therock / "therock_manifest.json").write_text('{"flags": {"SOME_FLAG": true}}\n')
    _write_tree(inputs / "tree", fat)
    (inputs / "wheels").mkdir()
    _wheel(inputs / "wheels" / WHEEL_NAME, fat)
    generator = [sys.executable, str(ROOT / "examples/generate_artifacts.py")]
    subprocess.run(
        [*generator, str(inputs / "release"), "--scale", "0.05", "--single-arch", "gfx94X-dcgpu"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (inputs / "done").touch()


def record_of(out: Path) -> Record:
    """Every entry under ``out``: a file's mode and sha256, a symlink's target, a
    directory's mode; a wheel's members too, as ``<wheel>!<member>``."""
    record: Record = {}
    for directory, dirs, names in os.walk(out):
        for name in [*dirs, *names]:
            path = Path(directory) / name
            key = path.relative_to(out).as_posix()
            info = path.lstat()
            mode = oct(stat.S_IMODE(info.st_mode))
            if stat.S_ISLNK(info.st_mode):
                record[key] = f"-> {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                record[key] = f"dir {mode}"
            else:
                record[key] = f"{mode} {_sha256(path.read_bytes())}"
                if name.endswith(".whl"):
                    with zipfile.ZipFile(path) as archive:
                        for member in archive.infolist():
                            member_mode = oct(member.external_attr >> 16)
                            data = archive.read(member)
                            record[f"{key}!{member.filename}"] = f"{member_mode} {_sha256(data)}"
    return record


def split_all(src: Path, inputs: Path, wheel_dir: Path | None, scratch: Path) -> Record:
    """Every input split by the gfxpack of ``src``: the record of each output."""
    environment = {**os.environ, "PYTHONPATH": str(src.resolve())}
    runs = {
        "therock": ["split", str(inputs / "therock")],
        "release": ["split", str(inputs / "release")],
        "tree": ["split", str(inputs / "tree"), "--name", "demo_lib"],
        "wheels": ["split", str(inputs / "wheels")],
    }
    if wheel_dir is not None:
        runs["wheel-dir"] = ["split", str(wheel_dir)]
    record: Record = {}
    for name, command in runs.items():
        out = scratch / name
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "gfxpack", *command, "--out", str(out)],
            check=True,
            env=environment,
            stdout=subprocess.DEVNULL,
        )
        record.update({f"{name}/{k}": v for k, v in record_of(out).items()})
        shutil.rmtree(out)
    return record


def differences(first: Record, second: Record) -> list[str]:
    lines = [f"only in the first: {k}" for k in sorted(first.keys() - second.keys())]
    lines += [f"only in the second: {k}" for k in sorted(second.keys() - first.keys())]
    lines += [
        f"differs: {k}: {first[k]} / {second[k]}"
        for k in sorted(first.keys() & second.keys())
        if first[k] != second[k]
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, action="append", required=True)
    parser.add_argument("--inputs", type=Path, default=ROOT / "build/split-identity")
    parser.add_argument("--wheel-dir", type=Path, default=None)
    parser.add_argument("--save", type=Path, default=None, help="the first --src's record")
    parser.add_argument("--against", type=Path, default=None, help="a record --save wrote")
    args = parser.parse_args()
    make_inputs(args.inputs)
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        for src in args.src:
            records.append(split_all(src, args.inputs, args.wheel_dir, Path(scratch)))
            print(f"{src}: {len(records[-1])} entries")
    if args.save is not None:
        args.save.write_text(json.dumps(records[0], indent=1, sort_keys=True) + "\n")
    if args.against is not None:
        records.insert(0, json.loads(args.against.read_text()))
    if len(records) < 2:
        sys.exit("nothing compared: give two --src, or --against a saved record")
    for other in records[1:]:
        if lines := differences(records[0], other):
            print("\n".join(lines[:40]))
            sys.exit(f"{len(lines)} differences")
    print(f"identical: {len(records[0])} entries, every byte")


if __name__ == "__main__":
    main()
