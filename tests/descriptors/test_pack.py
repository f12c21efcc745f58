"""gfxpack descriptors pack: authored descriptors + built kernels -> a tree that lints and loads."""

from __future__ import annotations

import gzip
import hashlib
import json
import stat
import struct
from pathlib import Path

import msgpack
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gfxpack.cli import cli
from gfxpack.descriptors import SymbolRegistry, load_validated
from gfxpack.descriptors.code_object_sources import CodeObjectArchives, CodeObjectFiles
from gfxpack.descriptors.installed import installed_roots
from gfxpack.descriptors.kernel_list import PackError, read_kernel_list
from gfxpack.descriptors.lint import lint
from gfxpack.descriptors.pack import pack
from gfxpack.descriptors.parse import resolved_library
from gfxpack.kpack import FRAME_OFFSETS, KpackReader, write_kpack
from tests.code_objects import code_object as amdgpu_code_object
from tests.conftest import ROOT

PROVIDER = ROOT / "examples" / "dnn-provider"
AUTHORED = PROVIDER / "descriptors"
KERNELS = PROVIDER / "kernels.json"
SYMBOLS = PROVIDER / "symbols.json"
ARCHES = ("gfx1100", "gfx942")


def code_object(name: str, arch: str) -> bytes:
    """A stand-in code object for ``arch``: a real AMDGPU header, a body of its own."""
    seed = hashlib.sha256(f"{name}@{arch}".encode()).digest()
    return amdgpu_code_object(arch, seed * 64)


@pytest.fixture
def built(tmp_path) -> Path:
    """A code object per listed kernel and arch, as a build leaves them."""
    directory = tmp_path / "code-objects"
    for kernel in read_kernel_list(KERNELS).kernels:
        for arch in kernel.arch:
            path = directory / arch / f"{kernel.toc_key}.hsaco"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(code_object(kernel.name, arch))
    return directory


def provenance_of(shard: Path) -> dict:
    """The provenance sidecar of a written pack (gzipped JSON beside it)."""
    sidecar = shard.with_name(shard.name.removesuffix(".json") + ".provenance.json.gz")
    return json.loads(gzip.decompress(sidecar.read_bytes()))


def kpack_kernels(tree: Path):
    """(shard file, kernel document) for every kernel of every packed shard."""
    found = []
    for shard in sorted(tree.glob("gfx*/**/*.kdp.json")):
        for kernel in json.loads(shard.read_text())["kernelDescriptors"]:
            found.append((shard, kernel))
    return found


def test_pack_round_trip_lints_loads_and_matches_its_archives(built, tmp_path):
    out = tmp_path / "arch_content"
    result = pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    assert sorted(result.shards) == list(ARCHES)
    assert result.engines == ["hipkernel:ConvFwd", "hipkernel:Pointwise"]
    # Lint: every file passes its schema, the loader reports no ERROR.
    checked = lint([out], SymbolRegistry.from_file(SYMBOLS))
    assert not checked.failed
    assert len(checked.files) == 13 + 2 * len(ARCHES)
    assert {s.name for s in checked.load.sets} == set(result.engines)
    # Each kernel's sha256 is the sha256 of its code object, read back from the archive.
    kernels = kpack_kernels(out)
    assert len(kernels) == 6 * len(ARCHES)
    for shard, kernel in kernels:
        arch = shard.relative_to(out).parts[0]
        source = kernel["kernel_source"]
        assert source["kind"] == "kpack" and kernel["version"] == "1.0"
        archive = (shard.parent / source["library"]).resolve()
        assert archive == (out / arch / "kpack" / f"hip_kernel_provider_{arch}.kpack").resolve()
        with KpackReader.open(archive) as reader:
            code = reader.read(source["toc_key"], arch)
        assert code == code_object(kernel["name"], arch)
        assert source["sha256"] == hashlib.sha256(code).hexdigest()
    # Every pack carries a version and its arch; where its code objects came from is
    # in a sidecar beside it, which the loader never reads (no extension-key warning).
    for shard in out.glob("gfx*/**/*.kdp.json"):
        document = json.loads(shard.read_text())
        arch = shard.relative_to(out).parts[0]
        assert document["version"] == "1.0" and document["arch"] == [arch]
        assert "provenance" not in document
        provenance = provenance_of(shard)
        assert provenance["producer"] == "gfxpack descriptors pack"
        assert (provenance["arch"], provenance["kernel_list"]) == (arch, "kernels.json")
        assert provenance["authored"] == str(shard.relative_to(out / arch))
        assert set(provenance["code_objects"].values()) == {
            f"{arch}/{k['kernel_source']['toc_key']}.hsaco" for k in document["kernelDescriptors"]
        }
        assert list(document)[-1] == "kernelDescriptors"
    # The arch-independent files are copied byte for byte, the per-arch packs are not.
    for relative in result.generic:
        assert (out / relative).read_bytes() == (AUTHORED / relative).read_bytes()
    assert not (out / "pointwise" / "pointwise_add.kdp.json").exists()
    assert not list(tmp_path.glob(".*partial*"))
    assert stat.S_IMODE(out.stat().st_mode) == 0o755  # not the scratch directory's 0700


