"""Packs and references, metadata and knobs, UED rules and disabled engines (checklist §14)."""

from __future__ import annotations

import pytest

from gfxpack.descriptors import engine_hex, engine_id
from gfxpack.descriptors.resolve import completed_metadata
from tests.descriptors.helpers import (
    CANONICAL,
    K1,
    KDP,
    UED,
    UHD,
    UKD,
    edited,
    found,
    kernel,
    load,
    make_set_documents,
    problems,
    summary,
    uid,
    write_tree,
)


def with_pack(documents, **changes):
    return edited(documents, "a.kdp.json", **changes)


# --- packs and references ------------------------------------------------------------------------


def test_drops_only_the_pack_whose_matcher_is_missing(tmp_path):
    documents = make_set_documents()
    sibling = {
        **documents["a.kdp.json"],
        "id": uid("c", KDP),
        "name": "a:broken",
        "matchers": [uid("f", 4)],
        "kernelDescriptors": [kernel("c", K1, "c.k", 32, "FLOAT")],
    }
    result = load(write_tree(tmp_path, {**documents, "broken.kdp.json": sibling}))
    assert summary(result) == CANONICAL
    assert found(result, "D410") == [
        f"pack 'a:broken' id={uid('c', KDP)} names matcher "
        f"{uid('f', 4)}, which no descriptor defines; dropping the pack"
    ]


def test_drops_a_pack_whose_dispatch_is_missing(tmp_path):
    result = load(write_tree(tmp_path, with_pack(make_set_documents(), dispatch=uid("f", 6))))
    assert found(result, "D411") == [
        f"pack 'a:pack' id={uid('a', KDP)} names dispatch descriptor "
        f"{uid('f', 6)}, which no descriptor defines; dropping the pack"
    ]


def test_drops_an_engine_whose_only_pack_is_unresolvable(tmp_path):
    result = load(
        write_tree(tmp_path, with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD)]))
    )
    assert problems(result) == ["D413", "D408"]
    assert found(result, "D413") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel "
        f"{uid('a', UKD)}, which no descriptor defines; dropping the pack"
    ]


def test_drops_an_engine_whose_only_pack_declares_no_kernels(tmp_path):
    result = load(write_tree(tmp_path, with_pack(make_set_documents(), kernelDescriptors=[])))
    assert problems(result) == ["D424", "D408"]


def test_drops_an_engine_whose_metadata_schema_is_missing(tmp_path):
    documents = make_set_documents()
    del documents["a.kmd.json"]
    result = load(write_tree(tmp_path, documents))
    assert problems(result) == ["D405"]


def test_drops_an_engine_whose_heuristic_is_missing(tmp_path):
    documents = make_set_documents()
    del documents["a.uhd.json"]
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D404") == [
        f"engine 'test:EngineA' id={uid('a', UED)} names heuristic "
        f"{uid('a', UHD)}, which no descriptor defines"
    ]
    assert result.sets == []


def _standalone(role, name, block, dtype="FLOAT", **extra):
    return kernel("a", role, name, block, dtype, **extra)


def test_loads_a_pack_mixing_inline_and_referenced_kernels(tmp_path):
    documents = make_set_documents()
    entries = documents["a.kdp.json"]["kernelDescriptors"]
    documents["a.kdp.json"]["kernelDescriptors"] = [uid("a", UKD), *entries[:2]]
    documents["k.ukd.json"] = _standalone(UKD, "ref", 1024)
    result = load(write_tree(tmp_path, documents))
    # Inline kernels first, then the references, each in authored order.
    assert summary(result) == {"test:EngineA": {"a:pack": ["a.f32_64", "a.f32_256", "ref"]}}
    assert found(result, "D407") == []


def test_loads_a_pack_whose_kernels_are_all_references(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", 12), uid("a", 13)])
    documents["x.ukd.json"] = _standalone(12, "x", 64)
    documents["y.ukd.json"] = _standalone(13, "y", 128)
    assert summary(load(write_tree(tmp_path, documents))) == {
        "test:EngineA": {"a:pack": ["x", "y"]}
    }


def test_drops_a_pack_whose_engine_id_names_no_loaded_engine(tmp_path):
    result = load(write_tree(tmp_path, with_pack(make_set_documents(), engine=uid("f", 3))))
    assert found(result, "D409") == [
        f"pack 'a:pack' id={uid('a', KDP)} names engine {uid('f', 3)}, which no descriptor "
        "defines; dropping it"
    ]


def test_a_pack_of_a_dropped_engine_vanishes_silently(tmp_path):
    documents = make_set_documents()
    del documents["a.kmd.json"]
    assert "D409" not in problems(load(write_tree(tmp_path, documents)))


def test_drops_a_pack_naming_the_same_kernel_twice(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD), uid("a", UKD)])
    documents["k.ukd.json"] = _standalone(UKD, "k", 64)
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D416") == [
        f"pack 'a:pack' id={uid('a', KDP)} names kernel "
        f"{uid('a', UKD)} more than once; dropping the pack"
    ]


