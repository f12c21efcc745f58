"""Materialise a realistic TheRock artifacts tree for examples/package.json.

For every enabled base with an Artifactory, each (artifact, component) gets a
``<artifact>_<component>_generic/`` directory, and the components that carry
device code (lib and test) of gfxarch packages get
``<artifact>_<component>_<arch>/`` directories too, as TheRock's kpack split
leaves them: an ``artifact_manifest.txt`` of build-tree prefixes, and under
each prefix the staged files:

- lib: ``lib/lib<name>.so.<version>`` (ELF-like bytes) with the ``.so.<major>``
  symlink; per arch: ``.kpack/<artifact>_lib_<arch>.kpack`` (written with
  gfxpack's kpack writer) under the first sorted prefix, and per-arch
  database files (Tensile-style ``library/*_<arch>.co``) under each prefix;
- the kernel data of the families whose runtimes look it up by the device's
  processor (spec runtime-search.md), laid out as upstream installs it, per arch
  beside the rest: rocBLAS's and hipSPARSELt's flat Tensile ``library/`` (lazy
  libraries, ``Kernels.so-000-<arch>.hsaco``, xnack variants for rocBLAS) and
  hipBLASLt's ``library/<arch>/`` one, each with its ``TensileManifest.txt`` in the
  generic directory; MIOpen's ``share/miopen/db/<arch><CUs>.kdb`` (the compute-unit
  count glued on, hex above 64) with AOTriton's ``lib/aotriton.images/amd-<arch>/``
  beside it; rocFFT's ``lib/rocfft_kernel_cache_<arch>.db``;
- test: ``bin/<name>-test``; per arch: ``.kpack/<artifact>_test_<arch>.kpack``;
- run: ``bin/<tool>``; dev: headers, CMake config and the ``lib<name>.so``
  symlink; doc: ``share/doc/<name>/``; hidden files included.

amdrocm-dnn's hipDNN artifact carries a kernel provider made by
``gfxpack descriptors pack`` from ``examples/dnn-provider/`` (two engines: one
with a kpack shard per arch, one arch-independent): the arch-independent
descriptors go under ``hipdnn_lib_generic``, each arch's shard and archive
under ``hipdnn_lib_<arch>``, all at ``lib/hipdnn/arch_content/hip-kernel-provider/``.

One xnack variant directory (``blas_lib_gfx942:xnack+``) is added, one
gfxarch package (amdrocm-dnn) has no gfx950 build, and
``base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json``
sets KPACK_SPLIT_ARTIFACTS. The output depends only on the seed.

``gfxpack build`` on the tree makes the packages ``gfxpack plan --config CONFIG
--target TARGETS`` lists, with one difference, on purpose: amdrocm-dnn has no gfx950
build (a library that does not support a target yet), so there is no
``amdrocm-dnn<X.Y>-gfx950`` device package and the gfx950 metas depend on the
amdrocm-dnn host package instead (build warns about both); without gfx950 among the
targets there is none. For examples/package.json and TheRock's package.json that is
the only difference (tests/scenarios/test_generate_artifacts.py checks both). Another config
could show one more: a Gfxarch base whose gfxarch artifacts list no lib or test
component gets no per-arch directories, so build makes it a non-gfxarch package.

With ``--single-arch FAMILY`` the tree is a single-arch (legacy) build's
instead: all of a gfxarch package's content in ``<artifact>_<component>_<FAMILY>/``
(e.g. ``blas_lib_gfx94X-dcgpu``), the rest generic, and no kpack split; the
families' kernel data of every target (``--targets``) lies there side by side, as
a fat build installs it, for ``gfxpack split`` to route.

    python examples/generate_artifacts.py OUT [--config examples/package.json]
        [--targets gfx1100,gfx942,gfx950] [--scale 1.0] [--single-arch gfx94X-dcgpu]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from gfxpack.amdgpu import MACH
from gfxpack.config import load_config
from gfxpack.descriptors.code_object_sources import CodeObjectFiles
from gfxpack.descriptors.kernel_list import KernelList, read_kernel_list
from gfxpack.descriptors.pack import pack
from gfxpack.kpack import write_kpack

HERE = Path(__file__).resolve().parent
CATEGORY = {  # artifact -> build-tree directory, as TheRock lays them out
    "blas": "math-libs/BLAS",
    "hipblasltprovider": "math-libs/BLAS",
    "solver": "math-libs/solver",
    "sparse": "math-libs/sparse",
    "fft": "math-libs/fft",
    "rand": "math-libs/rand",
    "miopen": "ml-libs",
    "hipdnn": "ml-libs",
    "core-runtime": "core",
    "core-hip": "core",
    "core-ocl": "core",
    "amd-llvm": "compiler",
    "hipify": "compiler",
    "base": "base",
    "amdsmi": "core",
    "rocprofiler-sdk": "profiler",
    "aqlprofile": "profiler",
    "rocprofiler-compute": "profiler",
    "rocprofiler-systems": "profiler",
}
ELF_IDENT = b"\x7fELF\x02\x01\x01" + bytes(9)  # 64-bit, little-endian, version 1
EM_AMDGPU = 224
NO_BUILD = {("amdrocm-dnn", "gfx950")}  # a target a library does not support yet
# The components holding device code: TheRock's kpack split leaves per-arch directories
# for these (libraries and test programs), none for run, dev or doc.
DEVICE_COMPONENTS = ("lib", "test")
XNACK = ("blas", "gfx942:xnack+")
PROVIDER = HERE / "dnn-provider"  # authored descriptors and the kernel list
PROVIDER_ARTIFACT = "hipdnn"
PROVIDER_DIR = "lib/hipdnn/arch_content/hip-kernel-provider"
# The compute-unit counts MIOpen's kernel databases carry per processor (the products'
# counts: MI250X 110, MI300X 304, MI300A 228, MI355X 256, RX 7900 XTX 96, RX 9070 XT
# 64); spelled as MIOpen's GetDbBasename does: hex glued on above 64, "_<n>" up to it.
MIOPEN_CUS = {
    "gfx90a": (110, 104),
    "gfx942": (304, 228),
    "gfx950": (256,),
    "gfx1100": (96, 48),
    "gfx1151": (40,),
    "gfx1201": (64,),
}
AOTRITON_GPU = {"gfx90a": "MI200", "gfx942": "MI300X", "gfx950": "MI355X", "gfx1100": "RX7900"}
SQLITE_HEADER = b"SQLite format 3\x00"  # rocFFT's kernel cache is an SQLite database


class Payload:
    """ELF-like bytes that compress the way libraries do: a skewed byte alphabet
    (code and tables use few values often), 4 KiB blocks that repeat recent ones
    with small changes (inlined code, unrolled loops), and zero padding; nothing
    repeats across files, so a compressor's window size does not flatter it."""

    BLOCK = 4096

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        common = self.rng.sample(range(256), 48)
        weights = [40 if value == 0 else 1 for value in range(256)]
        for rank, value in enumerate(common):
            weights[value] += 48 - rank
        self.table = bytes(self.rng.choices(range(256), weights, k=256))

    def elf(self, size: int, machine: int = 62) -> bytes:
        """A well-formed ELF64 header (no segments, no sections) and ``size`` bytes in all;
        machine 62 is x86-64, 224 AMDGPU."""
        header = ELF_IDENT + struct.pack(
            "<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0
        )
        blocks: list[bytes] = []
        length = len(header)
        while length < size:
            roll = self.rng.random()
            if roll < 0.3 and blocks:
                recent = self.rng.choice(blocks[-16:])
                block = self.rng.randbytes(16).translate(self.table) + recent[16:]
            elif roll < 0.4:
                block = bytes(self.BLOCK)
            else:
                block = self.rng.randbytes(self.BLOCK).translate(self.table)
            blocks.append(block)
            length += len(block)
        return (header + b"".join(blocks))[:size]


