"""The catalog: every loaded descriptor by key, duplicates judged by content and root."""

from __future__ import annotations

from gfxpack.descriptors import Diagnostics
from gfxpack.descriptors.catalog import canonical
from gfxpack.descriptors.loader import build_catalog
from tests.descriptors.helpers import KMD, UED, make_set_documents, uid, write_tree


def codes(diags: Diagnostics, *wanted: str) -> list[str]:
    return [d.code for d in diags.items if d.code in wanted]


def test_canonical_equality_is_the_specs():
    assert canonical({"a": 1, "b": [1.0, "x"]}) == canonical({"b": [1, "x"], "a": 1.0})
    assert canonical([True]) != canonical([1])
    assert canonical({"a": [1, 2]}) != canonical({"a": [2, 1]})


def test_every_descriptor_is_catalogued_by_type_and_id(tmp_path):
    documents = make_set_documents()
    diags = Diagnostics()
    catalog = build_catalog([write_tree(tmp_path, documents)], diags)
    assert len(catalog.entries) == len(documents)
    assert codes(diags, "D301") == ["D301"] * len(documents)
    (engine,) = catalog.of_type(".ued.json")
    assert engine.descriptor.id == uid("a", UED)
    assert catalog.healthy(".kmd.json", uid("a", KMD)).name == "a fields"
    assert [e.descriptor.name for e in catalog.packs_of(uid("a", UED))] == ["a:pack"]


def test_an_identical_copy_in_the_same_root_collapses(tmp_path):
    documents = make_set_documents()
    # The same document with its keys in another order: still identical.
    documents["copy/a.kmd.json"] = dict(reversed(list(documents["a.kmd.json"].items())))
    diags = Diagnostics()
    catalog = build_catalog([write_tree(tmp_path, documents)], diags)
    assert codes(diags, "D302", "D303", "D304") == ["D302"]
    assert catalog.healthy(".kmd.json", uid("a", KMD)) is not None


def test_a_different_copy_in_the_same_root_conflicts_both_away(tmp_path):
    documents = make_set_documents()
    documents["copy/a.kmd.json"] = {**documents["a.kmd.json"], "name": "other fields"}
    diags = Diagnostics()
    catalog = build_catalog([write_tree(tmp_path, documents)], diags)
    assert codes(diags, "D302", "D303", "D304") == ["D304"]
    assert catalog.healthy(".kmd.json", uid("a", KMD)) is None
    assert catalog.entries[".kmd.json", uid("a", KMD)].conflicted


def test_a_later_root_cannot_redefine_a_settled_descriptor(tmp_path):
    documents = make_set_documents()
    first = write_tree(tmp_path / "first", documents)
    second = write_tree(
        tmp_path / "second", {"a.kmd.json": {**documents["a.kmd.json"], "name": "redefined"}}
    )
    diags = Diagnostics()
    catalog = build_catalog([first, second], diags)
    assert codes(diags, "D302", "D303", "D304") == ["D303"]
    assert catalog.healthy(".kmd.json", uid("a", KMD)).name == "a fields"