def test_drops_a_pack_whose_referenced_kernel_is_also_inline(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"].append(uid("a", K1))
    documents["k.ukd.json"] = _standalone(K1, "same", 999)
    assert problems(load(write_tree(tmp_path, documents))) == ["D416", "D408"]


def test_drops_a_pack_whose_referenced_kernel_conflicts(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD)])
    documents["one/k.ukd.json"] = _standalone(UKD, "k", 64)
    documents["two/k.ukd.json"] = _standalone(UKD, "k", 128)
    result = load(write_tree(tmp_path, documents))
    assert problems(result) == ["D304", "D413", "D408"]


def test_drops_a_pack_referencing_a_standalone_kernel_of_a_newer_ukd_version(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD)])
    documents["k.ukd.json"] = _standalone(UKD, "k", 64, version="1.1")
    assert problems(load(write_tree(tmp_path, documents))) == ["D206", "D413", "D408"]


def test_warns_about_a_standalone_kernel_no_pack_references(tmp_path):
    documents = make_set_documents()
    documents["k.ukd.json"] = _standalone(UKD, "lonely", 64)
    result = load(write_tree(tmp_path, documents))
    assert summary(result) == CANONICAL
    assert found(result, "D407") == [
        f"kernel 'lonely' id={uid('a', UKD)} loaded from \"{tmp_path}/k.ukd.json\", but no pack "
        "references it; it will never be dispatched"
    ]


def test_shares_a_standalone_kernel_between_two_engines(tmp_path):
    a = with_pack(make_set_documents("a"), kernelDescriptors=[uid("e", UKD)])
    b = make_set_documents("b")
    b["b.kdp.json"]["kernelDescriptors"] = [uid("e", UKD)]
    shared = kernel("e", UKD, "shared", 64, "FLOAT")
    result = load(write_tree(tmp_path, {**a, **b, "shared.ukd.json": shared}))
    assert summary(result) == {
        "test:EngineA": {"a:pack": ["shared"]},
        "test:EngineB": {"b:pack": ["shared"]},
    }


def test_rejects_a_standalone_kernel_with_no_version(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD)])
    documents["k.ukd.json"] = _standalone(UKD, "k", 64)
    del documents["k.ukd.json"]["version"]
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D204") == [
        f'"{tmp_path}/k.ukd.json" is not a valid descriptor: missing '
        "required key 'version' in .ukd.json"
    ]


def test_skips_a_standalone_kernel_on_an_unsupported_major(tmp_path):
    documents = with_pack(make_set_documents(), kernelDescriptors=[uid("a", UKD)])
    documents["k.ukd.json"] = _standalone(UKD, "k", 64, version="2.0")
    result = load(write_tree(tmp_path, documents))
    assert problems(result)[0] == "D206"


# --- metadata and knobs ---------------------------------------------------------------------------


def _with_fields(fields, *metadata):
    documents = make_set_documents()
    documents["a.kmd.json"]["fields"] = fields
    documents["a.ued.json"]["knobs"] = []
    documents["a.kdp.json"]["kernelDescriptors"] = [
        {**kernel("a", 8 + i, f"k{i}", 0, "X"), "metadata": values}
        for i, values in enumerate(metadata)
    ]
    return documents


def test_coerces_an_integer_value_for_a_float_field(tmp_path):
    documents = _with_fields(
        [{"name": "scale", "type": "float", "default_value": 1}], {"scale": 2}, {}
    )
    (engine,) = load(write_tree(tmp_path, documents)).sets
    values = [completed_metadata(k, engine.schema.body) for k in engine.packs[0].kernels]
    assert values == [(("scale", 2.0),), (("scale", 1.0),)]
    assert isinstance(values[0][0][1], float)


@pytest.mark.parametrize(
    ("metadata", "code", "reason"),
    [
        (
            {"dtype": 5},
            "D418",
            "kernel 'k0' sets metadata field 'dtype' with a value of the wrong type",
        ),
        (
            {"block_size": 1.5, "dtype": "F"},
            "D418",
            "kernel 'k0' sets metadata field 'block_size' with a value of the wrong type",
        ),
        (
            {"block_size": True, "dtype": "F"},
            "D418",
            "kernel 'k0' sets metadata field 'block_size' with a value of the wrong type",
        ),
        (
            {"block_size": 64},
            "D417",
            "kernel 'k0' omits metadata field 'dtype', which declares no default",
        ),
        (
            {"dtype": "F", "tile": 4},
            "D419",
            "kernel 'k0' sets metadata field 'tile', which schema 'a fields' does not declare",
        ),
    ],
    ids=[
        "string-field-given-int",
        "int-field-given-float",
        "int-field-given-bool",
        "omits-undefaulted",
        "undeclared",
    ],
)
def test_drops_a_pack_whose_metadata_contradicts_the_schema(tmp_path, metadata, code, reason):
    documents = _with_fields(make_set_documents()["a.kmd.json"]["fields"], metadata)
    result = load(write_tree(tmp_path, documents))
    assert found(result, code) == [f"pack 'a:pack' id={uid('a', KDP)} {reason}; dropping the pack"]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (None, "has a value of unsupported kind: null"),
        ({"a": 1}, 'has a value of unsupported kind: {"a": 1}'),
        ([1, True], "must be an integer, got true"),
        (2**63, f"{2**63} is too large"),
    ],
)
def test_metadata_values_of_unsupported_kinds(tmp_path, value, why):
    documents = _with_fields(
        make_set_documents()["a.kmd.json"]["fields"], {"dtype": "F", "x": value}
    )
    result = load(write_tree(tmp_path, documents))
    (message,) = found(result, "D209")
    assert message.endswith(why)


