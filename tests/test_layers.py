"""Dependencies point down: the import graph of src/gfxpack has no cycle, no upward edge
and no import of another module's private name.

The graph is read from the source with ``ast``, so every import counts: at module
level, inside functions, and under ``if TYPE_CHECKING:`` (an import only the type
checker runs is still a dependency a reader has to follow). The layers are the ones
docs/explanation/how-it-works.md draws ("Layers", which says where they refine
DESIGN.md's first sketch); :data:`LAYERS` below is their one machine-readable copy,
and a test keeps the drawing equal to it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from gfxpack.plan.checks import strongly_connected

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "gfxpack"

# DESIGN.md's layers, top first. A module belongs to the layer of the longest entry
# that is its name or a package holding it; it may import its own layer (the cycle
# check keeps those edges acyclic) and the layers below, never one above.
# Where the code decides what DESIGN.md's drawing left open: formats/ sits below
# plan/ and config (the planner and package.json spell names and relations with a
# format's facts, and formats/ needs neither); artifacts (routing a tree's files into
# a plan's packages) sits above plan/; outdir (OUT's index and lock names) is a
# bottom utility.
LAYERS: list[tuple[str, ...]] = [
    # parse arguments, call the library, print
    ("gfxpack.cli", "gfxpack.__main__"),
    # the pipeline as one call, and the starter package.json it begins from
    ("gfxpack.release", "gfxpack.starter"),
    # producers: jobs and runners, the splitter and joiner, merging, sharding, signing,
    # and what looks at the machine (detect), tries an install (trial) or probes an
    # installed root (probe)
    (
        "gfxpack.build",
        "gfxpack.dask_executor",
        "gfxpack.fatbin",
        "gfxpack.wheels",
        "gfxpack.detect",
        "gfxpack.merge",
        "gfxpack.shard",
        "gfxpack.sign",
        "gfxpack.trial",
        "gfxpack.probe",
        "gfxpack.image",
    ),
    # The consumers of a plan or of built packages, each owning its per-format adapter
    # (a backend per format name), in the six layers their imports make: publishing
    # and checking a repository interleave, as repo/ keeps what its indexes resolve to
    # (kept_dependencies reads the repository back) and verify checks repo's package
    # signatures, both on the readers beneath.
    # What a plan, a build or a repository say, for people
    ("gfxpack.report", "gfxpack.why", "gfxpack.diff", "gfxpack.inventory"),
    # a repository checked: integrity, package signatures, resolution, the rules
    ("gfxpack.verify",),
    # publishing: pools, indexes, generations, streams, one backend per format
    ("gfxpack.repo",),
    # a repository read back: its indexes checked and loaded with the system's packages
    ("gfxpack.verify.universe", "gfxpack.verify.system", "gfxpack.verify.integrity"),
    # package files and indexes read, and the --in inputs checked
    ("gfxpack.repo.debfile", "gfxpack.repo.rpmfile", "gfxpack.repo.inputs"),
    # a plan seen: renderings, its graph, its alternatives' scripts; artifacts routes a
    # tree's files into a plan's packages
    ("gfxpack.views", "gfxpack.graphviz", "gfxpack.alternatives", "gfxpack.artifacts"),
    # the pure planner
    ("gfxpack.plan",),
    # inputs and domain tables
    (
        "gfxpack.config",
        "gfxpack.artifact_layout",
        "gfxpack.artifact_files",
        "gfxpack.kpack",
        "gfxpack.descriptors",
        "gfxpack.amdgpu",
        "gfxpack.file_arch",
    ),
    # format facts and writers: the plan and package.json spell names with them
    ("gfxpack.formats",),
    # utilities everything may use
    (
        "gfxpack",
        "gfxpack._io",
        "gfxpack._gc",
        "gfxpack.errors",
        "gfxpack.units",
        "gfxpack.relations",
        "gfxpack.regular_files",
        "gfxpack.safe_tree",
        "gfxpack.text_fields",
        "gfxpack.epoch",
        "gfxpack.outdir",
        "gfxpack.build_index",
        "gfxpack.sandbox",
    ),
]

# Edges that break the rules today and are being removed under the issue item each
# names; this list only shrinks. (importer, imported)
# Empty now; an entry names the issue item removing it, e.g.
#     ("gfxpack.fatbin.split", "gfxpack.artifacts"): "issue 24 item 3",
KNOWN: dict[tuple[str, str], str] = {}

# Module names that start with "_" but are public modules of the bottom layer:
# importing them (or names from them) is using the module, not reaching into one.
PUBLIC_UNDERSCORE_MODULES = {"gfxpack._io", "gfxpack._gc", "gfxpack.__main__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {module_name(path): path for path in (SRC / PACKAGE).rglob("*.py")}
    assert len(found) > 50, f"expected the gfxpack sources under {SRC}"
    return found


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (``from . import x``, ``from ..a import b``)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()  # a module's relative imports start at the package holding it
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_in(
    source: str, name: str, is_package: bool, known: set[str]
) -> Iterator[tuple[str, str | None, int]]:
    """(module, imported name or None, line) of every gfxpack import in the source of
    module ``name``, wherever in it the import statement is."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                # from gfxpack.formats import deb: the submodule, not the package
                sub = f"{target}.{alias.name}"
                if sub in known:
                    yield sub, None, node.lineno
                else:
                    yield target, alias.name, node.lineno


def imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, str | None, int]]:
    return imports_in(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)