def library_name(subdir: str) -> str:
    return "".join(ch for ch in subdir.lower() if ch.isalnum())


def prefix_of(artifact: str, subdir: str) -> str:
    # Never the artifact name itself: a subdir named like it would select every line.
    return f"{CATEGORY.get(artifact, 'projects')}/{subdir}/stage"


def write_generic(
    root: Path, prefix: str, component: str, subdir: str, payload: Payload, scale: float
) -> None:
    name = library_name(subdir)
    stage = root / prefix
    if component == "lib":
        lib = stage / "lib"
        lib.mkdir(parents=True, exist_ok=True)
        real = f"lib{name}.so.1.4.0"
        (lib / real).write_bytes(payload.elf(int(payload.rng.randint(200, 1500) * 1024 * scale)))
        (lib / f"lib{name}.so.1").symlink_to(real)
    elif component == "run":
        bin_dir = stage / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        tool = bin_dir / f"{name}-info"
        tool.write_bytes(payload.elf(int(64 * 1024 * scale)))
        tool.chmod(0o755)
    elif component == "dev":
        include = stage / "include" / name
        include.mkdir(parents=True, exist_ok=True)
        (include / f"{name}.h").write_text(f"#pragma once\nint {name}_version(void);\n")
        cmake = stage / "lib" / "cmake" / name
        cmake.mkdir(parents=True, exist_ok=True)
        (cmake / f"{name}-config.cmake").write_text(f"add_library(roc::{name} SHARED IMPORTED)\n")
        (stage / "lib" / f"lib{name}.so").symlink_to(f"lib{name}.so.1")
    elif component == "doc":
        doc = stage / "share" / "doc" / name
        doc.mkdir(parents=True, exist_ok=True)
        (doc / "README.md").write_text(f"# {subdir}\n\nPart of the gfxpack example release.\n")
        (doc / ".buildinfo").write_text("hidden files are packaged too\n")
    elif component == "test":
        tests = stage / "bin"
        tests.mkdir(parents=True, exist_ok=True)
        (tests / f"{name}-test").write_bytes(payload.elf(int(32 * 1024 * scale)))