def test_the_loader_names_the_kernel_whose_archive_byte_is_corrupted(built, tmp_path):
    out = tmp_path / "arch_content"
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out, compression="none")
    archive = out / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    victim = "pointwise_mul.half_block64"
    data = bytearray(archive.read_bytes())
    at = data.index(code_object(victim, "gfx942")) + 100
    data[at] ^= 0xFF
    archive.write_bytes(bytes(data))
    result = load_validated([out])
    errors = [d for d in result.diagnostics.items if d.code == "D423"]
    assert len(errors) == 1
    assert f"kernel '{victim}'" in errors[0].message
    assert "pack 'hipkernel:pointwise_mul'" in errors[0].message
    # Only that arch's pack is dropped: gfx1100 and the other pack still load.
    (pointwise,) = [s for s in result.sets if s.name == "hipkernel:Pointwise"]
    assert sorted((p.descriptor.name, p.arch) for p in pointwise.packs) == [
        ("hipkernel:pointwise_add", ("gfx1100",)),
        ("hipkernel:pointwise_add", ("gfx942",)),
        ("hipkernel:pointwise_mul", ("gfx1100",)),
    ]


def test_a_corrupted_zstd_frame_is_reported_naming_the_kernel(built, tmp_path):
    out = tmp_path / "arch_content"
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    archive = out / "gfx1100/kpack/hip_kernel_provider_gfx1100.kpack"
    victim = "pointwise_add.float_block256"
    with KpackReader.open(archive) as reader:
        ordinal = reader.find(victim, "gfx1100").ordinal
        toc_offset = reader.toc_offset
    data = bytearray(archive.read_bytes())
    frames = msgpack.unpackb(bytes(data[toc_offset:]))[FRAME_OFFSETS]
    (size,) = struct.unpack_from("<I", data, frames[ordinal])
    data[frames[ordinal] + 4 + size // 2] ^= 0xFF  # the middle of the kernel's frame
    archive.write_bytes(bytes(data))
    result = load_validated([out])
    errors = [d for d in result.diagnostics.items if d.code in ("D421", "D423")]
    assert len(errors) == 1
    assert f"kernel '{victim}'" in errors[0].message and "gfx1100" in errors[0].message


def test_an_archive_of_another_arch_is_reported_naming_the_kernel(built, tmp_path):
    out = tmp_path / "arch_content"
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    kpack = out / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    kpack.write_bytes((out / "gfx1100/kpack/hip_kernel_provider_gfx1100.kpack").read_bytes())
    result = load_validated([out])
    errors = sorted(d.message for d in result.diagnostics.items if d.code == "D422")
    assert len(errors) == 2  # one per gfx942 pack: its first kernel drops it
    assert (
        "kernel 'pointwise_add.float_block64' names toc_key 'pointwise_add.float_block64'"
        in (errors[0])
    )
    assert errors[0].endswith(f'"{kpack}" does not hold for arch gfx942; dropping the pack')


def test_code_objects_can_come_from_existing_archives(built, tmp_path):
    archives = []
    for arch in ARCHES:
        path = tmp_path / f"built_{arch}.kpack"
        write_kpack(
            path,
            sorted((p.name.removesuffix(".hsaco"), p) for p in (built / arch).iterdir()),
            "built",
            arch,
        )
        archives.append(path)
    source = CodeObjectArchives(archives)
    out = tmp_path / "from-kpack"
    try:
        result = pack(AUTHORED, KERNELS, source, out)
    finally:
        source.close()
    assert sorted(result.shards) == list(ARCHES)
    assert not load_validated([out]).diagnostics.at_least(40)
    shard = json.loads((out / "gfx942/pointwise/pointwise_add.kdp.json").read_text())
    assert "provenance" not in shard
    provenance = provenance_of(out / "gfx942/pointwise/pointwise_add.kdp.json")
    assert provenance["code_objects"]["pointwise_add.float_block64"] == (
        "built_gfx942.kpack#pointwise_add.float_block64"
    )


def test_a_kernel_with_no_code_object_for_an_arch_names_both(built, tmp_path):
    (built / "gfx1100" / "pointwise_mul.float_block256.hsaco").unlink()
    out = tmp_path / "arch_content"
    with pytest.raises(PackError) as raised:
        pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    (problem,) = raised.value.problems
    assert "kernel 'pointwise_mul.float_block256' is listed for gfx1100" in problem
    assert "kernels.json: /kernels/4" in problem
    assert not out.exists() and not list(tmp_path.glob(".*partial*"))


def test_a_pack_left_without_kernels_is_an_error(built, tmp_path):
    path = write_list(tmp_path, [{**GOOD, "name": "pointwise_add.float_block64"}])
    with pytest.raises(PackError) as raised:
        pack(AUTHORED, path, CodeObjectFiles(built), tmp_path / "out")
    assert raised.value.problems == [
        f"{path}: pack 'hipkernel:pointwise_mul' (pointwise/pointwise_mul.kdp.json) declares "
        "no kernels and the list gives it none; list its kernels or remove the pack"
    ]


def write_list(tmp_path: Path, kernels: list[dict], name: str = "kernels.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"kernels": kernels}))
    return path


GOOD = {
    "name": "k",
    "pack": "hipkernel:pointwise_add",
    "symbol": "PointwiseAdd",
    "arch": ["gfx942"],
    "metadata": {"block_size": 64, "dtype": "FLOAT", "operation": "ADD"},
}

MUL = {
    **GOOD,
    "name": "pointwise_mul.float_block64",
    "pack": "hipkernel:pointwise_mul",
    "metadata": {"block_size": 64, "dtype": "FLOAT", "operation": "MUL"},
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"arch": "gfx942"}, "/kernels/0/arch: expected a non-empty list of processors"),
        (
            {"arch": ["gfx942:xnack-"]},
            "/kernels/0/arch/0: 'gfx942:xnack-': no target features here; give the processor "
            "alone (gfx942)",
        ),
        ({"arch": ["gfx942", "gfx942"]}, "/kernels/0/arch/1: 'gfx942' is listed twice"),
        ({"pack": "nope"}, "names pack 'nope', which no authored pack defines"),
        ({"symbol": ""}, "/kernels/0/symbol: expected a non-empty string"),
        ({"priorty": 1}, "/kernels/0/priorty: unknown key"),
        ({"id": "not-a-uuid"}, "/kernels/0/id: expected a UUID"),
        ({"code_object": "../../etc/passwd"}, "lies outside"),
    ],
    ids=["arch-string", "feature", "repeat", "unknown-pack", "empty", "typo", "id", "escape"],
)
def test_bad_kernel_lists_are_one_line_naming_the_pointer(built, tmp_path, change, expected):
    kernel = {**GOOD, **change}
    path = write_list(tmp_path, [kernel, MUL])
    with pytest.raises(PackError) as raised:
        pack(AUTHORED, path, CodeObjectFiles(built), tmp_path / "out")
    assert any(expected in problem for problem in raised.value.problems), raised.value.problems
    assert all(str(path) in p or "code object" in p for p in raised.value.problems)
    assert not (tmp_path / "out").exists()


