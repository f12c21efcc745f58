"""Small modules: no module of src/gfxpack is over :data:`LIMIT` lines unless the first
paragraph of its docstring says why it is one module, in a sentence that begins
:data:`REASON` (docs/development.md, "Module size"). A reader opening a long module
sees at once why it is long; one without that reason is split."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import SRC, modules

LIMIT = 600
REASON = "One module, past 600 lines, because "

# Modules over the limit with no reason yet, each split under the issue item it names;
# this list only shrinks. module name -> the issue item
TOO_LONG: dict[str, str] = {
    # checking the set of wheels and writing the pages are two steps, two modules
    "gfxpack.wheels.index": "issue 32 item 5",
}


def line_count(path: Path) -> int:
    with open(path, "rb") as file:
        return sum(1 for _ in file)


def first_paragraph(source: str) -> str:
    """The first paragraph of a module's docstring, its lines joined by single spaces."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    return " ".join(docstring.split("\n\n", 1)[0].split())


def says_why(path: Path) -> bool:
    return REASON in first_paragraph(path.read_text(encoding="utf-8"))


def long_modules() -> dict[str, Path]:
    return {name: path for name, path in modules().items() if line_count(path) > LIMIT}


def test_the_reason_counts_in_the_first_paragraph_only() -> None:
    # The reader itself: a reason wrapped over lines counts, one further down does not.
    wrapped = "'''Reads. One module, past\n600 lines, because x.\n\nMore.'''"
    assert first_paragraph(wrapped) == "Reads. One module, past 600 lines, because x."
    below = "'''Reads.\n\nOne module, past 600 lines, because x.'''"
    assert first_paragraph(below) == "Reads." and REASON not in first_paragraph(below)


def test_a_long_module_says_why_in_its_first_paragraph() -> None:
    found = long_modules()
    assert found, f"no module of {SRC} over {LIMIT} lines: the count is not being made"
    unexplained = [
        f"{path.relative_to(SRC)}: {line_count(path)} lines"
        for name, path in sorted(found.items())
        if not says_why(path) and name not in TOO_LONG
    ]
    assert not unexplained, (
        f"over {LIMIT} lines with no {REASON!r}... in the docstring's first paragraph "
        "(split the module, or say why it is one):\n" + "\n".join(unexplained)
    )


def test_every_listed_module_is_still_long_and_unexplained() -> None:
    # An entry whose module was split, or now says why, is removed: the list only shrinks.
    found = long_modules()
    stale = [name for name in TOO_LONG if name not in found or says_why(found[name])]
    assert not stale, "no longer too long without a reason, remove from TOO_LONG: " + ", ".join(
        stale
    )