def kernel_data(library: str, arch: str) -> list[str]:
    """The files (relative to the prefix) through which ``library``'s runtime finds its
    kernel data for ``arch``, by upstream's names; ``arch`` a target id, whose features
    file names spell after ``-`` (``Kernels.so-000-gfx942-xnack+.hsaco``)."""
    processor, spelled = arch.split(":")[0], arch.replace(":", "-")
    if library == "rocblas":  # flat library/: lazy-loaded Tensile, and source kernels
        kernels = [f"lib/rocblas/library/Kernels.so-000-{spelled}.hsaco"]
        if processor != arch:  # an xnack variant: only its source kernels differ
            return kernels
        return [
            f"lib/rocblas/library/TensileLibrary_lazy_{processor}.dat",
            f"lib/rocblas/library/TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_{processor}.co",
            *kernels,
        ]
    if processor != arch:  # the example's xnack variant carries rocBLAS's kernels only
        return []
    if library == "hipsparselt":
        return [f"lib/hipsparselt/library/TensileLibrary_lazy_{processor}.dat"]
    if library == "hipblaslt":  # the library/<arch>/ layout (rocm-libraries#5976)
        return [
            f"lib/hipblaslt/library/{processor}/TensileLibrary_lazy_{processor}.dat",
            f"lib/hipblaslt/library/{processor}/TensileLibrary_Type_HH_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_{processor}.co",
            f"lib/hipblaslt/library/{processor}/extop_{processor}.co",
        ]
    if library == "miopen":  # AOTriton's images come with it: neither config lists AOTriton
        names = [
            f"{processor}{cus:x}" if cus > 64 else f"{processor}_{cus}"
            for cus in MIOPEN_CUS.get(processor, (32,))
        ]
        gpu = AOTRITON_GPU.get(processor, processor.upper())
        return [
            *(f"share/miopen/db/{name}.{ext}" for name in names for ext in ("kdb", "HIP.fdb.txt")),
            f"lib/aotriton.images/amd-{processor}/flash/attn_fwd/FONLY__^bf16@16___{gpu}.aks2",
        ]
    if library == "rocfft":  # one cache per arch beside librocfft.so (rocFFT 1.0.37)
        return [f"lib/rocfft_kernel_cache_{processor}.db"]
    return []


def tensile_manifest(library: str, prefix: str, arches: list[str]) -> str | None:
    """``library/TensileManifest.txt``: the Tensile build's list of the files it wrote,
    as paths of its build tree; where they lie tells the layout the runtime searches."""
    listed = [f"{prefix}/{path}\n" for arch in arches for path in kernel_data(library, arch)]
    tensile = ("rocblas", "hipsparselt", "hipblaslt")
    return "".join(sorted(listed)) if library in tensile and listed else None


def write_kernel_data(stage: Path, subdir: str, arch: str, payload: Payload, scale: float) -> None:
    for relative in kernel_data(library_name(subdir), arch):
        path = stage / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        size = int(payload.rng.randint(8, 64) * 1024 * scale)
        if path.suffix in (".co", ".hsaco"):
            path.write_bytes(payload.elf(size, EM_AMDGPU))
        elif path.suffix == ".db":
            path.write_bytes(SQLITE_HEADER + payload.rng.randbytes(size))
        else:  # .dat, .kdb, .txt, .aks2: opaque to gfxpack
            path.write_bytes(payload.rng.randbytes(size))