def test_a_metadata_mistake_is_one_line_naming_the_listed_kernel_before_anything_is_written(
    built, tmp_path
):
    # Built for two arches, but checked once, against the engine's schema, in the list.
    kernel = {
        **GOOD,
        "name": "pointwise_add.float_block64",
        "arch": ["gfx942", "gfx1100"],
        "metadata": {"dtype": 3},
    }
    path = write_list(tmp_path, [kernel, {**MUL, "arch": ["gfx942", "gfx1100"]}])
    with pytest.raises(PackError) as raised:
        pack(AUTHORED, path, CodeObjectFiles(built), tmp_path / "out")
    assert raised.value.problems == [
        f"{path}: /kernels/0/metadata: kernel 'pointwise_add.float_block64' sets metadata "
        "field 'dtype' with a value of the wrong type (D418; the schema is "
        f"{AUTHORED / 'pointwise' / 'pointwise.kmd.json'})"
    ]
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".*partial*"))


def test_a_toml_kernel_list(built, tmp_path):
    path = tmp_path / "kernels.toml"
    path.write_text(
        'group = "dnn"\n[[kernels]]\nname = "pointwise_add.float_block64"\n'
        'pack = "hipkernel:pointwise_add"\nsymbol = "PointwiseAdd"\narch = ["gfx942"]\n'
        'metadata = { block_size = 64, dtype = "FLOAT", operation = "ADD" }\n'
        '[[kernels]]\nname = "pointwise_mul.float_block64"\npack = "hipkernel:pointwise_mul"\n'
        'symbol = "PointwiseMul"\narch = ["gfx942"]\n'
        'metadata = { block_size = 64, dtype = "FLOAT", operation = "MUL" }\n'
    )
    result = pack(AUTHORED, path, CodeObjectFiles(built), tmp_path / "out")
    assert result.shards["gfx942"].archive == "gfx942/kpack/dnn_gfx942.kpack"
    assert list(result.shards) == ["gfx942"]


