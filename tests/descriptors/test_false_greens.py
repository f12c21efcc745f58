"""Nothing the descriptor tools report succeeds where it failed: a missing --root, a
device or arch that is no processor, a file that is no code object of its arch, an
authored tree, what pack writes, its errors (once, in the authored file) and a pack
one device loads while another device loads a different shard of it."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.descriptors.kernel_list import read_kernel_list
from tests.code_objects import code_object, hipcc_code_objects
from tests.conftest import ROOT
from tests.descriptors.helpers import edited, make_set_documents, write_tree

# make check skips it: code objects built with hipcc, whole packs written.
pytestmark = pytest.mark.slow

PROVIDER = ROOT / "examples" / "dnn-provider"
AUTHORED = PROVIDER / "descriptors"
KERNELS = PROVIDER / "kernels.json"
SYMBOLS = PROVIDER / "symbols.json"


def run(*args: str):
    return CliRunner().invoke(cli, ["descriptors", *args])


def build_code_objects(directory: Path, kernels: Path = KERNELS) -> Path:
    """A stand-in code object per listed kernel and arch: real headers, own bodies."""
    for kernel in read_kernel_list(kernels).kernels:
        for arch in kernel.arch:
            path = directory / arch / f"{kernel.toc_key}.hsaco"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(
                code_object(arch, hashlib.sha256(f"{kernel.name}@{arch}".encode()).digest())
            )
    return directory


def pack_args(out: Path, code_objects: Path, kernels: Path = KERNELS, authored: Path = AUTHORED):
    return (
        "pack",
        "--descriptors",
        str(authored),
        "--kernels",
        str(kernels),
        "--code-objects",
        str(code_objects),
        "--out",
        str(out),
        "--symbols",
        str(SYMBOLS),
    )


def untouched(tmp_path: Path, out: Path) -> None:
    """A refused pack leaves no OUT and nothing half-made beside it."""
    assert not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]


# --- roots --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["lint", "list-engines"])
def test_a_root_that_is_not_a_directory_is_an_error_naming_it(tmp_path, command):
    missing, plain = tmp_path / "no-such-tree", tmp_path / "file.json"
    plain.write_text("{}")
    for root, why in ((missing, "no such directory"), (plain, "not a directory")):
        result = run(command, "--root", str(root))
        assert result.exit_code == 1
        assert result.stderr == f"error: --root {root}: {why}\n"
        assert result.stdout == ""  # no "0 engines", no "OK"
    assert not missing.exists()


def test_a_runtime_dir_that_is_not_a_directory_is_an_error(tmp_path):
    tree = write_tree(tmp_path / "tree", make_set_documents())
    result = run("list-engines", "--root", str(tree), "--runtime-dir", str(tmp_path / "gone"))
    assert result.exit_code == 1
    assert result.stderr == f"error: --runtime-dir {tmp_path / 'gone'}: no such directory\n"


# --- devices and arches -------------------------------------------------------------------

NOT_A_PROCESSOR = [
    ("GFX942", "'GFX942' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
    ("gfx9420", "'gfx9420' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
    ("gfx94", "'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
    (
        "gfx94X-dcgpu",
        "'gfx94X-dcgpu' is a family of processors, not a processor; give one of them (gfx942)",
    ),
]


@pytest.mark.parametrize(
    ("device", "message"),
    [
        *NOT_A_PROCESSOR,
        (
            "banana",
            "'banana' is not an AMDGPU processor LLVM knows (expected a processor such as "
            "gfx942, gfx90a:xnack+)",
        ),
    ],
)
def test_a_device_that_is_no_processor_is_refused_with_a_suggestion(tmp_path, device, message):
    tree = write_tree(tmp_path / "tree", make_set_documents())
    result = run("list-engines", "--root", str(tree), "--device", device)
    assert result.exit_code == 1
    assert (result.stdout, result.stderr) == ("", f"error: --device {message}\n")


def test_a_device_with_features_is_one_processor(tmp_path):
    tree = write_tree(tmp_path / "tree", make_set_documents())
    result = run("list-engines", "--root", str(tree), "--device", "gfx942:sramecc+:xnack-")
    assert result.exit_code == 0, result.output


def test_a_descriptor_arch_no_device_has_fails_lint_and_strict_but_still_loads(tmp_path):
    tree = write_tree(tmp_path / "tree", edited(make_set_documents(), "a.kdp.json", arch=["gfx94"]))
    path = tree / "a.kdp.json"
    line = (
        f"WARN D217: 'arch' in \"{path}\": 'gfx94' is not an AMDGPU processor LLVM knows "
        "(did you mean gfx942?); no device loads it"
    )
    linted = run("lint", "--root", str(tree))
    assert linted.exit_code == 1
    assert line in linted.stdout.splitlines()
    assert linted.stdout.splitlines()[-1].endswith(": FAILED")
    # The provider loads it (an arch is any gfx id to it); --strict says it is wrong.
    listed = run("list-engines", "--root", str(tree))
    assert listed.exit_code == 0 and line in listed.stderr.splitlines()
    strict = run("list-engines", "--root", str(tree), "--strict")
    assert strict.exit_code == 1 and line in strict.stderr.splitlines()


def test_an_uppercase_descriptor_arch_is_an_error_with_a_suggestion(tmp_path):
    tree = write_tree(
        tmp_path / "tree", edited(make_set_documents(), "a.kdp.json", arch=["GFX942"])
    )
    linted = run("lint", "--root", str(tree))
    assert linted.exit_code == 1
    assert "holds 'GFX942', which is not a gfx id" in linted.stdout
    assert "(did you mean gfx942?)" in linted.stdout


def listed_for(tmp_path: Path, arch: str) -> Path:
    """The example's kernel list with every kernel built for ``arch`` only."""
    document = json.loads(KERNELS.read_text())
    for kernel in document["kernels"]:
        kernel["arch"] = [arch]
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("arch", "message"), NOT_A_PROCESSOR)
def test_a_kernel_list_arch_that_is_no_processor_is_refused(tmp_path, arch, message):
    kernels = listed_for(tmp_path, arch)
    out = tmp_path / "out"
    result = run(*pack_args(out, build_code_objects(tmp_path / "co"), kernels))
    assert result.exit_code == 1
    # One line per listed kernel, each naming its pointer (the list has six).
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: {kernels}: /kernels/0/arch/0: {message}"
    assert lines == [f"error: {kernels}: /kernels/{i}/arch/0: {message}" for i in range(6)]
    untouched(tmp_path, out)


