"""`kind: kpack` kernel sources (L3), kernel origins (L4) and the archives behind them."""

from __future__ import annotations

import copy
import hashlib

import pytest

from gfxpack.descriptors import Diagnostics
from gfxpack.descriptors.loader import build_catalog
from gfxpack.descriptors.resolve import Resolver
from gfxpack.kpack import write_kpack
from tests.descriptors.helpers import KDP, UKD, found, load, make_set_documents, problems, uid
from tests.descriptors.helpers import write_tree as write

CODE = b"\x7fELF amdgpu code object for pointwise add"
SHA = hashlib.sha256(CODE).hexdigest()
SIGNATURE = [
    {"kind": "global_buffer", "size": 8, "offset": 0, "name": "a"},
    {"kind": "by_value", "size": 4, "offset": 8},
]


def kpack_source(**changes):
    source = {
        "kind": "kpack",
        "library": "../kpack/hip_kernel_provider_gfx942.kpack",
        "toc_key": "pointwise_add.f32",
        "symbol": "PointwiseAdd",
        "sha256": SHA,
        "signature": copy.deepcopy(SIGNATURE),
    }
    for key, value in changes.items():
        if value is None:
            source.pop(key)
        else:
            source[key] = value
    return source


def packaged_tree(tmp_path, source=None, archive=True, arch=("gfx942",), code=CODE):
    """The packager's layout: gfx942/pointwise/a.kdp.json naming ../kpack/<group>_gfx942.kpack."""
    documents = make_set_documents()
    pack = documents.pop("a.kdp.json")
    pack["arch"] = list(arch)
    pack["kernelDescriptors"] = pack["kernelDescriptors"][:1]
    pack["kernelDescriptors"][0]["kernel_source"] = source or kpack_source()
    write(tmp_path, {**documents, "gfx942/pointwise/a.kdp.json": pack})
    if archive:
        (tmp_path / "gfx942/kpack").mkdir(parents=True)
        write_kpack(
            tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack",
            [("pointwise_add.f32", code)],
            "hip_kernel_provider",
            "gfx942",
        )
    return load(tmp_path)


def test_accepts_a_packaged_kernel_and_carries_its_coordinates(tmp_path):
    result = packaged_tree(tmp_path)
    (engine,) = result.sets
    (kernel,) = engine.packs[0].kernels
    source = kernel.source
    assert (source.kind, source.library, source.toc_key, source.symbol, source.sha256) == (
        "kpack",
        "../kpack/hip_kernel_provider_gfx942.kpack",
        "pointwise_add.f32",
        "PointwiseAdd",
        SHA,
    )
    assert [(a.kind, a.size, a.offset, a.name) for a in source.signature] == [
        ("global_buffer", 8, 0, "a"),
        ("by_value", 4, 8, None),
    ]
    assert problems(result) == []


def test_parses_the_shape_the_descriptor_packager_emits(tmp_path):
    """A standalone kernel as hkp_pack rewrites it: provenance block, library one level up."""
    documents = make_set_documents()
    pack = documents.pop("a.kdp.json")
    pack.update(arch=["gfx942"], kernelDescriptors=[uid("a", UKD)])
    standalone = {
        "version": "1.0",
        "id": uid("a", UKD),
        "name": "pointwise_add.f32",
        "arch": ["gfx942"],
        "kernel_source": kpack_source(library="../kpack/hip_kernel_provider_gfx942.kpack"),
        "metadata": {"block_size": 64, "dtype": "FLOAT"},
        "priority": 0,
        "provenance": {"origin_kind": "hip", "source": "PointwiseAdd.hip", "toolchain": "x"},
    }
    write(
        tmp_path,
        {
            **documents,
            "gfx942/pointwise/a.kdp.json": pack,
            "gfx942/kernels/add.ukd.json": standalone,
        },
    )
    (tmp_path / "gfx942/kpack").mkdir()
    write_kpack(
        tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack",
        [("pointwise_add.f32", CODE)],
        "hip_kernel_provider",
        "gfx942",
    )
    result = load(tmp_path)
    assert [k.name for k in result.sets[0].packs[0].kernels] == ["pointwise_add.f32"]
    assert problems(result) == ["D207"]  # provenance is an extension key