def test_a_toml_date_in_metadata_is_refused_by_the_reader(tmp_path):
    path = tmp_path / "kernels.toml"
    path.write_text(
        '[[kernels]]\nname = "k"\npack = "p"\nsymbol = "S"\narch = ["gfx942"]\n'
        "metadata = { built = 2026-01-01 }\n"
    )
    with pytest.raises(PackError) as raised:
        read_kernel_list(path)
    assert raised.value.problems == [
        f"{path}: /kernels/0/metadata: values must be booleans, numbers, strings or lists "
        "of integers (no dates, no NaN)"
    ]


def test_out_is_replaced_only_when_asked(built, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.ued.json").write_text("{}")
    with pytest.raises(PackError, match="already exists"):
        pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out, replace=True)
    assert not (out / "stale.ued.json").exists()
    assert (out / "gfx942/kpack/hip_kernel_provider_gfx942.kpack").is_file()


def test_a_symlink_in_the_authored_tree_is_refused(built, tmp_path):
    authored = tmp_path / "authored"
    authored.mkdir()
    (authored / "leak.ued.json").symlink_to("/etc/hostname")
    with pytest.raises(PackError, match="is a symlink"):
        pack(authored, KERNELS, CodeObjectFiles(built), tmp_path / "out")


def test_the_cli_packs_and_prints_json(built, tmp_path):
    out = tmp_path / "out"
    args = ["descriptors", "pack", "--descriptors", str(AUTHORED), "--kernels", str(KERNELS)]
    result = CliRunner().invoke(
        cli, [*args, "--code-objects", str(built), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["arches"]["gfx942"]["kernels"] == 6
    assert data["engines"] == ["hipkernel:ConvFwd", "hipkernel:Pointwise"]
    again = CliRunner().invoke(cli, [*args, "--code-objects", str(built), "--out", str(out)])
    assert again.exit_code == 1
    assert again.stderr.startswith("error: ") and "already exists" in again.stderr
    neither = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "x")])
    assert neither.exit_code == 2 and "--code-objects" in neither.output


def test_list_engines_shows_verified_kpack_sources(built, tmp_path):
    out = tmp_path / "out"
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    result = CliRunner().invoke(
        cli, ["descriptors", "list-engines", "--root", str(out), "--device", "gfx942", "--json"]
    )
    assert result.exit_code == 0, result.output
    (pointwise,) = [e for e in json.loads(result.stdout)["engines"] if "Pointwise" in e["name"]]
    kernels = [k for p in pointwise["packs"] for k in p["kernels"]]
    assert len(kernels) == 6 and all(k["verified"] for k in kernels)
    for kernel in kernels:
        with KpackReader.open(kernel["library"]) as reader:
            code = reader.read(kernel["toc_key"], "gfx942")
        assert hashlib.sha256(code).hexdigest() == kernel["sha256"]
    # The gfx1100 shards are in the tree too: a gfx942 device loads its own shard of
    # each pack, so they are other arches' shards, not packs dropped for it.
    assert pointwise["dropped_packs"] == []
    assert sorted((p["name"], tuple(p["arch"])) for p in pointwise["other_arch_shards"]) == [
        ("hipkernel:pointwise_add", ("gfx1100",)),
        ("hipkernel:pointwise_mul", ("gfx1100",)),
    ]


def test_installed_roots_follow_the_documented_layout(tmp_path):
    prefix = tmp_path / "opt/rocm/core-8.2"
    for provider in ("hip-kernel-provider", "other-provider"):
        (prefix / "lib/hipdnn/arch_content" / provider).mkdir(parents=True)
    (tmp_path / "opt/rocm/core").symlink_to(prefix)  # an alternatives link: not read twice
    (tmp_path / "opt/rocm-legacy/lib/hipdnn/arch_content/legacy").mkdir(parents=True)
    (tmp_path / "lib/hipdnn/arch_content/top").mkdir(parents=True)
    (tmp_path / "usr/lib/hipdnn/arch_content/elsewhere").mkdir(parents=True)
    assert installed_roots(tmp_path) == [
        tmp_path / "lib/hipdnn/arch_content/top",
        tmp_path / "opt/rocm/core-8.2/lib/hipdnn/arch_content/hip-kernel-provider",
        tmp_path / "opt/rocm/core-8.2/lib/hipdnn/arch_content/other-provider",
        tmp_path / "opt/rocm-legacy/lib/hipdnn/arch_content/legacy",
    ]
    assert installed_roots(tmp_path / "missing") == []