def write_manifest(stage: Path, subdir: str, prefix: str, arches: list[str]) -> None:
    """A Tensile library's ``TensileManifest.txt``, shared by every arch (generic)."""
    name = library_name(subdir)
    text = tensile_manifest(name, prefix, arches)
    if text is not None:
        library = stage / "lib" / name / "library"
        library.mkdir(parents=True, exist_ok=True)
        (library / "TensileManifest.txt").write_text(text)


def write_arch(
    root: Path,
    directory: str,
    prefixes: list[str],
    subdirs: list[str],
    arch: str,
    payload: Payload,
    scale: float,
    data: Payload,
) -> None:
    component = directory.split("_")[1]
    if component == "lib":
        for prefix, subdir in zip(prefixes, subdirs, strict=True):
            write_kernel_data(root / prefix, subdir, arch, data, scale)
            if library_name(subdir) == "hipblaslt":
                continue  # its Tensile files are in library/<arch>/ (kernel_data)
            library = root / prefix / "lib" / library_name(subdir) / "library"
            library.mkdir(parents=True, exist_ok=True)
            size = int(payload.rng.randint(100, 600) * 1024 * scale)
            code_object = payload.elf(size, EM_AMDGPU)
            (library / f"TensileLibrary_{arch.replace(':', '-')}.co").write_bytes(code_object)
    # Fat-binary code objects of the whole artifact, in one kpack under the first prefix:
    # the libraries' (lib) or the test programs' (test), named as write_generic names them.
    first = sorted(prefixes)[0]
    binary = "lib/lib{}.so.1.4.0" if component == "lib" else "bin/{}-test"
    kernels = [
        (
            f"{prefix}/{binary.format(library_name(subdir))}#{i}",
            payload.elf(int(payload.rng.randint(16, 256) * 1024 * scale)),
        )
        for prefix, subdir in zip(prefixes, subdirs, strict=True)
        for i in range(2)
    ]
    kpack_dir = root / first / ".kpack"
    kpack_dir.mkdir(parents=True, exist_ok=True)
    write_kpack(
        kpack_dir / f"{directory}.kpack",
        kernels,
        group=directory.rsplit("_", 1)[0],
        arch=arch.split(":")[0],
    )


def as_code_object(elf: bytes, arch: str) -> bytes:
    """A Payload.elf with the header of an AMDGPU code object for ``arch``: HSA OS/ABI,
    code object v5 and the processor's EF_AMDGPU_MACH in e_flags, as ``descriptors
    pack`` checks every code object it packs."""
    code = bytearray(elf)
    code[7], code[8] = 64, 3  # EI_OSABI: ELFOSABI_AMDGPU_HSA; EI_ABIVERSION: v5
    struct.pack_into("<I", code, 48, MACH[arch.split(":")[0]])  # e_flags
    return bytes(code)


def write_provider(
    out: Path, directories: dict[str, list[tuple[str, str]]], arches: list[str], seed: int
) -> None:
    """The hipDNN kernel provider, packed by gfxpack descriptors pack: the kernel list's
    kernels built (as seeded stand-in code objects) for every arch the artifact has."""
    listed = read_kernel_list(PROVIDER / "kernels.json")
    kernels = tuple(dataclasses.replace(kernel, arch=tuple(arches)) for kernel in listed.kernels)
    payload = Payload(seed + 1)  # its own stream: the rest of the tree does not change
    with tempfile.TemporaryDirectory() as scratch:
        built = Path(scratch) / "code-objects"
        for kernel in kernels:
            for arch in arches:
                path = built / arch / f"{kernel.toc_key}.hsaco"
                path.parent.mkdir(parents=True, exist_ok=True)
                code = payload.elf(payload.rng.randint(8, 32) * 1024, EM_AMDGPU)
                path.write_bytes(as_code_object(code, arch))
        tree = Path(scratch) / "arch_content"
        pack(
            PROVIDER / "descriptors",
            KernelList(listed.path, listed.group, kernels),
            CodeObjectFiles(built),
            tree,
        )
        # The arch-independent part goes to the host artifact, each <arch>/ to its own.
        prefix = directories[f"{PROVIDER_ARTIFACT}_lib_generic"][0][0]
        for item in sorted(tree.iterdir()):
            directory = item.name if item.name in arches else "generic"
            destination = out / f"{PROVIDER_ARTIFACT}_lib_{directory}" / prefix / PROVIDER_DIR
            destination.mkdir(parents=True, exist_ok=True)
            shutil.move(item, destination / item.name)


