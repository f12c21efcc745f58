"""gfxpack.trial's clients: each owns what its format needs, so nothing else in the
package asks which format or which client it has."""

from __future__ import annotations

import ast
from pathlib import Path

import gfxpack.trial
from gfxpack.formats import FORMATS
from gfxpack.trial import CLIENTS
from gfxpack.trial.clients import skipping_scripts

PACKAGE = Path(gfxpack.trial.__file__).parent
# What a branch on the format or the client would compare with.
FORMAT_OBJECTS = {fmt.title for fmt in FORMATS}
NAMES = {*CLIENTS, *(fmt.name for fmt in FORMATS)}


def branches(source: str) -> list[int]:
    """The lines of ``source`` comparing something with a format (DEB, RPM) or with a
    client's or format's name ("apt", "rpm", ...)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if (isinstance(operand, ast.Name) and operand.id in FORMAT_OBJECTS) or (
                    isinstance(operand, ast.Constant) and operand.value in NAMES
                ):
                    found.append(node.lineno)
    return found


def test_the_branch_finder_finds_both_kinds():
    assert branches("if fmt is DEB:\n    pass\nx = client.name == 'dnf'\n") == [1, 3]
    assert branches("x = CLIENTS['dnf']\nif fmt.signs_packages:\n    pass\n") == []


def test_no_module_of_the_package_branches_on_the_format_or_the_client():
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 5
    found = [
        f"{path.name}:{line}"
        for path in modules
        for line in branches(path.read_text(encoding="utf-8"))
    ]
    assert not found, "ask the client (gfxpack.trial.clients) instead: " + ", ".join(found)


def test_each_client_installs_its_own_format_and_says_whether_it_skips_scripts():
    assert {name: client.fmt.name for name, client in CLIENTS.items()} == {
        "apt": "deb",
        "dnf": "rpm",
        "zypper": "rpm",
    }
    assert all(client.name == name for name, client in CLIENTS.items())
    assert skipping_scripts() == ["dnf"]