@pytest.mark.parametrize(
    ("sha", "why"),
    [
        ("ab" * 31, f'expected 64 lowercase hex digits, got "{"ab" * 31}"'),
        ("ab" * 33, f'expected 64 lowercase hex digits, got "{"ab" * 33}"'),
        (SHA.upper(), f'expected 64 lowercase hex digits, got "{SHA.upper()}"'),
        ("g" * 64, f'expected 64 lowercase hex digits, got "{"g" * 64}"'),
        ("", 'expected 64 lowercase hex digits, got ""'),
    ],
    ids=["too-short", "too-long", "uppercase-hex", "non-hex", "empty"],
)
def test_rejects_a_malformed_sha256(tmp_path, sha, why):
    result = packaged_tree(tmp_path, kpack_source(sha256=sha))
    path = f'"{tmp_path}/gfx942/pointwise/a.kdp.json"'
    assert found(result, "D215") == [
        f"{path} is not a valid descriptor: kernel 'a.f32_64' has a malformed kpack 'sha256': {why}"
    ]


def test_accepts_a_conforming_sha256(tmp_path):
    assert len(packaged_tree(tmp_path).sets) == 1


@pytest.mark.parametrize(
    ("signature", "code", "why"),
    [
        (None, "D215", "malformed kpack 'signature': missing"),
        (
            {"kind": "x"},
            "D215",
            'malformed kpack \'signature\': expected an array, got {"kind": "x"}',
        ),
        (["x"], "D215", "malformed kpack 'signature': entry 0 is not an object"),
        (
            [{"size": 8, "offset": 0}],
            "D215",
            "malformed kpack 'signature': entry 0 needs a non-empty 'kind'",
        ),
        (
            [{"kind": "x", "size": -8, "offset": 0}],
            "D215",
            "malformed kpack 'signature': entry 0 needs a non-negative integer 'size', got -8",
        ),
        ([{"kind": "x", "size": 8, "offset": 0, "align": 8}], "D208", "unknown key 'align'"),
        (
            [{"kind": "x", "size": 8, "offset": 0, "name": ""}],
            "D215",
            "malformed kpack 'signature': entry 0 has an empty or non-string 'name'",
        ),
    ],
    ids=[
        "missing",
        "not-an-array",
        "entry-not-an-object",
        "entry-missing-kind",
        "negative-size",
        "unknown-key",
        "empty-name",
    ],
)
def test_rejects_a_malformed_signature(tmp_path, signature, code, why):
    result = packaged_tree(tmp_path, kpack_source(signature=signature))
    (message,) = found(result, code)
    assert why in message


def test_accepts_an_empty_signature_as_a_kernel_taking_no_arguments(tmp_path):
    result = packaged_tree(tmp_path, kpack_source(signature=[]))
    assert result.sets[0].packs[0].kernels[0].source.signature == ()


def test_carries_the_argument_names_a_producer_does_emit(tmp_path):
    result = packaged_tree(tmp_path)
    assert [a.name for a in result.sets[0].packs[0].kernels[0].source.signature] == ["a", None]


@pytest.mark.parametrize("missing", ["library", "toc_key", "symbol"])
def test_a_kpack_source_needs_its_coordinates(tmp_path, missing):
    result = packaged_tree(tmp_path, kpack_source(**{missing: None}))
    (message,) = found(result, "D215")
    assert message.endswith(f"has a malformed kpack '{missing}': missing")


@pytest.mark.parametrize("kind", ["hsaco_file", "rocke_builder"])
def test_rejects_kinds_whose_adapter_is_missing(tmp_path, kind):
    result = packaged_tree(tmp_path, {"kind": kind, "source_file": "k.hsaco"})
    assert problems(result) == ["D212", "D408"]


# --- the archives (Decision 3) --------------------------------------------------------------------


def test_a_missing_archive_drops_the_pack(tmp_path):
    result = packaged_tree(tmp_path, archive=False)
    library = tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    assert found(result, "D420") == [
        f"pack 'a:pack' id={uid('a', KDP)} kernel 'a.f32_64' names kpack archive \"{library}\", "
        "which does not exist; dropping the pack"
    ]


def test_an_unreadable_archive_drops_the_pack(tmp_path):
    write(tmp_path, {"gfx942/kpack/hip_kernel_provider_gfx942.kpack": "not a kpack archive"})
    result = packaged_tree(tmp_path, archive=False)
    (message,) = found(result, "D421")
    assert "which cannot be read: bad magic b'not '" in message