@functools.cache
def all_imports() -> dict[str, list[tuple[str, str | None, int]]]:
    """module -> its gfxpack imports (:func:`imports`), read once per test run."""
    found = modules()
    known = set(found)
    return {name: list(imports(name, path, known)) for name, path in sorted(found.items())}


@functools.cache
def graph() -> dict[str, dict[str, int]]:
    """importer -> {imported module -> first line}, gfxpack modules only."""
    known = set(modules())
    edges: dict[str, dict[str, int]] = {}
    for name, found in all_imports().items():
        out = edges.setdefault(name, {})
        for target, _, line in found:
            # import gfxpack.a.b depends on gfxpack.a.b (and runs gfxpack.a's __init__,
            # which is its own module's concern, not this edge's)
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != name:
                out.setdefault(target, line)
    return edges


def layer_of(name: str) -> int:
    best: tuple[int, int] | None = None  # (length of the entry, layer)
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            if (name == entry or name.startswith(entry + ".")) and (
                best is None or len(entry) > best[0]
            ):
                best = (len(entry), index)
    assert best is not None, f"{name} is in no layer: add it to LAYERS (and DESIGN.md)"
    return best[1]


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (the
    planner's own component finder, which also finds package.json's cycles)."""
    graph = {node: sorted(out) for node, out in edges.items()}
    return sorted(sorted(c) for c in strongly_connected(graph) if len(c) > 1)


def without_known(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {
        src: {dst: line for dst, line in out.items() if (src, dst) not in KNOWN}
        for src, out in edges.items()
    }


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    # The reader itself: an import inside a function, one under TYPE_CHECKING, a
    # relative one and a plain one each make an edge; a stdlib import makes none.
    source = (
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gfxpack.repo import apt\n"
        "def f():\n    from gfxpack.verify.universe import Universe\n"
        "from .deb import write\n"
        "import gfxpack.errors\n"
    )
    seen = {
        target
        for target, _, _ in imports_in(source, "gfxpack.formats.probe", False, set(modules()))
    }
    assert seen == {
        "gfxpack.repo.apt",
        "gfxpack.verify.universe",
        "gfxpack.formats.deb",
        "gfxpack.errors",
    }


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_import_cycle() -> None:
    found = cycles(without_known(graph()))
    assert not found, "import cycles (imports inside functions and TYPE_CHECKING count):\n" + (
        "\n".join(" <-> ".join(component) for component in found)
    )


def test_no_upward_import() -> None:
    edges = graph()
    assert sum(len(out) for out in edges.values()) > 200  # the graph was read
    upward = [
        f"{src} (layer {layer_of(src)}) imports {dst} (layer {layer_of(dst)}) at line {line}"
        for src, out in edges.items()
        for dst, line in out.items()
        if layer_of(dst) < layer_of(src) and (src, dst) not in KNOWN
    ]
    assert not upward, "upward imports (layers as drawn, top = 0):\n" + "\n".join(upward)


def test_no_private_name_is_imported_from_another_module() -> None:
    private = [
        f"{name}:{line} imports {target}.{imported}"
        for name, found in all_imports().items()
        for target, imported, line in found
        if imported is not None
        and imported.startswith("_")
        and not imported.startswith("__")
        and target != name
        and (name, target) not in KNOWN
    ]
    private_modules = [
        f"{name}:{line} imports the private module {target}"
        for name, found in all_imports().items()
        for target, _, line in found
        if target.rsplit(".", 1)[-1].startswith("_")
        and target not in PUBLIC_UNDERSCORE_MODULES
        and target.rsplit(".", 1)[0] != name.rsplit(".", 1)[0]
    ]
    assert not private + private_modules, "\n".join(private + private_modules)


def test_every_known_exception_is_still_needed() -> None:
    # An entry whose edge is gone is removed, so the list only shrinks.
    edges = graph()
    stale = [f"{src} -> {dst}" for src, dst in KNOWN if dst not in edges.get(src, {})]
    assert not stale, "gone, remove from KNOWN: " + ", ".join(stale)


DRAWING = SRC.parent / "docs" / "explanation" / "how-it-works.md"


def drawn_modules(line: str) -> list[str]:
    """The module names among the first words of a line of the drawing, dotted: ``views/``
    is views, ``verify/universe`` verify.universe.

    >>> drawn_modules("views/  verify/universe  a plan (seen: e.g. -> x")
    ['views', 'verify.universe', 'a', 'plan', 'x']
    """
    dotted = (word.rstrip("/").replace("/", ".") for word in line.split()[:12])
    return [word for word in dotted if all(part.isidentifier() for part in word.split("."))]


def test_the_drawing_in_the_docs_is_the_table() -> None:
    """Each module of LAYERS is named in the docs' drawing, on a line no earlier than
    the modules of the layers above it and no later than those below: a layer added,
    moved or renamed here is drawn there too."""
    text = DRAWING.read_text(encoding="utf-8")
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    lines = [set(drawn_modules(line)) for line in block.splitlines()]
    previous = -1
    for layer in LAYERS:
        found = []
        for entry in layer:
            short = entry.removeprefix(f"{PACKAGE}.")
            if short in (PACKAGE, "__main__"):
                continue  # the package itself and python -m gfxpack: not drawn
            where = [n for n, words in enumerate(lines) if short in words]
            assert where, f"{short} (layer {layer}) is not in the drawing in {DRAWING}"
            found.append(where[0])
        assert found and min(found) >= previous, f"{layer} is drawn above the layer before it"
        previous = max(found)
