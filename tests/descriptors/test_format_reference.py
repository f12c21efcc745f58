"""docs/reference/descriptor-format.md: every example on the page is a file gfxpack accepts.

Each titled code block is written at the path its title gives, the kpack archive
its kernel names is copied from examples/descriptors/, and the tree is linted and
loaded with the page's own symbol registries: an example that stops loading, a type
left without an example, or an example left out of this check fails here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gfxpack.descriptors import Level, SymbolRegistry
from gfxpack.descriptors.lint import lint, schema_errors
from gfxpack.descriptors.registry import KINDS
from gfxpack.descriptors.types import SUFFIXES
from tests.conftest import ROOT
from tests.descriptors.helpers import load, summary

PAGE = ROOT / "docs" / "reference" / "descriptor-format.md"
ARCHIVE = ROOT / "examples" / "descriptors" / "gfx942" / "kpack"
FENCE = "`" * 3
BLOCK = re.compile(rf'^{FENCE}(\w+) title="([^"]+)"\n(.*?)^{FENCE}$', re.MULTILINE | re.DOTALL)
REGISTRIES = ("symbols.json", "symbols.txt")


def examples() -> dict[str, str]:
    """title -> text of every titled code block on the page."""
    found: dict[str, str] = {}
    for _, title, text in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        assert title not in found, f"two examples titled {title}"
        found[title] = text
    return found


def descriptor_tree(directory: Path) -> Path:
    tree = directory / "tree"
    for title, text in examples().items():
        if title not in REGISTRIES:
            (tree / title).parent.mkdir(parents=True, exist_ok=True)
            (tree / title).write_text(text, encoding="utf-8")
    shutil.copytree(ARCHIVE, tree / "gfx942" / "kpack")
    return tree


def registry(directory: Path, name: str) -> SymbolRegistry:
    path = directory / name
    path.write_text(examples()[name], encoding="utf-8")
    return SymbolRegistry.from_file(path)


def test_every_example_is_checked_and_every_type_has_one():
    page = PAGE.read_text(encoding="utf-8")
    titled = examples()
    # Every JSON block carries a title, so none escapes the load below.
    assert page.count(f"{FENCE}json") == sum(1 for t in titled if t.endswith(".json"))
    descriptors = [t for t in titled if t not in REGISTRIES]
    assert {s for s in SUFFIXES if any(t.endswith(s) for t in descriptors)} == set(SUFFIXES)
    assert all(t.endswith(tuple(SUFFIXES)) for t in descriptors), descriptors
    assert set(REGISTRIES) <= set(titled)


@pytest.mark.parametrize("title", [t for t in examples() if t not in REGISTRIES])
def test_each_example_passes_its_schema(title):
    suffix = next(s for s in SUFFIXES if title.endswith(s))
    assert schema_errors(json.loads(examples()[title]), suffix) == []


def test_the_examples_load_as_one_engine_with_no_problem(tmp_path):
    tree = descriptor_tree(tmp_path)
    result = load(tree, registry=registry(tmp_path, "symbols.json"))
    assert [(d.code, d.message) for d in result.diagnostics.at_least(Level.WARN)] == []
    assert summary(result) == {
        "example:PointwiseAdd": {
            "example:pointwise_add": [
                "pointwise_add.float_block256",
                "pointwise_add.half_block64",
                "pointwise_add.float_block64",
            ]
        }
    }
    # The kpack kernel was checked against the archive, not taken on trust.
    (kernel,) = [k for p in result.sets[0].packs for k in p.kernels if k.source.kind == "kpack"]
    assert kernel.arch == ("gfx942",)


def test_the_examples_lint_clean(tmp_path):
    linted = lint([descriptor_tree(tmp_path)], registry(tmp_path, "symbols.json"))
    assert not linted.failed and linted.problems == [] and linted.unchecked == []
    assert len(linted.files) == len(examples()) - len(REGISTRIES)


def test_both_registry_forms_hold_the_same_symbols(tmp_path):
    as_json = registry(tmp_path, "symbols.json")
    as_text = registry(tmp_path, "symbols.txt")
    listed = json.loads(examples()["symbols.json"])
    assert sorted(listed) == sorted(KINDS)
    for kind, symbols in listed.items():
        assert symbols and all(as_text.has(kind, s) and as_json.has(kind, s) for s in symbols)
    # The engine loads with the text form too: it names every symbol the tree uses.
    result = load(descriptor_tree(tmp_path), registry=as_text)
    assert [d.code for d in result.diagnostics.at_least(Level.WARN)] == []
    assert list(summary(result)) == ["example:PointwiseAdd"]


def test_a_kpack_example_with_a_wrong_digest_would_fail(tmp_path):
    """The referee is real: the same tree with the sha256 changed drops the pack (D423)."""
    tree = descriptor_tree(tmp_path)
    kernel = tree / "gfx942" / "pointwise" / "add_float_block64.ukd.json"
    kernel.write_text(kernel.read_text().replace("c48e4e3a", "d48e4e3a"))
    result = load(tree, registry=registry(tmp_path, "symbols.json"))
    assert "D423" in [d.code for d in result.diagnostics.items]
