"""probe, family by family: a root where the data is found, one where it is missing,
one where only another arch's file is there, and one where this arch's file is at a
path the runtime does not search; each gives its line and exit code.

Names are the libraries' real ones (see tests/test_file_arch.py); the roots are
built file by file under opt/rocm, as a package manager installs them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.doc_commands import doc_block, gfxpack_shell
from tests.probe.roots import probe, touch

R = "opt/rocm"
ROCBLAS = f"{R}/lib/rocblas/library"
HIPBLASLT = f"{R}/lib/hipblaslt/library"
DEBIAN_ROCBLAS = "usr/lib/x86_64-linux-gnu/rocblas/2.47.0/library"
DB = f"{R}/share/miopen/db"
IMAGES = f"{R}/lib/aotriton.images"
HERE = Path(__file__).resolve().parents[2]
EXAMPLE_DESCRIPTORS = HERE / "examples" / "descriptors"
PROVIDER = f"{R}/lib/hipdnn/arch_content/example"
FLAT = "rule assumed: no TensileManifest.txt: library/ searched flat"


def tensile(root: Path, *names: str, owner: str = ROCBLAS, manifest: str | None = None) -> None:
    touch(root, f"{owner}/TensileLibrary.dat", *(f"{owner}/{n}" for n in names))
    if manifest is not None:
        (root / owner / "TensileManifest.txt").write_text(manifest)


def provider(root: Path, *arches: str) -> None:
    """The example hipDNN provider (conv_fwd for any arch, pointwise per arch) with the
    given arch shards installed."""
    target = root / PROVIDER
    shutil.copytree(EXAMPLE_DESCRIPTORS, target, ignore=shutil.ignore_patterns("gfx*"))
    for arch in arches:
        shutil.copytree(EXAMPLE_DESCRIPTORS / arch, target / arch)


# (family, build the root, the first line, exit code): one row per case.
Case = tuple[str, Callable[[Path], None], str, int]
CASES: list[Case] = [
    # rocBLAS (Tensile): flat library/
    ("tensile-found",
     lambda r: tensile(r, "TensileLibrary_lazy_gfx942.dat", "Kernels.so-000-gfx942.hsaco"),
     f"found    {ROCBLAS} (rocBLAS Tensile): gfx942: {ROCBLAS}/Kernels.so-000-gfx942.hsaco; "
     f"{FLAT}", 0),
    ("tensile-missing", lambda r: tensile(r),
     f"missing  {ROCBLAS} (rocBLAS Tensile): gfx942: looks for TensileLibrary_*_gfx942."
     f"{{dat,co,hsaco}} (or _lazy_gfx942.dat) in {ROCBLAS}/; {FLAT}", 1),
    ("tensile-other-arch", lambda r: tensile(r, "TensileLibrary_lazy_gfx90a.dat"),
     f"shadowed {ROCBLAS} (rocBLAS Tensile): gfx942: {ROCBLAS}/TensileLibrary_lazy_gfx90a.dat: "
     "only other arches' files where gfx942's should be (gfx90a; it looks for", 1),
    # Debian's librocblas0 (5.5.1) installs library/ under rocBLAS's version.
    ("tensile-debian-versioned",
     lambda r: tensile(r, "TensileLibrary_gfx942.co", owner=DEBIAN_ROCBLAS),
     f"found    {DEBIAN_ROCBLAS} (rocBLAS Tensile): gfx942: {DEBIAN_ROCBLAS}/"
     f"TensileLibrary_gfx942.co; {FLAT}", 0),
    # hipBLASLt's library/<arch>/ layout under a runtime that searches library/ flat
    # (TheRock#7976): its build's manifest lists the flat layout.
    ("tensile-not-searched",
     lambda r: tensile(r, "gfx942/TensileLibrary_lazy_gfx942.dat", owner=HIPBLASLT,
                       manifest="/build/lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat\n"),
     f"shadowed {HIPBLASLT} (hipBLASLt Tensile): gfx942: "
     f"{HIPBLASLT}/gfx942/TensileLibrary_lazy_gfx942.dat: the runtime does not search there "
     f"(it looks for TensileLibrary_*_gfx942.{{dat,co,hsaco}} (or _lazy_gfx942.dat) in "
     f"{HIPBLASLT}/)", 1),
    # ... and found there under a runtime built with that layout (its manifest lists it).
    ("tensile-arch-layout",
     lambda r: tensile(r, "gfx942/TensileLibrary_lazy_gfx942.dat", owner=HIPBLASLT,
                       manifest="/build/lib/hipblaslt/library/gfx942/TensileLibrary_lazy_gfx942.dat\n"),
     f"found    {HIPBLASLT} (hipBLASLt Tensile): gfx942: "
     f"{HIPBLASLT}/gfx942/TensileLibrary_lazy_gfx942.dat", 0),
    # MIOpen: db/<arch><CUs>.kdb
    ("miopen-found", lambda r: touch(r, f"{DB}/gfx942130.kdb"),
     f"found    {DB} (MIOpen): gfx942: {DB}/gfx942130.kdb; rule assumed: any compute-unit", 0),
    ("miopen-missing", lambda r: (r / DB).mkdir(parents=True),
     f"missing  {DB} (MIOpen): gfx942: looks for gfx942[_<CUs>].kdb in {DB}/; rule assumed:", 1),
    ("miopen-other-arch", lambda r: touch(r, f"{DB}/gfx90a6e.kdb"),
     f"shadowed {DB} (MIOpen): gfx942: {DB}/gfx90a6e.kdb: only other arches' files where "
     "gfx942's should be (gfx90a;", 1),
    ("miopen-not-searched", lambda r: touch(r, f"{DB}/gfx90a6e.kdb", f"{DB}/gfx942/gfx942130.kdb"),
     f"shadowed {DB} (MIOpen): gfx942: {DB}/gfx942/gfx942130.kdb: the runtime does not search "
     f"there (it looks for gfx942[_<CUs>].kdb in {DB}/)", 1),
    ("miopen-ck-found", lambda r: touch(r, f"{R}/lib/libMIOpenCKGroupedConv_gfx942.so.1"),
     f"found    {R}/lib/libMIOpenCK* (MIOpen): gfx942: {R}/lib/libMIOpenCKGroupedConv_gfx942.so.1",
     0),
    ("miopen-ck-other-arch", lambda r: touch(r, f"{R}/lib/libMIOpenCKGroupedConv_gfx950.so.1"),
     f"shadowed {R}/lib/libMIOpenCK* (MIOpen): gfx942: {R}/lib/libMIOpenCKGroupedConv_gfx950.so.1:"
     " only other arches' files", 1),
    # rocFFT: rocfft_kernel_cache_<arch>.db beside librocfft.so
    ("rocfft-found",
     lambda r: touch(r, f"{R}/lib/librocfft.so.0", f"{R}/lib/rocfft_kernel_cache_gfx942.db"),
     f"found    {R}/lib/librocfft.so.0 (rocFFT): gfx942: {R}/lib/rocfft_kernel_cache_gfx942.db", 0),
    ("rocfft-missing", lambda r: touch(r, f"{R}/lib/librocfft.so.0"),
     f"missing  {R}/lib/librocfft.so.0 (rocFFT): gfx942: looks for "
     f"rocfft_kernel_cache_gfx942.db (without it rocFFT compiles each kernel at first use) "
     f"in {R}/lib/", 1),
    ("rocfft-other-arch",
     lambda r: touch(r, f"{R}/lib/librocfft.so.0", f"{R}/lib/rocfft_kernel_cache_gfx1201.db"),
     f"shadowed {R}/lib/librocfft.so.0 (rocFFT): gfx942: {R}/lib/rocfft_kernel_cache_gfx1201.db: "
     "only other arches' files where gfx942's should be (gfx1201;", 1),
    ("rocfft-not-searched",
     lambda r: touch(r, f"{R}/lib/librocfft.so.0", f"{R}/lib/rocfft/rocfft_kernel_cache_gfx942.db"),
     f"shadowed {R}/lib/librocfft.so.0 (rocFFT): gfx942: "
     f"{R}/lib/rocfft/rocfft_kernel_cache_gfx942.db: the runtime does not search there", 1),
    # AOTriton: aotriton.images/amd-<arch>/
    ("aotriton-found", lambda r: touch(r, f"{IMAGES}/amd-gfx942/flash/attn_fwd/a.aks2"),
     f"found    {IMAGES} (AOTriton): gfx942: {IMAGES}/amd-gfx942/flash/attn_fwd/a.aks2", 0),
    ("aotriton-missing", lambda r: (r / IMAGES).mkdir(parents=True),
     f"missing  {IMAGES} (AOTriton): gfx942: looks for files in {IMAGES}/amd-gfx942/", 1),
    ("aotriton-other-arch", lambda r: touch(r, f"{IMAGES}/amd-gfx950/flash/a.aks2"),
     f"shadowed {IMAGES} (AOTriton): gfx942: {IMAGES}/amd-gfx950: only other arches' images "
     "where gfx942's should be (gfx950;", 1),
    ("aotriton-not-searched", lambda r: touch(r, f"{IMAGES}/gfx942/flash/a.aks2"),
     f"shadowed {IMAGES} (AOTriton): gfx942: {IMAGES}/gfx942/flash/a.aks2: the runtime does not "
     f"search there (it looks for files in {IMAGES}/amd-gfx942/)", 1),
    # hipDNN providers: arch_content/<provider>/<arch>/
    ("hipdnn-found", lambda r: provider(r, "gfx942"),
     f"found    {PROVIDER} (hipDNN): gfx942: gfxpack:ConvFwd (any arch), gfxpack:Pointwise "
     f"({PROVIDER}/gfx942/)", 0),
    ("hipdnn-missing", lambda r: provider(r),
     f"missing  {PROVIDER} (hipDNN): gfx942: gfxpack:Pointwise: not loaded or no kernel;", 1),
    ("hipdnn-other-arch", lambda r: provider(r, "gfx950"),
     f"shadowed {PROVIDER} (hipDNN): gfx942: only other arches' kernels: gfxpack:Pointwise "
     "(packs for gfx950 only);", 1),
]  # fmt: skip


@pytest.mark.parametrize(("name", "build", "line", "code"), CASES, ids=[c[0] for c in CASES])
def test_each_case_gives_its_line_and_exit_code(
    name: str, build: Callable[[Path], None], line: str, code: int, tmp_path: Path
) -> None:
    build(tmp_path)
    result = probe(tmp_path, "gfx942")
    assert result.exit_code == code, [*result.lines, result.stderr]
    assert result.lines[0].startswith(line), result.lines[0]
    assert len(result.lines) == 2  # the library's line and the summary
    assert (result.stderr == "") is (code == 0)


def test_hipdnn_shard_installed_as_a_provider_is_not_searched(tmp_path: Path) -> None:
    provider(tmp_path, "gfx950")
    shutil.copytree(
        EXAMPLE_DESCRIPTORS / "gfx942", tmp_path / f"{R}/lib/hipdnn/arch_content/gfx942"
    )
    result = probe(tmp_path, "gfx942")
    assert result.exit_code == 1
    stray = f"{R}/lib/hipdnn/arch_content/gfx942"
    assert (
        f"shadowed {stray} (hipDNN): gfx942: {stray}: a shard installed as a provider"
        in (result.lines)[1]
    )


def test_an_aotriton_family_directory_covers_its_processors_as_an_assumed_rule(
    tmp_path: Path,
) -> None:
    touch(tmp_path, f"{IMAGES}/amd-gfx11xx/flash/a.aks2")
    found = probe(tmp_path, "gfx1100")
    assert found.exit_code == 0
    assert found.lines[0].endswith(
        "; rule assumed: amd-gfx11xx is read as covering gfx1100 (AOTriton's family directories)"
    )
    assert probe(tmp_path, "gfx942").exit_code == 1


def test_nothing_probed_is_a_failure(tmp_path: Path) -> None:
    touch(tmp_path, "usr/share/doc/readme.txt", f"{R}/lib/libplain.so")
    result = probe(tmp_path, "gfx942")
    assert result.exit_code == 1 and result.lines == []
    assert result.stderr.startswith(f"error: {tmp_path}: nothing probed: no library of any family")


def test_json_carries_each_finding_with_its_rule_and_source(tmp_path: Path) -> None:
    touch(tmp_path, f"{R}/lib/librocfft.so.0", f"{R}/lib/rocfft_kernel_cache_gfx942.db")
    tensile(tmp_path, "TensileLibrary_lazy_gfx90a.dat")
    args = ["probe", "--root", str(tmp_path), "--device", "gfx942", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is False and "1 of 2 check(s)" in document["error"]
    by_family = {f["family"]: f for f in document["findings"]}
    assert by_family["rocfft"]["status"] == "found"
    assert by_family["tensile"]["status"] == "shadowed"
    assert by_family["tensile"]["assumed"].startswith("no TensileManifest.txt")
    assert "TheRock#7976" in by_family["tensile"]["source"]
    assert set(document["rules"]) == {"kpack", "tensile", "miopen", "rocfft", "aotriton", "hipdnn"}
    assert all(rule["source"] for rule in document["rules"].values())


def test_every_device_gets_its_own_line(tmp_path: Path) -> None:
    tensile(tmp_path, "TensileLibrary_lazy_gfx942.dat", "TensileLibrary_lazy_gfx1100.dat")
    result = probe(tmp_path, "gfx942", "gfx1100", "gfx950")
    assert [line.split(":")[1].strip() for line in result.lines[:3]] == [
        "gfx942",
        "gfx1100",
        "gfx950",
    ]
    assert [line.split()[0] for line in result.lines[:3]] == ["found", "found", "shadowed"]
    assert result.exit_code == 1


def test_device_auto_reads_the_kernel_drivers_topology(tmp_path: Path) -> None:
    sysfs = tmp_path / "sysfs"
    node = sysfs / "sys/class/kfd/kfd/topology/nodes/1"
    node.mkdir(parents=True)
    (node / "properties").write_text("simd_count 304\ngfx_target_version 90402\n")
    root = tmp_path / "root"
    tensile(root, "TensileLibrary_lazy_gfx942.dat")
    args = ["probe", "--root", str(root), "--device", "auto", "--sysfs", str(sysfs)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(
        f"found    {ROCBLAS} (rocBLAS Tensile): gfx942:"
    )
    empty = CliRunner().invoke(cli, [*args[:-1], str(tmp_path / "none")])
    assert empty.exit_code == 1 and empty.stderr.startswith("error: --device auto: no AMD GPU")


@pytest.mark.parametrize("device", ["gfx94X-dcgpu", "gfx9-4-generic", "gfx9420", "gfx942:foo+"])
def test_a_device_that_is_not_one_processor_is_one_error(tmp_path: Path, device: str) -> None:
    tensile(tmp_path, "TensileLibrary_lazy_gfx942.dat")
    result = probe(tmp_path, device)
    assert result.exit_code == 1 and result.lines == []
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --device '{device}'")


def test_the_guides_example_prints_what_it_shows(tmp_path: Path) -> None:
    heading = "#### Reading probe's lines"
    result = gfxpack_shell(tmp_path, doc_block("guides/release-engineer.md", heading))
    assert result.returncode == 0, result.stderr
    text = (HERE / "docs/guides/release-engineer.md").read_text(encoding="utf-8")
    shown = text[text.index(heading) :].split("```text\n", 1)[1].split("```", 1)[0]
    assert result.stdout == shown