def test_list_engines_installed_with_nothing_installed_is_one_error(tmp_path):
    result = CliRunner().invoke(cli, ["descriptors", "list-engines", "--installed", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {tmp_path}: no installed descriptor provider (looked for "
        "<prefix>/lib/hipdnn/arch_content/<provider>/ under it, its opt/rocm*/ and opt/rocm/*/)\n"
    )


def test_resolved_library_of_a_packed_kernel_is_its_arch_archive(built, tmp_path):
    out = tmp_path / "out"
    pack(AUTHORED, KERNELS, CodeObjectFiles(built), out)
    result = load_validated([out])
    (pointwise,) = [s for s in result.sets if s.name == "hipkernel:Pointwise"]
    for resolved_pack in pointwise.packs:
        (arch,) = resolved_pack.arch
        for kernel in resolved_pack.kernels:
            assert resolved_library(kernel) == str(
                out / arch / "kpack" / f"hip_kernel_provider_{arch}.kpack"
            )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    choices=st.lists(
        st.tuples(st.booleans(), st.sets(st.sampled_from(ARCHES), min_size=1)),
        min_size=6,
        max_size=6,
    ),
    compression=st.sampled_from(["zstd", "none"]),
)
def test_whatever_pack_writes_lints_and_loads(built, tmp_path_factory, choices, compression):
    """Any subset of the kernels, on any arches: either one clear refusal, or a tree that
    lints clean, loads every listed kernel for its arch, and matches its archives."""
    listed = json.loads(KERNELS.read_text())
    kernels = [
        {**kernel, "arch": sorted(arches)}
        for kernel, (keep, arches) in zip(listed["kernels"], choices, strict=True)
        if keep
    ]
    tmp_path = tmp_path_factory.mktemp("property")
    path = write_list(tmp_path, kernels)
    out = tmp_path / "out"
    try:
        pack(AUTHORED, path, CodeObjectFiles(built), out, compression=compression)
    except PackError as e:
        # The only refusals these inputs can earn: no kernels at all, or a pack left
        # without kernels.
        expected = ("declares no kernels and the list gives it none", "a non-empty list")
        assert all(any(text in p for text in expected) for p in e.problems), e.problems
        assert not out.exists()
        return
    checked = lint([out], SymbolRegistry.from_file(SYMBOLS))
    assert not checked.failed
    loaded = {
        (p.descriptor.name, p.arch, k.name)
        for s in checked.load.sets
        for p in s.packs
        for k in p.kernels
        if k.source.kind == "kpack"
    }
    assert loaded == {
        (kernel["pack"], (arch,), kernel["name"]) for kernel in kernels for arch in kernel["arch"]
    }
    for shard, kernel in kpack_kernels(out):
        arch = shard.relative_to(out).parts[0]
        with KpackReader.open(shard.parent / kernel["kernel_source"]["library"]) as reader:
            code = reader.read(kernel["kernel_source"]["toc_key"], arch)
        assert hashlib.sha256(code).hexdigest() == kernel["kernel_source"]["sha256"]


DEEP = 100_000
# A kernel list whose metadata nests DEEP levels: past any parser's recursion limit.
DEEP_LISTS = {
    "kernels.json": '{"kernels": [{"metadata": {"x": ' + "[" * DEEP + "]" * DEEP + "}}]}",
    "kernels.toml": "[[kernels]]\nmetadata = { x = " + "[" * DEEP + "]" * DEEP + " }\n",
}


@pytest.mark.parametrize("name", sorted(DEEP_LISTS))
@pytest.mark.parametrize("depth", [DEEP, 200], ids=["past-the-parser", "past-the-limit"])
def test_a_deeply_nested_kernel_list_is_one_error_line(built, tmp_path, name, depth):
    path = tmp_path / name
    path.write_text(DEEP_LISTS[name].replace("[" * DEEP + "]" * DEEP, "[" * depth + "]" * depth))
    out = tmp_path / "out"
    args = ["descriptors", "pack", "--descriptors", str(AUTHORED), "--kernels", str(path)]
    result = CliRunner().invoke(cli, [*args, "--code-objects", str(built), "--out", str(out)])
    kind = "TOML" if name.endswith(".toml") else "JSON"
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: {path}: not a kernel list: {kind} nested more than 64 levels deep\n"
    )
    assert not out.exists() and not list(tmp_path.glob(".*partial*"))