def generate(
    out: Path,
    config_path: Path,
    targets: list[str],
    scale: float,
    seed: int,
    family: str | None = None,
    arch_scale: float = 1.0,
) -> int:
    """Write the tree; with ``family`` (``gfx94X-dcgpu``) a single-arch (legacy) build's:
    every component of a gfxarch package in ``<artifact>_<component>_<family>/``,
    no per-arch split and no KPACK_SPLIT_ARTIFACTS. ``arch_scale`` multiplies the
    per-arch files' sizes once more (device code outweighs host code in a real release)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    payload = Payload(seed)
    data = Payload(seed + 2)  # the kernel data's own stream, as the provider has its own
    config = load_config(config_path)
    directories: dict[str, list[tuple[str, str]]] = {}  # directory -> [(prefix, subdir)]
    owners: dict[str, str] = {}  # library name -> the artifact that stages it
    for spec in config.packages:
        if spec.disabled or spec.metapackage:
            continue
        for source in spec.artifactory:
            for subdir in source.subdirs:
                prefix = prefix_of(source.artifact, subdir.name)
                # Two artifacts listing one subdir (TheRock's rocprofiler-sdk and aqlprofile
                # both list aqlprofile) would stage the same file names: qualify the later.
                owner = owners.setdefault(library_name(subdir.name), source.artifact)
                label = (
                    subdir.name if owner == source.artifact else f"{source.artifact}-{subdir.name}"
                )
                gfxarch = spec.gfxarch and source.gfxarch and not spec.is_devel
                for component in subdir.components:
                    where = family if family and gfxarch else "generic"
                    directory = f"{source.artifact}_{component}_{where}"
                    directories.setdefault(directory, []).append((prefix, label))
                    write_generic(out / directory, prefix, component, label, payload, scale)
                    arches = [t for t in targets if (spec.name, t) not in NO_BUILD]
                    if source.artifact == XNACK[0]:
                        arches.append(XNACK[1])
                    if gfxarch and component == "lib":
                        stage = out / directory / prefix
                        write_manifest(stage, label, prefix, arches)
                        for arch in arches if family else []:  # a fat build's data, side by side
                            write_kernel_data(stage, label, arch, data, scale * arch_scale)
                    if family or not (gfxarch and component in DEVICE_COMPONENTS):
                        continue
                    for arch in arches:
                        name = f"{source.artifact}_{component}_{arch}"
                        directories.setdefault(name, []).append((prefix, label))
    for directory, members in directories.items():
        if not directory.endswith(("_generic", f"_{family}")):
            prefixes = [p for p, _ in members]
            write_arch(
                out / directory,
                directory,
                prefixes,
                [s for _, s in members],
                directory.rsplit("_", 1)[1],
                payload,
                scale * arch_scale,
                data,
            )
        manifest = "".join(f"{prefix}\n" for prefix in sorted({p for p, _ in members}))
        (out / directory / "artifact_manifest.txt").write_text(manifest)
    provider_arches = [
        d.rsplit("_", 1)[1]
        for d in directories
        if d.startswith(f"{PROVIDER_ARTIFACT}_lib_") and not d.endswith("_generic")
    ]
    if provider_arches and not family:  # a single-arch tree has no per-arch shards to pack
        write_provider(out, directories, sorted(provider_arches), seed)
    therock = out / "base_lib_generic/base/aux-overlay/stage/share/therock"
    therock.mkdir(parents=True, exist_ok=True)
    (therock / "therock_manifest.json").write_text(
        json.dumps(
            {
                "flags": {"KPACK_SPLIT_ARTIFACTS": family is None},
                "targets": [family] if family else targets,
            },
            indent=2,
        )
        + "\n"
    )
    return len(directories)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--config", type=Path, default=HERE / "package.json")
    parser.add_argument("--targets", default="gfx1100,gfx942,gfx950")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every file size")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--single-arch",
        metavar="FAMILY",
        help="a single-arch (legacy) tree for one family, e.g. gfx94X-dcgpu",
    )
    args = parser.parse_args(argv)
    count = generate(
        args.out, args.config, args.targets.split(","), args.scale, args.seed, args.single_arch
    )
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file() and not p.is_symlink())
    print(
        f"wrote {count} artifact directories, {size / 2**20:.1f} MiB, to {args.out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