# --- code objects -------------------------------------------------------------------------


def test_pack_refuses_a_file_that_is_no_code_object_of_its_arch(tmp_path):
    built = build_code_objects(tmp_path / "co")
    wrong = built / "gfx1100" / "pointwise_add.float_block64.hsaco"
    wrong.write_bytes(code_object("gfx942", b"filed under the wrong arch"))
    text = built / "gfx942" / "pointwise_mul.half_block64.hsaco"
    text.write_bytes(b"#!/bin/sh\necho not a kernel\n" * 4)
    out = tmp_path / "out"
    result = run(*pack_args(out, built))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {KERNELS}: /kernels/0: kernel 'pointwise_add.float_block64' for gfx1100: "
        f"code object {wrong}: e_flags say gfx942, the kernel list says gfx1100",
        f"error: {KERNELS}: /kernels/5: kernel 'pointwise_mul.half_block64' for gfx942: "
        f"code object {text}: not an ELF file, expected an AMDGPU code object",
    ]
    untouched(tmp_path, out)


@pytest.fixture(scope="module")
def hipcc(tmp_path_factory) -> dict[str, bytes]:
    return hipcc_code_objects(tmp_path_factory)


def test_pack_accepts_real_hipcc_code_objects(tmp_path, hipcc):
    document = json.loads(KERNELS.read_text())
    for kernel in document["kernels"]:
        kernel["arch"] = ["gfx90a", "gfx1030"]
    kernels = tmp_path / "kernels.json"
    kernels.write_text(json.dumps(document))
    built = tmp_path / "co"
    for kernel in document["kernels"]:
        for arch in kernel["arch"]:
            (built / arch).mkdir(parents=True, exist_ok=True)
            (built / arch / f"{kernel['name']}.hsaco").write_bytes(hipcc[arch])
    out = tmp_path / "out"
    packed = run(*pack_args(out, built, kernels))
    assert packed.exit_code == 0, packed.output
    listed = run(
        "list-engines",
        "--root",
        str(out),
        "--symbols",
        str(SYMBOLS),
        "--strict",
        "--device",
        "gfx90a",
        "--json",
    )
    assert listed.exit_code == 0, listed.output
    (pointwise,) = [
        e for e in json.loads(listed.stdout)["engines"] if e["name"] == "hipkernel:Pointwise"
    ]
    kernels_seen = [k for p in pointwise["packs"] for k in p["kernels"]]
    assert len(kernels_seen) == 6 and all(
        k["verified"] and k["arch"] == ["gfx90a"] for k in kernels_seen
    )
    assert {k["sha256"] for k in kernels_seen} == {hashlib.sha256(hipcc["gfx90a"]).hexdigest()}


# --- authored trees and what pack writes ------------------------------------------------------


def test_an_authored_tree_lints_as_authored_sources(tmp_path):
    authored = run("lint", "--authored", "--root", str(AUTHORED), "--symbols", str(SYMBOLS))
    assert authored.exit_code == 0, authored.output
    assert authored.stdout.splitlines()[-1] == (
        "15 files (authored sources), 2 engine(s) loaded: OK"
    )
    # As an installed tree it is not one: its packs are empty until pack fills them.
    installed = run("lint", "--root", str(AUTHORED), "--symbols", str(SYMBOLS))
    assert installed.exit_code == 1 and "D424" in installed.stdout