def test_a_toc_key_the_archive_lacks_for_the_arch_drops_the_pack(tmp_path):
    result = packaged_tree(tmp_path, kpack_source(toc_key="pointwise_mul.f32"))
    library = tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    assert found(result, "D422") == [
        f"pack 'a:pack' id={uid('a', KDP)} kernel 'a.f32_64' names toc_key 'pointwise_mul.f32', "
        f'which "{library}" does not hold for arch gfx942; dropping the pack'
    ]


def test_every_arch_of_the_kernel_is_looked_up(tmp_path):
    result = packaged_tree(tmp_path, arch=("gfx942", "gfx950"))
    (message,) = found(result, "D422")
    assert message.endswith("does not hold for arch gfx950; dropping the pack")


def test_a_digest_mismatch_drops_the_pack(tmp_path):
    result = packaged_tree(tmp_path, code=b"different bytes")
    library = tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    actual = hashlib.sha256(b"different bytes").hexdigest()
    assert found(result, "D423") == [
        f"pack 'a:pack' id={uid('a', KDP)} kernel 'a.f32_64' has sha256 {SHA}, but \"{library}\" "
        f"holds {actual}; dropping the pack"
    ]


# --- origins (L4) --------------------------------------------------------------------------------


def test_resolves_the_origin_directory_of_an_inline_kernel(tmp_path):
    (engine,) = packaged_tree(tmp_path).sets
    kernel = engine.packs[0].kernels[0]
    assert (kernel.origin_directory, kernel.tree_root) == (
        str(tmp_path / "gfx942/pointwise"),
        str(tmp_path),
    )


def test_resolves_the_origin_directory_of_a_referenced_kernel(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"] = [uid("a", UKD)]
    standalone = {**documents["a.kdp.json"], "id": uid("a", UKD)}
    del standalone["kernelDescriptors"]
    kernel = {
        "version": "1.0",
        "id": uid("a", UKD),
        "name": "k",
        "kernel_source": {"kind": "embedded_source", "source_file": "K.cpp", "entry_point": "K"},
        "metadata": {"dtype": "F"},
    }
    (engine,) = load(write(tmp_path, {**documents, "deep/er/k.ukd.json": kernel})).sets
    assert engine.packs[0].kernels[0].origin_directory == str(tmp_path / "deep/er")


def test_joins_a_relative_library_against_the_packager_layout(tmp_path):
    source = kpack_source(library="./../kpack/../kpack/hip_kernel_provider_gfx942.kpack")
    assert len(packaged_tree(tmp_path, source).sets) == 1


def test_a_library_outside_the_tree_is_rejected(tmp_path):
    source = kpack_source(library="../../../elsewhere/x.kpack")
    result = packaged_tree(tmp_path / "root", source)
    assert found(result, "D216") == [
        f'"{tmp_path}/root/gfx942/pointwise/a.kdp.json" is not a valid descriptor: kernel '
        f"'a.f32_64' names library \"../../../elsewhere/x.kpack\", which resolves outside the "
        f'descriptor tree "{tmp_path}/root"'
    ]


class _Archives:
    """An ArchiveSource of values: path -> {(toc_key, arch): code}."""

    def __init__(self, archives: dict[str, dict[tuple[str, str], bytes]]):
        self.archives = archives

    def exists(self, path):
        return path in self.archives

    def arches(self, path, toc_key):
        return [arch for key, arch in self.archives[path] if key == toc_key]

    def digest(self, path, toc_key, arch):
        return hashlib.sha256(self.archives[path][toc_key, arch]).hexdigest()


def _resolve_from(tmp_path, code: bytes):
    packaged_tree(tmp_path, archive=False)
    diags = Diagnostics()
    catalog = build_catalog([tmp_path], diags)
    library = str(tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack")
    archives = _Archives({library: {("pointwise_add.f32", "gfx942"): code}})
    return Resolver(catalog, diags, archives).run(), diags


def test_the_resolver_reads_archives_through_the_source_it_is_given(tmp_path):
    # No archive on disk: the resolver asks only the source it was handed.
    sets, diags = _resolve_from(tmp_path, CODE)
    assert [k.name for k in sets[0].packs[0].kernels] == ["a.f32_64"]
    assert not [d for d in diags.items if d.code.startswith("D42")]
    sets, diags = _resolve_from(tmp_path / "other", b"other code")
    assert [d.code for d in diags.items if d.code.startswith("D42")] == ["D423"]