def test_int_lists_are_metadata(tmp_path):
    documents = _with_fields(
        [{"name": "tiles", "type": "int_list", "default_value": []}], {"tiles": [1, 2]}, {}
    )
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert [k.metadata for k in engine.packs[0].kernels] == [{"tiles": [1, 2]}, {}]


def test_drops_an_engine_whose_knob_names_no_schema_field(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", knobs=["tile"])
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D406") == [
        f"engine 'test:EngineA' id={uid('a', UED)} exposes knob "
        "'tile', which metadata schema 'a fields' does not declare"
    ]


def test_an_empty_knob_is_undeclared(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", knobs=[""])
    assert problems(load(write_tree(tmp_path, documents))) == ["D406"]


# --- UED rules (RFC 0020) -------------------------------------------------------------------------


def _colliding(tmp_path):
    a = make_set_documents("a", engine="test:Same")
    b = make_set_documents("b", engine="test:Same")
    return write_tree(tmp_path, {**a, **b})


def test_drops_every_engine_claiming_the_same_engine_id(tmp_path):
    result = load(_colliding(tmp_path))
    assert result.sets == []
    assert found(result, "D403") == [
        f"engine name 'test:Same' is claimed by more than one UED; dropping every one of them, "
        f"including id={uid(tag, UED)}. Disable all but one with HIPDNN_DISABLE_ENGINES"
        for tag in "ab"
    ]


def test_disabling_one_of_two_colliding_engines_lets_the_other_load(tmp_path):
    result = load(_colliding(tmp_path), disabled=uid("a", UED))
    assert [s.engine.id for s in result.sets] == [uid("b", UED)]
    assert found(result, "D401") == [
        f"engine 'test:Same' id={uid('a', UED)} is disabled by HIPDNN_DISABLE_ENGINES; skipping it"
    ]


IDENT = engine_id("test:EngineA")


@pytest.mark.parametrize(
    "entry",
    [
        "test:EngineA",
        uid("a", UED),
        uid("a", UED).upper(),
        engine_hex(IDENT),
        engine_hex(IDENT).lower(),
        str(IDENT),
        "other:engine, test:EngineA ,",
    ],
    ids=[
        "by-name",
        "by-uuid",
        "by-uppercase-uuid",
        "by-hex-id",
        "by-lowercase-hex-id",
        "by-decimal-id",
        "in-a-list",
    ],
)
def test_disabled_engine_identifier(tmp_path, entry):
    result = load(write_tree(tmp_path, make_set_documents()), disabled=entry)
    assert result.sets == [] and problems(result) == []
    assert len(found(result, "D401")) == 1


def test_ignores_a_disable_entry_that_names_no_loaded_engine(tmp_path):
    result = load(write_tree(tmp_path, make_set_documents()), disabled="nobody:here, ,0x1")
    assert summary(result) == CANONICAL


def test_accepts_an_engine_declaring_numerical_notes(tmp_path):
    documents = edited(
        make_set_documents(), "a.ued.json", numerical_notes=["accumulates in fp32", "deterministic"]
    )
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.engine.body.numerical_notes == ("accumulates in fp32", "deterministic")


@pytest.mark.parametrize(
    ("text", "version"), [(None, (1, 0, 0)), ("1.2.3", (1, 2, 3)), (" +2.04.5-rc1", (2, 4, 5))]
)
def test_sdk_version(tmp_path, text, version):
    documents = make_set_documents()
    if text is not None:
        documents["a.ued.json"]["sdk_version"] = text
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.engine.body.sdk_version == version


def test_graph_match_is_carried(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", graph_match={"native": "a.gm"})
    (engine,) = load(write_tree(tmp_path, documents)).sets
    assert engine.engine.body.graph_match == "a.gm"


def test_graph_match_keys_are_checked(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", graph_match={"native": "a", "via": 1})
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D208") == [
        f"unknown key 'via' in 'graph_match' in \"{tmp_path}/"
        "a.ued.json\"; extension keys must start with 'x-' or '_'"
    ]


def test_an_unsupported_version_drops_before_it_can_collide_by_name(tmp_path):
    b = edited(make_set_documents("b", engine="test:EngineA"), "b.ued.json", version="1.1")
    result = load(write_tree(tmp_path, {**make_set_documents("a"), **b}))
    assert "test:EngineA" in summary(result) and "D403" not in problems(result)


def test_an_unsupported_version_drops_before_it_can_collide_by_id(tmp_path):
    documents = make_set_documents()
    newer = {**documents["a.ued.json"], "version": "2.0", "knobs": []}
    result = load(write_tree(tmp_path, {**documents, "z/a.ued.json": newer}))
    assert summary(result) == CANONICAL and "D304" not in problems(result)
