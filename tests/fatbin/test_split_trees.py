"""Both kinds of input, the packaging round trip, and the command line."""

from __future__ import annotations

import filecmp
import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import msgpack
import pytest
from click.testing import CliRunner

from gfxpack.artifacts import scan
from gfxpack.cli import cli
from gfxpack.fatbin import rewrite
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.resolve import ArchNotFound, read_references, resolve
from gfxpack.fatbin.split import split_tree
from gfxpack.file_arch import file_arch
from gfxpack.kpack import KpackReader, KpackWriter
from tests.fatbin.conftest import TARGETS, HipBuild
from tests.fatbin.test_bundle import ccob

CONFIG = Path(__file__).parent / "package.json"
PREFIX = "hip/demo/stage"


def _same_tree(left: Path, right: Path) -> None:
    compared = filecmp.dircmp(left, right)
    assert not (compared.left_only or compared.right_only or compared.diff_files), compared.report()
    for name in compared.common_files:
        assert (left / name).read_bytes() == (right / name).read_bytes()
    for name in compared.common_dirs:
        _same_tree(left / name, right / name)


@pytest.fixture
def therock(hip_build: HipBuild, tmp_path: Path) -> Path:
    root = tmp_path / "artifacts"
    fat = root / "demo_lib_gfx9X-all"
    (fat / PREFIX / "lib").mkdir(parents=True)
    (fat / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    shutil.copy2(hip_build.two_files, fat / PREFIX / "lib" / "libtwo.so.1")
    (fat / PREFIX / "lib" / "libtwo.so").symlink_to("libtwo.so.1")
    (fat / PREFIX / "lib" / "library").mkdir()
    (fat / PREFIX / "lib" / "library" / "TensileLibrary_gfx90a.co").write_bytes(b"gfx90a data")
    (fat / PREFIX / "lib" / "library" / "TensileLibrary.dat").write_bytes(b"shared index")
    (fat / PREFIX / "lib" / "library" / "gfx1030").mkdir()
    (fat / PREFIX / "lib" / "library" / "gfx1030" / "kernels.dat").write_bytes(b"gfx1030 data")
    dev = root / "demo_dev_generic"
    (dev / PREFIX / "include").mkdir(parents=True)
    (dev / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    (dev / PREFIX / "include" / "demo.h").write_text("int a_answer(void);\n")
    return root


@pytest.mark.slow
def test_therock_artifacts_become_the_kpack_split_layout(therock: Path, tmp_path: Path):
    out = tmp_path / "out"
    report = split_tree(therock, out)
    assert report.binaries == 1 and report.host_bytes < report.fat_bytes
    tree = scan(out)
    assert tree.kpack_split
    assert set(tree.directories) == {
        "demo_dev_generic", "demo_lib_generic", "demo_lib_gfx1030", "demo_lib_gfx906",
        "demo_lib_gfx90a",
    }  # fmt: skip
    host = out / "demo_lib_generic" / PREFIX / "lib" / "libtwo.so.1"
    assert [ref.kernel_name for _, ref in read_references(host)] == [
        f"{PREFIX}/lib/libtwo.so.1"
    ] * 2
    assert read_references(host)[0][1].search_paths == ["../.kpack/demo_lib_@GFXARCH@.kpack"]
    archive = out / "demo_lib_gfx906" / PREFIX / ".kpack" / "demo_lib_gfx906.kpack"
    with KpackReader.open(archive) as reader:
        assert reader.group == "demo_lib" and reader.arches == ["gfx906:xnack-"]
        assert sorted(k.toc_key for k in reader.kernels) == [
            f"{PREFIX}/lib/libtwo.so.1#0", f"{PREFIX}/lib/libtwo.so.1#1",
        ]  # fmt: skip
    moved = out / "demo_lib_gfx90a" / PREFIX / "lib" / "library" / "TensileLibrary_gfx90a.co"
    assert moved.read_bytes() == b"gfx90a data"
    assert (out / "demo_lib_generic" / PREFIX / "lib" / "library" / "TensileLibrary.dat").exists()
    per_arch = out / "demo_lib_gfx1030" / PREFIX / "lib" / "library" / "gfx1030"
    assert (per_arch / "kernels.dat").read_bytes() == b"gfx1030 data"
    assert not (out / "demo_lib_generic" / PREFIX / "lib" / "library" / "gfx1030").exists()
    assert tree.manifest("demo_lib_gfx90a") == (PREFIX,)
    joined = tmp_path / "joined"
    join_tree(out, joined)
    _same_tree(therock, joined)


@pytest.mark.slow
def test_split_build_install_one_arch_then_resolve(hip_build: HipBuild, tmp_path: Path):
    tree = tmp_path / "tree" / "usr" / "lib"
    tree.mkdir(parents=True)
    shutil.copy2(hip_build.two_files, tree / "libtwo.so.1")
    shutil.copy2(hip_build.one_file, tree / "libone.so.1")
    out, packages, root = tmp_path / "out", tmp_path / "packages", tmp_path / "root"
    split_tree(tmp_path / "tree", out, name="demo_lib")
    result = CliRunner().invoke(
        cli,
        ["build", "--config", str(CONFIG), "--artifacts", str(out), "--out", str(packages),
         "--rocm-version", "8.2.0", "--format", "deb", "--target", "gfx90a,gfx1030,gfx906", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    wanted = sorted(packages.glob("amdrocm-demo-host8.2_*.deb")) + sorted(
        packages.glob("amdrocm-demo8.2-gfx90a_*.deb")
    )
    assert len(wanted) == 2
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    subprocess.run(
        ["dpkg", "--root", str(root), "--force-depends", "--force-script-chrootless",
         "--log=/dev/null", "-i", *map(str, wanted)],
        check=True, capture_output=True,
    )  # fmt: skip
    installed = root / "opt/rocm/core-8.2"
    assert sorted(p.name for p in (installed / ".kpack").iterdir()) == ["demo_lib_gfx90a.kpack"]
    for name, bundles in (("libtwo.so.1", 2), ("libone.so.1", 1)):
        found = resolve(installed / "usr/lib" / name, "gfx90a", environ={})
        assert [f.index for f in found] == list(range(bundles))
        assert all(f.code[:4] == b"\x7fELF" for f in found)


@pytest.mark.slow
def test_cli_split_prints_a_summary_and_json(hip_build: HipBuild, tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(
        cli, ["split", str(hip_build.root), "--out", str(tmp_path / "out"), "--name", "demo_lib"]
    )
    assert result.exit_code == 0, result.output
    for word in ("fat binaries", "host parts", *(t.split(":")[0] for t in TARGETS), "% less"):
        assert word in result.output
    again = runner.invoke(
        cli,
        ["split", str(hip_build.root), "--out", str(tmp_path / "out"), "--name", "demo_lib",
         "--force", "--json", "-j", "3"],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output)
    assert summary["binaries"] == 5  # libtwo, libone, fill, fill-no-pie, variants/lib.so
    assert set(summary["arches"]) == {"gfx1030", "gfx906", "gfx90a"}
    assert summary["host_bytes"] < summary["fat_bytes"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--out", "{tmp}/exists"],
            "exists: already exists (remove it, or replace it with --force)",
        ),
        (["--out", "{tmp}/o"], "give --name NAME_COMPONENT"),
        (["--out", "{tmp}/o", "--name", "Bad"], "--name 'Bad': expected <name>_<component>"),
        (["--out", "{tmp}/o", "--name", "a_lib", "--kpack-dir", "../x"], "expected a path inside"),
        (["--out", "{tmp}/in/o", "--name", "a_lib"], "must not be inside the input"),
        (
            ["--out", "{tmp}/full", "--name", "a_lib", "--force"],
            "not the output of an earlier split",
        ),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], message: str):
    source = tmp_path / "in"
    source.mkdir()
    (source / "README").write_text("no device code\n")
    (tmp_path / "exists").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "precious").write_text("not to be deleted\n")
    result = CliRunner().invoke(
        cli, ["split", str(source), *[a.format(tmp=tmp_path) for a in args]]
    )
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (tmp_path / "o").exists()
    assert (tmp_path / "full" / "precious").exists()


def test_join_refuses_a_directory_split_did_not_make(tmp_path: Path):
    result = CliRunner().invoke(cli, ["join", str(tmp_path), "--out", str(tmp_path / "j")])
    assert result.exit_code == 1
    assert "not made by 'gfxpack split'" in result.stderr


@pytest.mark.parametrize(
    ("path", "arch"),
    [
        ("lib/rocblas/library/TensileLibrary_gfx90a.co", "gfx90a"),
        ("lib/rocblas/library/Kernels.so-000-gfx942-xnack+.hsaco", "gfx942"),
        ("share/miopen/db/gfx942130.kdb", "gfx942"),
        ("lib/hipblaslt/library/gfx1100/x.dat", "gfx1100"),
        ("amdgcn/bitcode/oclc_isa_version_1030.bc", "gfx1030"),
        ("lib/rocblas/library/TensileLibrary.dat", None),
        ("share/doc/gfxpack/README", None),
    ],
)
def test_per_arch_data_files_are_recognized_by_name(path: str, arch: str | None):
    assert file_arch(path) == arch


@pytest.mark.slow
def test_xnack_variants_share_their_processor_archive(hip_build: HipBuild, tmp_path: Path):
    split_tree(hip_build.variants.parent, tmp_path / "out", name="demo_lib", jobs=4)
    archives = sorted((tmp_path / "out").glob("*/stage/.kpack/*.kpack"))
    assert [a.name for a in archives] == ["demo_lib_gfx90a.kpack"]
    with KpackReader.open(archives[0]) as reader:
        assert reader.arches == ["gfx90a:xnack+", "gfx90a:xnack-"]
        assert [(k.toc_key, k.arch) for k in reader.kernels] == [
            ("stage/lib.so#0", "gfx90a:xnack+"), ("stage/lib.so#0", "gfx90a:xnack-"),
        ]  # fmt: skip
    installed = tmp_path / "installed"
    for artifact in sorted((tmp_path / "out").iterdir()):
        if artifact.is_dir():
            shutil.copytree(artifact / "stage", installed, dirs_exist_ok=True)
    for target in ("gfx90a:xnack+", "gfx90a:xnack-"):
        (found,) = resolve(installed / "lib.so", target, environ={})
        assert found.arch == target
        with KpackReader.open(archives[0]) as reader:
            assert found.code == reader.read("stage/lib.so#0", target)
    with pytest.raises(ArchNotFound):
        resolve(installed / "lib.so", "gfx90a", environ={})


def _compress_bundles(library: Path, out: Path) -> None:
    """The library with bundle 0 stored as CCOB v2 (zstd) and bundle 1 as v3 (zlib), each
    in the place of the original, zero-padded."""
    data = bytearray(library.read_bytes())
    with FatBinary(library) as fat:
        assert fat.fatbin is not None
        spans = sorted({(d.bundle.offset, d.bundle.length) for d in fat.devices})
        base = fat.fatbin.offset
    for (offset, length), (version, method) in zip(spans, [(2, 1), (3, 0)], strict=True):
        packed = ccob(bytes(data[base + offset : base + offset + length]), version, method)
        assert len(packed) < length
        data[base + offset : base + offset + length] = packed + bytes(length - len(packed))
    out.write_bytes(bytes(data))


@pytest.mark.slow
def test_compressed_bundles_split_resolve_and_join(
    hip_build: HipBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # These small bundles compress to less than a page: make them "long" literals.
    monkeypatch.setattr(rewrite, "INLINE_LITERAL", 256)
    tree = tmp_path / "tree"
    tree.mkdir()
    _compress_bundles(hip_build.two_files, tree / "libtwo.so")
    with FatBinary(tree / "libtwo.so") as fat:
        assert [d.bundle.compression for d in fat.devices] == ["zstd", "zlib"]
        assert [d.bundle.ccob_version for d in fat.devices] == [2, 3]
    split_tree(tree, tmp_path / "out", name="demo_lib")
    installed = tmp_path / "installed"
    for artifact in sorted((tmp_path / "out").iterdir()):
        if artifact.is_dir():
            shutil.copytree(artifact / "stage", installed, dirs_exist_ok=True)
    with FatBinary(hip_build.two_files) as original:
        for target in TARGETS:
            found = resolve(installed / "libtwo.so", target, environ={})
            assert [f.code for f in found] == [
                bytes(d.bundle.code(o))
                for d in original.devices
                for o in d.bundle.code_objects
                if str(o.target) == target
            ]
    # The compressed bundles are kept for join in the data file, not in the index.
    index = msgpack.unpackb((tmp_path / "out" / "gfxpack-split.msgpack").read_bytes())
    recipe = index["jobs"][0]["files"][-1][3]
    kept = [p[2] for p in recipe["pieces"] if p[0] == 3]
    assert kept and sum(kept) <= (tmp_path / "out" / "gfxpack-split.data").stat().st_size
    join_tree(tmp_path / "out", tmp_path / "joined")
    assert (tmp_path / "joined" / "libtwo.so").read_bytes() == (tree / "libtwo.so").read_bytes()


@pytest.mark.slow
def test_join_checks_every_byte_and_writes_nothing_on_a_mismatch(
    hip_build: HipBuild, tmp_path: Path
):
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy2(hip_build.one_file, tree / "libone.so")
    split_tree(tree, tmp_path / "out", name="demo_lib")
    index_path = tmp_path / "out" / "gfxpack-split.msgpack"
    index = msgpack.unpackb(index_path.read_bytes())
    (_, _, kind, recipe) = index["jobs"][0]["files"][-1]
    assert kind == "binary"
    literal = next(p for p in recipe["pieces"] if p[0] == 1)
    literal[1] = bytes([literal[1][0] ^ 1]) + literal[1][1:]  # one bit of a bundle header
    index_path.write_bytes(msgpack.packb(index, use_bin_type=True))
    result = CliRunner().invoke(cli, ["join", str(tmp_path / "out"), "--out", str(tmp_path / "j")])
    assert result.exit_code == 1
    assert "libone.so: the joined bytes differ from the original (sha256 mismatch)" in result.stderr
    assert not (tmp_path / "j").exists()
    zero = next(p for p in recipe["pieces"] if p[0] == 0)
    zero[1] = 1 << 50  # a size no one should allocate
    index_path.write_bytes(msgpack.packb(index, use_bin_type=True))
    result = CliRunner().invoke(cli, ["join", str(tmp_path / "out"), "--out", str(tmp_path / "j")])
    assert "does not add up to the original's size" in result.stderr


@pytest.mark.slow
def test_recorded_digest_is_the_one_computed_from_the_original_alone(
    hip_build: HipBuild, tmp_path: Path
):
    # split takes each code object's sha256 from its archive writer instead of hashing
    # it again: the digest it records must be the one the original's bytes give alone.
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy2(hip_build.two_files, tree / "libtwo.so")
    split_tree(tree, tmp_path / "out", name="demo_lib", jobs=2)
    index = msgpack.unpackb((tmp_path / "out" / "gfxpack-split.msgpack").read_bytes())
    (_, _, kind, recorded) = index["jobs"][0]["files"][-1]
    assert kind == "binary"
    with FatBinary(tree / "libtwo.so") as fat:
        alone = rewrite.split_binary(fat, io.BytesIO(), "x", ["y"], lambda t: t.processor)
    assert sum(p[0] == 2 and p[4] == 0 for p in recorded["pieces"]) >= 2  # whole objects
    assert recorded["sha256"] == alone.sha256
    assert alone.sha256 != hashlib.sha256((tree / "libtwo.so").read_bytes()).hexdigest()


@pytest.mark.slow
def test_join_detects_a_changed_code_object_or_host_byte(hip_build: HipBuild, tmp_path: Path):
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy2(hip_build.one_file, tree / "libone.so")
    out = tmp_path / "out"
    split_tree(tree, out, name="demo_lib")
    archive = out / "demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack"
    original = archive.read_bytes()
    # A well-formed archive (its own digests agree) whose code object differs by one bit.
    with KpackReader.open(archive) as reader:
        kernels = [(k, bytearray(reader.read_kernel(k))) for k in reader.kernels]
        group, family, arches = reader.group, reader.arch_family, reader.arches
    kernels[0][1][len(kernels[0][1]) // 2] ^= 1
    with open(archive, "wb") as handle, KpackWriter(handle, group, family, arches=arches) as w:
        for kernel, code in kernels:
            w.add(kernel.toc_key, bytes(code), kernel.arch)
    result = CliRunner().invoke(cli, ["join", str(out), "--out", str(tmp_path / "j")])
    assert result.exit_code == 1
    assert "libone.so: the joined bytes differ from the original (sha256 mismatch)" in result.stderr
    assert not (tmp_path / "j").exists()
    archive.write_bytes(original)
    host = out / "demo_lib_generic/stage/libone.so"
    data = bytearray(host.read_bytes())
    data[100] ^= 1  # in the program headers, which the host file keeps as they were
    host.unlink()  # a hard link to the input: write a new file
    host.write_bytes(bytes(data))
    result = CliRunner().invoke(cli, ["join", str(out), "--out", str(tmp_path / "j")])
    assert result.exit_code == 1
    assert "sha256 mismatch" in result.stderr
    data[100] ^= 1
    host.unlink()
    host.write_bytes(bytes(data))
    join_tree(out, tmp_path / "j")
    assert (tmp_path / "j" / "libone.so").read_bytes() == (tree / "libone.so").read_bytes()


@pytest.mark.slow
def test_kpack_dir_places_archives_beside_the_libraries(hip_build: HipBuild, tmp_path: Path):
    tree = tmp_path / "tree" / "usr" / "lib" / "x86_64-linux-gnu"
    tree.mkdir(parents=True)
    shutil.copy2(hip_build.one_file, tree / "libone.so.1")
    out = tmp_path / "out"
    split_tree(tmp_path / "tree", out, name="demo_lib", kpack_dir="usr/lib/x86_64-linux-gnu/.kpack")
    archive = out / "demo_lib_gfx90a/stage/usr/lib/x86_64-linux-gnu/.kpack/demo_lib_gfx90a.kpack"
    assert archive.is_file()
    host = out / "demo_lib_generic/stage/usr/lib/x86_64-linux-gnu/libone.so.1"
    ((_, reference),) = read_references(host)
    assert reference.search_paths == [".kpack/demo_lib_@GFXARCH@.kpack"]
    (found,) = resolve(host, "gfx90a", environ={"ROCM_KPACK_PATH_PREFIX": str(archive)})
    assert found.archive == archive
