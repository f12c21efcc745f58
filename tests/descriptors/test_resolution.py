"""Resolution, per-arch duplicates, arch rules and roots (spec sections 6-9, checklist §14)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from gfxpack.descriptors import (
    Diagnostics,
    Level,
    engine_hex,
    engine_id,
    provider_roots,
    visible_to,
)
from tests.descriptors.helpers import (
    CANONICAL,
    K1,
    KDP,
    KMD,
    UDD,
    UED,
    UHD,
    UKD,
    UMD_KERNEL,
    edited,
    found,
    kernel,
    load,
    make_set_documents,
    problems,
    summary,
    symbols_for,
    uid,
    write_tree,
)

# --- resolution ------------------------------------------------------------------------------


def test_resolves_a_complete_set_into_one_engine(tmp_path):
    result = load(write_tree(tmp_path, make_set_documents()), registry=symbols_for("a"))
    assert summary(result) == CANONICAL
    assert problems(result) == []
    (engine,) = result.sets
    assert [m.id for m in engine.matchers] == sorted([uid("a", 4), uid("a", UMD_KERNEL)])
    assert found(result, "D509") == [f'1 descriptor-backed engine(s) loaded from "{tmp_path}"']
    assert len(found(result, "D301")) == 7


def test_loads_an_engine_that_ships_no_heuristic(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", heuristic=None)
    del documents["a.uhd.json"]
    result = load(write_tree(tmp_path, documents))
    assert summary(result) == CANONICAL
    assert result.sets[0].heuristic is None
    assert found(result, "D507") == [
        f"engine 'test:EngineA' id={uid('a', UED)} ships no heuristic; ranking kernels by "
        "priority, then id"
    ]


def test_reads_the_type_from_the_suffix_not_the_stem(tmp_path):
    documents = make_set_documents()
    renamed = {
        "ued.kdp.kmd.json": documents.pop("a.kmd.json"),
        "a.kdp.ued.json": documents.pop("a.ued.json"),
        "pack.ued.kdp.json": documents.pop("a.kdp.json"),
        **documents,
    }
    assert summary(load(write_tree(tmp_path, renamed))) == CANONICAL


def test_loads_descriptors_from_nested_folders(tmp_path):
    documents = {
        f"x/y{i}/z/{name}": doc for i, (name, doc) in enumerate(make_set_documents().items())
    }
    assert summary(load(write_tree(tmp_path, documents))) == CANONICAL


def test_loads_nothing_from_an_empty_directory(tmp_path):
    result = load(tmp_path)
    assert result.sets == [] and problems(result) == []
    assert found(result, "D509") == [f'0 descriptor-backed engine(s) loaded from "{tmp_path}"']


def test_loads_nothing_from_a_missing_directory(tmp_path):
    result = load(tmp_path / "absent")
    assert result.sets == []
    assert found(result, "D101") == [f'no descriptor directory at "{tmp_path / "absent"}"']


# --- duplicates and per-arch shards --------------------------------------------------------------


def test_collapses_identical_duplicates_across_arch_directories(tmp_path):
    documents = make_set_documents()
    write_tree(tmp_path, {f"gfx942/{n}": d for n, d in documents.items()})
    write_tree(tmp_path, {f"gfx950/{n}": d for n, d in documents.items()})
    result = load(tmp_path)
    assert summary(result) == CANONICAL
    assert len(found(result, "D302")) == 7 and problems(result) == []
    assert found(result, "D302")[0] == (
        f'duplicate identical descriptor "{tmp_path}/gfx950/a.kdp.json" .kdp.json id='
        f'{uid("a", KDP)} already loaded from "{tmp_path}/gfx942/a.kdp.json"; skipping'
    )


def _per_arch_packs(tmp_path, arches=("gfx942", "gfx950")):
    documents = make_set_documents()
    pack = documents.pop("a.kdp.json")
    write_tree(tmp_path, documents)
    for arch in arches:
        write_tree(tmp_path, {f"{arch}/a.kdp.json": {**pack, "arch": [arch]}})
    return tmp_path


def test_keeps_per_arch_packs_sharing_one_id_across_arch_directories(tmp_path):
    result = load(_per_arch_packs(tmp_path))
    (engine,) = result.sets
    assert [(p.descriptor.id, p.arch) for p in engine.packs] == [
        (uid("a", KDP), ("gfx942",)),
        (uid("a", KDP), ("gfx950",)),
    ]
    assert found(result, "D301")[-1].endswith(f"id={uid('a', KDP)} arch=[gfx950] name='a:pack'")


def test_keeps_per_arch_shards_sharing_a_metadata_tuple_through_the_probe(tmp_path):
    """Both shards hold (64, FLOAT): legal, because their arches are disjoint."""
    result = load(_per_arch_packs(tmp_path), registry=symbols_for("a"))
    assert "D506" not in problems(result)
    assert len(result.sets[0].packs) == 2


def test_keeps_per_arch_standalone_kernels_sharing_one_id(tmp_path):
    documents = make_set_documents()
    pack = documents.pop("a.kdp.json")
    write_tree(tmp_path, documents)
    for arch, block in (("gfx942", 64), ("gfx950", 128)):
        write_tree(
            tmp_path,
            {
                f"{arch}/a.kdp.json": {
                    **pack,
                    "arch": [arch],
                    "kernelDescriptors": [uid("a", UKD)],
                },
                f"{arch}/k.ukd.json": {
                    **kernel("a", UKD, f"k.{arch}", block, "FLOAT"),
                    "arch": [arch],
                },
            },
        )
    (engine,) = load(tmp_path).sets
    assert [(p.arch, [k.name for k in p.kernels]) for p in engine.packs] == [
        (("gfx942",), ["k.gfx942"]),
        (("gfx950",), ["k.gfx950"]),
    ]


def test_drops_both_when_one_id_and_arch_is_defined_twice_with_different_contents(tmp_path):
    documents = make_set_documents()
    pack = {**documents["a.kdp.json"], "arch": ["gfx942"]}
    write_tree(
        tmp_path, {**documents, "a.kdp.json": pack, "copy/a.kdp.json": {**pack, "name": "a:other"}}
    )
    result = load(tmp_path)
    assert result.sets == []
    assert found(result, "D304") == [
        f'"{tmp_path}/copy/a.kdp.json" and "{tmp_path}/a.kdp.json" both define .kdp.json '
        f"id={uid('a', KDP)} arch=[gfx942] name='a:other' with different contents; ignoring both"
    ]
    assert found(result, "D408") == [
        "engine 'test:EngineA' has no loadable kernel pack; dropping it"
    ]


def test_treats_arch_order_as_one_key(tmp_path):
    documents = make_set_documents()
    pack = documents["a.kdp.json"]
    write_tree(
        tmp_path,
        {
            **documents,
            "a.kdp.json": {**pack, "arch": ["gfx942", "gfx950"]},
            "b/a.kdp.json": {**pack, "arch": ["gfx950", "gfx942"]},
        },
    )
    result = load(tmp_path)
    (message,) = found(result, "D304")
    assert f"id={uid('a', KDP)} arch=[gfx942,gfx950]" in message


def test_drops_an_id_two_files_disagree_about(tmp_path):
    documents = make_set_documents()
    other = {**documents["a_kernel.umd.json"], "match_symbol": "a.other"}
    result = load(write_tree(tmp_path, {**documents, "z/a_kernel.umd.json": other}))
    assert result.sets == []
    assert found(result, "D410") == [
        f"pack 'a:pack' id={uid('a', KDP)} names matcher {uid('a', UMD_KERNEL)}, which no "
        "descriptor defines; dropping the pack"
    ]


def test_drops_an_engine_whose_metadata_schema_is_conflicted(tmp_path):
    documents = make_set_documents()
    other = {**documents["a.kmd.json"], "name": "another"}
    result = load(write_tree(tmp_path, {**documents, "z/a.kmd.json": other}))
    assert result.sets == []
    assert found(result, "D405") == [
        f"engine 'test:EngineA' id={uid('a', UED)} names metadata schema {uid('a', KMD)}, which no "
        "descriptor defines"
    ]


def test_drops_a_pack_whose_matcher_is_conflicted_but_keeps_its_sibling(tmp_path):
    documents = make_set_documents()
    sibling = {
        **documents["a.kdp.json"],
        "id": uid("b", KDP),
        "name": "a:sibling",
        "matchers": [uid("a", 4)],
        "kernelDescriptors": [kernel("b", K1, "b.k", 512, "FLOAT")],
    }
    other = {**documents["a_kernel.umd.json"], "match_symbol": "changed"}
    result = load(
        write_tree(tmp_path, {**documents, "s.kdp.json": sibling, "z/a_kernel.umd.json": other})
    )
    assert summary(result) == {"test:EngineA": {"a:sibling": ["b.k"]}}
    assert len(found(result, "D410")) == 1


def test_conflicted_engine_does_not_claim_a_name_its_healthy_sibling_uses(tmp_path):
    a = make_set_documents("a", engine="test:Shared")
    b = make_set_documents("b", engine="test:Shared")
    conflict = {**a["a.ued.json"], "knobs": []}
    result = load(write_tree(tmp_path, {**a, **b, "z/a.ued.json": conflict}))
    assert list(summary(result)) == ["test:Shared"]
    assert result.sets[0].engine.id == uid("b", UED)
    assert found(result, "D402") == [
        f"engine 'test:Shared' id={uid('a', UED)} is defined by conflicting files"
    ]
    assert found(result, "D403") == []


def test_reads_commented_descriptors_and_ignores_comments_when_comparing(tmp_path):
    documents = make_set_documents()
    ued = documents["a.ued.json"]
    reordered = dict(reversed(list(ued.items())))
    commented = "// an engine\n{ /* first */\n" + json.dumps(reordered)[1:].replace(
        ",", ",  // more\n", 1
    )
    result = load(write_tree(tmp_path, {**documents, "copy/a.ued.json": commented}))
    assert summary(result) == CANONICAL
    assert len(found(result, "D302")) == 1 and found(result, "D304") == []


def test_a_boolean_never_equals_a_number(tmp_path):
    documents = make_set_documents()
    first = kernel("a", K1, "a.f32_64", 64, "FLOAT", metadata={"block_size": 1, "dtype": "F"})
    second = kernel("a", K1, "a.f32_64", 64, "FLOAT", metadata={"block_size": True, "dtype": "F"})
    write_tree(tmp_path, {"one/k.ukd.json": first, "two/k.ukd.json": second, **documents})
    assert len(found(load(tmp_path), "D304")) == 1


def test_an_integer_equals_the_same_float(tmp_path):
    documents = make_set_documents()
    first = kernel("a", UKD, "k", 64, "FLOAT", metadata={"block_size": 1, "dtype": "F"})
    second = kernel("a", UKD, "k", 64, "FLOAT", metadata={"block_size": 1.0, "dtype": "F"})
    write_tree(tmp_path, {"one/k.ukd.json": first, "two/k.ukd.json": second, **documents})
    assert len(found(load(tmp_path), "D302")) == 1


# --- arch -----------------------------------------------------------------------------------------


def _pack_with_reference(tmp_path, pack_arch, kernel_arches):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"] = [uid("a", UKD)]
    if pack_arch is not None:
        documents["a.kdp.json"]["arch"] = pack_arch
    for i, arch in enumerate(kernel_arches):
        standalone = kernel("a", UKD, f"k{i}", 64, "FLOAT")
        if arch is not None:
            standalone["arch"] = arch
        documents[f"k{i}.ukd.json"] = standalone
    return load(write_tree(tmp_path, documents))


def test_resolves_an_arch_independent_kernel_from_an_arch_specific_pack(tmp_path):
    result = _pack_with_reference(tmp_path, ["gfx942"], [None])
    assert summary(result) == {"test:EngineA": {"a:pack": ["k0"]}}


def test_resolves_a_standalone_kernel_covering_part_of_the_packs_arch(tmp_path):
    result = _pack_with_reference(tmp_path, ["gfx942", "gfx950"], [["gfx942"]])
    assert summary(result) == {"test:EngineA": {"a:pack": ["k0"]}}


def test_drops_a_pack_whose_kernel_reaches_past_its_arch(tmp_path):
    result = _pack_with_reference(tmp_path, ["gfx942"], [["gfx942", "gfx950"]])
    assert result.sets == []
    assert found(result, "D414") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel {uid('a', UKD)}, which declares arch "
        "[gfx942, gfx950] reaching past the pack's [gfx942]; dropping the pack"
    ]


def test_rejects_a_kernel_defined_both_arch_independently_and_per_arch(tmp_path):
    result = _pack_with_reference(tmp_path, ["gfx942"], [None, ["gfx942"]])
    assert found(result, "D412") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel {uid('a', UKD)}, which several "
        "descriptors define within the pack's arch; dropping the pack"
    ]


def test_drops_a_pack_whose_kernel_is_defined_only_for_another_arch(tmp_path):
    result = _pack_with_reference(tmp_path, ["gfx942"], [["gfx950"]])
    assert found(result, "D415") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel {uid('a', UKD)}, which is defined only "
        "for another arch; dropping the pack"
    ]


def test_treats_a_shorter_arch_list_as_narrower_than_the_one_containing_it(tmp_path):
    narrower = _pack_with_reference(tmp_path / "1", ["gfx942", "gfx950"], [["gfx942"]])
    wider = _pack_with_reference(tmp_path / "2", ["gfx942"], [["gfx942", "gfx950"]])
    assert len(narrower.sets) == 1 and wider.sets == []


def _inline_arch(tmp_path, pack_arch, kernel_arch):
    documents = make_set_documents()
    documents["a.kdp.json"]["arch"] = pack_arch
    documents["a.kdp.json"]["kernelDescriptors"][0]["arch"] = kernel_arch
    return load(write_tree(tmp_path, documents))


def test_narrows_an_inline_kernel_to_part_of_its_packs_arch(tmp_path):
    result = _inline_arch(tmp_path, ["gfx942", "gfx950"], ["gfx942"])
    (engine,) = result.sets
    seen = {
        device: [k.name for _, kernels in visible_to(engine, device) for k in kernels]
        for device in ("gfx942", "gfx950:sramecc+:xnack-")
    }
    assert seen == {
        "gfx942": ["a.f32_64", "a.f32_256", "a.f16_64"],
        "gfx950:sramecc+:xnack-": ["a.f32_256", "a.f16_64"],
    }


def test_rejects_an_inline_kernel_reaching_past_its_packs_arch(tmp_path):
    result = _inline_arch(tmp_path, ["gfx942"], ["gfx942", "gfx950"])
    assert found(result, "D210") == [
        f"\"{tmp_path}/a.kdp.json\" is not a valid descriptor: kernel 'a.f32_64' in "
        f'"{tmp_path}/a.kdp.json" declares arch [gfx942, gfx950], which reaches past the '
        "pack's [gfx942]"
    ]


def test_carries_a_packs_declared_architectures(tmp_path):
    documents = edited(make_set_documents(), "a.kdp.json", arch=["gfx950", "gfx942"])
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.packs[0].arch == ("gfx950", "gfx942")


def test_accepts_generic_target_ids(tmp_path):
    arch = ["gfx9-4-generic", "gfx94", "gfx90a", "gfx1151", "gfx942"]
    documents = edited(make_set_documents(), "a.kdp.json", arch=arch)
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.packs[0].arch == tuple(arch)


def test_a_pack_with_no_declared_arch_is_arch_independent(tmp_path):
    (engine,) = load(write_tree(tmp_path, make_set_documents())).sets
    assert [len(k) for _, k in visible_to(engine, "gfx1201")] == [3]


def test_an_explicitly_empty_arch_is_arch_independent(tmp_path):
    documents = edited(make_set_documents(), "a.kdp.json", arch=[])
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.packs[0].arch == () and [len(k) for _, k in visible_to(engine, "gfx90a")] == [3]


def test_a_device_outside_the_pack_arch_sees_nothing(tmp_path):
    documents = edited(make_set_documents(), "a.kdp.json", arch=["gfx942"])
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert list(visible_to(engine, "gfx1100")) == []


# --- roots ----------------------------------------------------------------------------------------


def test_resolves_a_descriptor_set_split_across_two_roots_into_one_engine(tmp_path):
    items = list(make_set_documents().items())
    one = write_tree(tmp_path / "one", dict(items[:3]))
    two = write_tree(tmp_path / "two", dict(items[3:]))
    assert summary(load(one, two)) == CANONICAL


def test_collapses_an_identical_descriptor_set_present_in_both_roots(tmp_path):
    one = write_tree(tmp_path / "one", make_set_documents())
    two = write_tree(tmp_path / "two", make_set_documents())
    result = load(one, two)
    assert summary(result) == CANONICAL and len(found(result, "D302")) == 7


def test_refuses_a_drop_in_redefining_an_installed_id(tmp_path):
    installed = write_tree(tmp_path / "installed", make_set_documents())
    changed = edited(make_set_documents(), "a.ued.json", knobs=[])
    drop_in = write_tree(tmp_path / "drop-in", {"a.ued.json": changed["a.ued.json"]})
    result = load(installed, drop_in)
    assert summary(result) == CANONICAL
    assert found(result, "D303") == [
        f"\"{drop_in}/a.ued.json\" redefines .ued.json id={uid('a', UED)} name='test:EngineA' "
        "under an earlier root; ignoring the redefinition"
    ]
    assert result.sets[0].engine.body.knobs == ("block_size",)


def test_loads_an_engine_that_only_the_drop_in_root_defines(tmp_path):
    installed = write_tree(tmp_path / "installed", make_set_documents("a"))
    drop_in = write_tree(tmp_path / "drop-in", make_set_documents("b"))
    assert sorted(summary(load(installed, drop_in))) == ["test:EngineA", "test:EngineB"]


def test_validates_an_engine_coming_only_from_the_drop_in_root(tmp_path):
    installed = write_tree(tmp_path / "installed", make_set_documents("a"))
    drop_in = write_tree(tmp_path / "drop-in", make_set_documents("b"))
    result = load(installed, drop_in, registry=symbols_for("a"))
    assert list(summary(result)) == ["test:EngineA"]
    assert found(result, "D501")[0] == (
        f"engine 'test:EngineB' id={uid('b', UED)} names "
        "unregistered match symbol 'b.graph'; dropping it"
    )


def test_a_missing_root_contributes_nothing_but_the_other_root_still_loads(tmp_path):
    result = load(tmp_path / "absent", write_tree(tmp_path / "present", make_set_documents()))
    assert summary(result) == CANONICAL and len(found(result, "D101")) == 1


def test_provider_roots_follow_the_environment(tmp_path):
    installed, override, runtime = (tmp_path / n for n in ("installed", "override", "runtime"))
    for directory in (installed, override, runtime):
        directory.mkdir()
    assert provider_roots([installed], {}) == [installed]
    assert provider_roots(
        [installed],
        {"HIPDNN_DESCRIPTOR_DIR": str(override), "HIPDNN_DESCRIPTOR_RUNTIME_DIR": str(runtime)},
    ) == [override, runtime]
    diags = Diagnostics()
    roots = provider_roots(
        [installed],
        {
            "HIPDNN_DESCRIPTOR_DIR": str(tmp_path / "no"),
            "HIPDNN_DESCRIPTOR_RUNTIME_DIR": str(tmp_path / "nor"),
        },
        diags=diags,
    )
    assert roots == [installed]
    assert [d.message for d in diags.at_least(Level.WARN)] == [
        f'HIPDNN_DESCRIPTOR_DIR "{tmp_path / "no"}" is not a directory; ignoring it',
        f'HIPDNN_DESCRIPTOR_RUNTIME_DIR "{tmp_path / "nor"}" is not a directory; ignoring it',
    ]


def test_the_walk_skips_nothing_hidden_and_follows_no_directory_symlink(tmp_path):
    documents = make_set_documents()
    write_tree(tmp_path / "real", {f".hidden/{n}": d for n, d in documents.items()})
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real")
    result = load(tmp_path / "real")
    assert summary(result) == CANONICAL and found(result, "D302") == []


def test_a_file_symlink_counts_and_a_dangling_one_is_reported(tmp_path):
    documents = make_set_documents()
    write_tree(tmp_path / "store", documents)
    root = tmp_path / "root"
    root.mkdir()
    for name in documents:
        (root / name).symlink_to(tmp_path / "store" / name)
    (root / "gone.ued.json").symlink_to(tmp_path / "nowhere.json")
    result = load(root)
    assert summary(result) == CANONICAL
    (message,) = found(result, "D102")
    assert message.startswith(f'skipping "{root}/gone.ued.json": ')
    shutil.rmtree(tmp_path / "store")


def test_engine_id_vectors():
    assert engine_id("hipkernel:Gfx950AttentionDense") == -8518255706404043867
    assert engine_hex(engine_id("hipkernel:Gfx950AttentionDense")) == "0x89C9139111D7C3A5"
    assert engine_id("hipkernel:FlydslAttention") == 5031429073904537099
    assert engine_hex(engine_id("hipkernel:FlydslAttention")) == "0x45D33A15C6A70E0B"


def test_an_undecodable_file_name_is_reported(tmp_path):
    write_tree(tmp_path, make_set_documents())
    os.close(os.open(os.fsencode(tmp_path) + b"/\xff.ued.json", os.O_CREAT | os.O_WRONLY))
    result = load(tmp_path)
    assert summary(result) == CANONICAL
    (message,) = found(result, "D103")
    assert message.startswith(f'skipping an entry under "{tmp_path}": undecodable name')


def test_the_walk_gives_up_after_64_consecutive_errors(tmp_path):
    for i in range(70):
        (tmp_path / f"dangling{i:02}.ued.json").symlink_to(tmp_path / f"none{i}")
    result = load(tmp_path)
    assert problems(result).count("D102") == 64
    assert found(result, "D105") == [
        f'giving up on "{tmp_path}" after 64 consecutive errors; the walk is not advancing'
    ]


def test_diagnostics_also_go_to_python_logging(tmp_path, caplog):
    caplog.set_level("INFO", logger="gfxpack.descriptors")
    result = load(write_tree(tmp_path, edited(make_set_documents(), "a.ued.json", _note="x")))
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("WARNING", f"descriptor loader: {found(result, 'D207')[0]} [D207]") in logged
    assert len(logged) == len(result.diagnostics.items)


# --- a reference to a rejected file ----------------------------------------------------------


def _rejecting(file: str) -> dict:
    """The canonical set with one file rejected by a misspelt key (D208)."""
    return edited(make_set_documents(), file, heuristik="x")


@pytest.mark.parametrize(
    ("file", "code", "message"),
    [
        (
            "a.kmd.json",
            "D405",
            f"engine 'test:EngineA' id={uid('a', UED)} names metadata schema "
            f'{uid("a", KMD)}, which no loaded descriptor defines: "{{file}}" does, but it '
            "was rejected (D208)",
        ),
        (
            "a.uhd.json",
            "D404",
            f"engine 'test:EngineA' id={uid('a', UED)} names heuristic {uid('a', UHD)}, which "
            'no loaded descriptor defines: "{file}" does, but it was rejected (D208)',
        ),
        (
            "a_kernel.umd.json",
            "D410",
            f"pack 'a:pack' id={uid('a', KDP)} names matcher {uid('a', UMD_KERNEL)}, which no "
            'loaded descriptor defines: "{file}" does, but it was rejected (D208); dropping '
            "the pack",
        ),
        (
            "a.udd.json",
            "D411",
            f"pack 'a:pack' id={uid('a', KDP)} names dispatch descriptor {uid('a', UDD)}, which "
            'no loaded descriptor defines: "{file}" does, but it was rejected (D208); dropping '
            "the pack",
        ),
        (
            "a.ued.json",
            "D409",
            f"pack 'a:pack' id={uid('a', KDP)} names engine {uid('a', UED)}, which no loaded "
            'descriptor defines: "{file}" does, but it was rejected (D208); dropping it',
        ),
        (
            "a.kdp.json",
            "D408",
            "engine 'test:EngineA' has no loadable kernel pack (\"{file}\" names it, but was "
            "rejected (D208)); dropping it",
        ),
    ],
)
def test_a_reference_to_a_rejected_file_says_it_was_rejected(tmp_path, file, code, message):
    """Not "which no descriptor defines": the file exists, and its own ERROR is the fix."""
    result = load(write_tree(tmp_path, _rejecting(file)))
    assert found(result, "D208") != []
    assert found(result, code) == [message.format(file=tmp_path / file)]


def test_a_reference_to_a_rejected_standalone_kernel_says_it_was_rejected(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"].append(uid("a", UKD))
    documents["k.ukd.json"] = kernel("a", UKD, "a.f32_128", 128, "FLOAT", priority=1.5)
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D413") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel {uid('a', UKD)}, which no loaded "
        f'descriptor defines: "{tmp_path / "k.ukd.json"}" does, but it was rejected (D209); '
        "dropping the pack"
    ]


def test_a_reference_to_a_skipped_newer_file_says_it_was_skipped(tmp_path):
    result = load(write_tree(tmp_path, edited(make_set_documents(), "a.kmd.json", version="1.1")))
    assert found(result, "D405") == [
        f"engine 'test:EngineA' id={uid('a', UED)} names metadata schema {uid('a', KMD)}, "
        f'which no loaded descriptor defines: "{tmp_path / "a.kmd.json"}" does, but it was '
        "skipped (D206)"
    ]


def test_a_conflicted_reference_keeps_the_spec_text(tmp_path):
    """A rejected copy beside two conflicting ones: the conflict is the cause (D304)."""
    documents = make_set_documents()
    documents["b.kmd.json"] = {**documents["a.kmd.json"], "name": "other"}
    documents["c.kmd.json"] = {**documents["a.kmd.json"], "heuristik": "x"}
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D405") == [
        f"engine 'test:EngineA' id={uid('a', UED)} names metadata schema {uid('a', KMD)}, "
        "which no descriptor defines"
    ]
