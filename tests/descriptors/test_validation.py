"""Validation before advertising: symbols, name collisions, the state-manager probe."""

from __future__ import annotations

import json

import pytest

from gfxpack.descriptors import EngineNames, SymbolRegistry, engine_hex, engine_id
from gfxpack.descriptors.registry import InvalidRegistry
from tests.descriptors.helpers import (
    CANONICAL,
    UED,
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

LABEL = f"engine 'test:EngineA' id={uid('a', UED)}"


def registry_without(kind, symbol, *, extra=None):
    symbols = {
        "graph_match": ["a.graph"],
        "kernel_match": ["a.kernel"],
        "dispatch": ["a.dispatch"],
        "score": ["a.score"],
    }
    symbols[kind] = [s for s in symbols[kind] if s != symbol]
    for key, values in (extra or {}).items():
        symbols[key] = symbols[key] + values
    return SymbolRegistry(symbols)


@pytest.mark.parametrize(
    ("kind", "symbol", "code", "message"),
    [
        ("graph_match", "a.graph", "D501", "names unregistered match symbol 'a.graph'"),
        ("kernel_match", "a.kernel", "D501", "names unregistered match symbol 'a.kernel'"),
        ("dispatch", "a.dispatch", "D502", "names unregistered dispatch symbol 'a.dispatch'"),
        ("score", "a.score", "D503", "names unregistered score symbol 'a.score'"),
    ],
    ids=["graph-matcher", "kernel-matcher", "dispatch", "score"],
)
def test_validation_drops_an_engine_naming_an_unregistered_symbol(
    tmp_path, kind, symbol, code, message
):
    result = load(
        write_tree(tmp_path, make_set_documents()), registry=registry_without(kind, symbol)
    )
    assert result.sets == []
    assert found(result, code) == [f"{LABEL} {message}; dropping it"]


def test_validation_drops_an_engine_naming_a_graph_symbol_as_its_kernel_scope_matcher(tmp_path):
    registry = registry_without("kernel_match", "a.kernel", extra={"graph_match": ["a.kernel"]})
    result = load(write_tree(tmp_path, make_set_documents()), registry=registry)
    assert found(result, "D501") == [
        f"{LABEL} names unregistered match symbol 'a.kernel'; dropping it"
    ]


def test_validation_drops_an_engine_naming_an_unregistered_graph_match_symbol(tmp_path):
    documents = edited(make_set_documents(), "a.ued.json", graph_match={"native": "a.gm"})
    result = load(write_tree(tmp_path, documents), registry=symbols_for("a"))
    assert found(result, "D504") == [
        f"{LABEL} names unregistered graph match symbol 'a.gm'; dropping it"
    ]


def test_every_check_runs_and_each_error_is_logged(tmp_path):
    result = load(write_tree(tmp_path, make_set_documents()), registry=SymbolRegistry({}))
    assert problems(result) == ["D501", "D501", "D502", "D503"]


def test_model_heuristics_are_not_symbol_checked(tmp_path):
    documents = edited(make_set_documents(), "a.uhd.json", kind="model", payload="m.bin")
    result = load(write_tree(tmp_path, documents), registry=registry_without("score", "a.score"))
    assert summary(result) == CANONICAL


def test_no_registry_skips_symbol_checks_and_says_so(tmp_path):
    result = load(write_tree(tmp_path, make_set_documents()))
    assert summary(result) == CANONICAL
    assert found(result, "D510") == ["no symbol registry supplied; symbol checks skipped"]


def test_validation_drops_an_engine_whose_kernels_share_a_metadata_tuple(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"].append(kernel("a", 12, "a.twin", 64, "FLOAT"))
    result = load(write_tree(tmp_path, documents))
    assert result.sets == []
    assert found(result, "D506") == [
        "engine 'test:EngineA' does not validate: kernels 'a.f32_64' and 'a.twin' share the "
        "metadata tuple (block_size=64, dtype=FLOAT) on overlapping arch; dropping it"
    ]


def test_a_default_completes_the_tuple_before_it_is_compared(tmp_path):
    documents = make_set_documents()
    twin = kernel("a", 12, "a.twin", 0, "FLOAT")
    del twin["metadata"]["block_size"]  # the default is 64, like a.f32_64
    documents["a.kdp.json"]["kernelDescriptors"].append(twin)
    assert problems(load(write_tree(tmp_path, documents))) == ["D506"]


def test_equal_tuples_on_disjoint_arches_are_legal(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["arch"] = ["gfx942", "gfx950"]
    kernels = documents["a.kdp.json"]["kernelDescriptors"]
    kernels[0]["arch"] = ["gfx942"]
    kernels.append({**kernel("a", 12, "a.twin", 64, "FLOAT"), "arch": ["gfx950"]})
    result = load(write_tree(tmp_path, documents))
    assert len(result.sets) == 1 and problems(result) == []


def test_two_packs_of_one_engine_sharing_a_kernel_fail_validation(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"] = [uid("a", 12)]
    second = {**documents["a.kdp.json"], "id": uid("c", 7), "name": "a:second"}
    documents.update(
        {"second.kdp.json": second, "k.ukd.json": kernel("a", 12, "shared", 64, "FLOAT")}
    )
    assert problems(load(write_tree(tmp_path, documents))) == ["D506"]


def test_validation_drops_an_engine_colliding_with_a_registered_name(tmp_path):
    names = EngineNames()
    names.register(engine_id("test:EngineA"), "test:EngineA", owner="a built-in engine")
    result = load(write_tree(tmp_path, make_set_documents()), names=names)
    assert found(result, "D505") == [
        f"{LABEL} collides with already-registered 'test:EngineA' on engine id "
        f"{engine_hex(engine_id('test:EngineA'))}; dropping it"
    ]


def test_validation_is_idempotent_across_reloads(tmp_path):
    names = EngineNames()
    root = write_tree(tmp_path, make_set_documents())
    first = load(root, names=names)
    second = load(root, names=names)
    assert summary(first) == summary(second) == CANONICAL
    assert problems(second) == []


def test_symbol_registry_files(tmp_path):
    as_json = tmp_path / "symbols.json"
    as_json.write_text(
        json.dumps(
            {
                "graph_match": ["a.graph"],
                "kernel_match": ["a.kernel"],
                "dispatch": ["a.dispatch"],
                "score": ["a.score"],
            }
        )
    )
    as_text = tmp_path / "symbols.txt"
    as_text.write_text(
        "# kind symbol\ngraph_match a.graph\nkernel_match a.kernel\n\n"
        "dispatch a.dispatch\nscore a.score  # the heuristic\n"
    )
    root = write_tree(tmp_path / "tree", make_set_documents())
    loaded = [summary(load(root, registry=SymbolRegistry.from_file(p))) for p in (as_json, as_text)]
    assert loaded == [CANONICAL, CANONICAL]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("r.json", "{", "not valid JSON"),
        ("r.json", '{"score": "x"}', "expected an object of kind"),
        ("r.json", '{"scores": []}', "unknown symbol kind(s) scores"),
        ("r.txt", "score\n", "r.txt:1: expected '<kind> <symbol>'"),
    ],
)
def test_bad_registry_files(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(InvalidRegistry, match=message.replace("(", r"\(").replace(")", r"\)")):
        SymbolRegistry.from_file(tmp_path / name)


def test_an_unknown_registry_kind_names_its_file(tmp_path):
    """Every registry error names the file it is in, the kind check too (issue 33)."""
    path = tmp_path / "r.json"
    path.write_text('{"dispatch": [], "scores": ["a.score"]}')
    with pytest.raises(InvalidRegistry) as raised:
        SymbolRegistry.from_file(path)
    assert str(raised.value) == (
        f"{path}: unknown symbol kind(s) scores; expected graph_match, kernel_match, "
        "dispatch, score"
    )