def test_what_pack_writes_passes_list_engines_strict_and_keeps_its_provenance(tmp_path):
    out = tmp_path / "out"
    packed = run(*pack_args(out, build_code_objects(tmp_path / "co")))
    assert packed.exit_code == 0, packed.output
    strict = run(
        "list-engines", "--root", str(out), "--symbols", str(SYMBOLS), "--strict", "--level", "info"
    )
    assert strict.exit_code == 0, strict.output
    assert strict.stdout.splitlines()[-1] == "2 engine(s); 0 ERROR and 0 WARN diagnostic(s)"
    assert run("lint", "--root", str(out), "--symbols", str(SYMBOLS)).exit_code == 0
    # The provenance is kept beside each pack, in a file the loader never reads.
    for arch in ("gfx942", "gfx1100"):
        shard = out / arch / "pointwise" / "pointwise_add.kdp.json"
        assert "provenance" not in json.loads(shard.read_text())
        sidecar = shard.with_name("pointwise_add.kdp.provenance.json.gz")
        provenance = json.loads(gzip.decompress(sidecar.read_bytes()))
        assert (
            provenance["arch"] == arch
            and provenance["authored"] == "pointwise/pointwise_add.kdp.json"
        )
        assert provenance["code_objects"]["pointwise_add.float_block64"] == (
            f"{arch}/pointwise_add.float_block64.hsaco"
        )


def test_a_pack_loaded_for_one_device_reads_as_its_other_shard_not_as_dropped(tmp_path):
    out = tmp_path / "out"
    assert run(*pack_args(out, build_code_objects(tmp_path / "co"))).exit_code == 0
    listed = run(
        "list-engines", "--root", str(out), "--symbols", str(SYMBOLS), "--device", "gfx942"
    )
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert not [line for line in lines if "dropped" in line]
    assert [line.split("  ")[1] for line in lines if line.startswith("  not for")] == [
        "not for gfx942: the [gfx1100] shard of pack hipkernel:pointwise_add",
        "not for gfx942: the [gfx1100] shard of pack hipkernel:pointwise_mul",
    ]
    assert all(
        line.endswith("(gfx942 loads its own shard, above)")
        for line in lines
        if line.startswith("  not for")
    )


def test_an_authored_mistake_is_one_line_naming_the_authored_file(tmp_path):
    authored = tmp_path / "authored"
    shutil.copytree(AUTHORED, authored)
    pack_file = authored / "pointwise" / "pointwise_add.kdp.json"
    document = json.loads(pack_file.read_text())
    document["matcher"] = document.pop("matchers")
    pack_file.write_text(json.dumps(document))
    out = tmp_path / "out"
    # Kernels for two arches: the mistake is still reported once, in the authored file.
    result = run(*pack_args(out, build_code_objects(tmp_path / "co"), authored=authored))
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: D208: unknown key 'matcher' in \"{pack_file}\"; extension keys must start "
        "with 'x-' or '_'; did you mean 'matchers'?\n"
    )
    untouched(tmp_path, out)


def test_a_misspelt_kernel_list_key_gets_a_suggestion(tmp_path):
    document = json.loads(KERNELS.read_text())
    document["kernels"][1]["metdata"] = document["kernels"][1].pop("metadata")
    document["kernal"] = []
    kernels = tmp_path / "kernels.json"
    kernels.write_text(json.dumps(document))
    out = tmp_path / "out"
    result = run(*pack_args(out, build_code_objects(tmp_path / "co"), kernels))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {kernels}: /kernal: unknown key (expected 'group' and 'kernels'); "
        "did you mean 'kernels'?",
        f"error: {kernels}: /kernels/1/metdata: unknown key (expected arch, code_object, id, "
        "metadata, name, pack, priority, signature, symbol, toc_key); did you mean 'metadata'?",
    ]
    untouched(tmp_path, out)


@pytest.mark.parametrize(
    ("command", "outcome"), [("lint", "nothing checked"), ("list-engines", "loaded nothing")]
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_empty_root_says_it_read_nothing_and_fails(tmp_path, command, outcome, as_json):
    """Not "0 files, 0 engine(s) loaded: OK": a tree without descriptors (here: empty, and
    one whose only JSON is no descriptor) checked nothing."""
    empty = tmp_path / "empty"
    (empty / "provider" / "gfx942").mkdir(parents=True)
    (empty / "provider" / "gfx942" / "notes.json").write_text("{}")
    result = run(command, "--root", str(empty), *(["--json"] if as_json else []))
    assert result.exit_code == 1
    message = (
        f"{empty}: no descriptor file (a name ending in .kmd.json, .uhd.json, "
        f".ued.json, .umd.json, .udd.json, .kdp.json, .ukd.json): {outcome}"
    )
    if as_json:  # the error is the JSON document (docs/reference/errors.md)
        error = {"error": message, "reason": "invalid-input", "option": None}
        assert json.loads(result.stdout) == error
        return
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"error: {message}"
