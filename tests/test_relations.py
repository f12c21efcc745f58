"""DEB and RPM relation syntax: parsing, canonical rendering, rejection."""

from __future__ import annotations

import pytest

from gfxpack.relations import (
    Atom,
    InvalidRelation,
    parse_deb,
    parse_rpm,
    render_deb,
    render_rpm,
)


@pytest.mark.parametrize(
    ("text", "atoms"),
    [
        ("libc6", [Atom("libc6", text="libc6")]),
        ("libstdc++6|libstdc++8", [Atom("libstdc++6"), Atom("libstdc++8")]),
        ("python3 (>= 3.6.8)", [Atom("python3", ">=", "3.6.8", "python3 (>= 3.6.8)")]),
        ("foo (<< 2:1.0~rc1)", [Atom("foo", "<", "2:1.0~rc1", "foo (<< 2:1.0~rc1)")]),
        (
            "foo:any (>> 1) | bar [amd64]",
            [Atom("foo", ">", "1", "foo:any (>> 1)"), Atom("bar", text="bar [amd64]")],
        ),
    ],
)
def test_parse_deb(text, atoms):
    assert parse_deb(text).atoms == tuple(atoms)


@pytest.mark.parametrize(
    ("text", "names", "ops"),
    [
        ("glibc", ("glibc",), (None,)),
        ("python3 >= 3.6.8", ("python3",), (">=",)),
        ("(ocl-icd or ocl-icd-devel)", ("ocl-icd", "ocl-icd-devel"), (None, None)),
        ("libfoo.so.1()(64bit)", ("libfoo.so.1()(64bit)",), (None,)),
    ],
)
def test_parse_rpm(text, names, ops):
    relation = parse_rpm(text)
    assert relation.names() == names
    assert tuple(atom.op for atom in relation.atoms) == ops


def test_rich_expressions_other_than_or_are_kept_whole():
    relation = parse_rpm("(foo if bar)")
    assert relation.atoms == () and render_rpm(relation) == "(foo if bar)"


@pytest.mark.parametrize(
    ("relation", "deb", "rpm"),
    [
        (parse_deb("python3 (>= 3.6.8)"), "python3 (>= 3.6.8)", "python3 >= 3.6.8"),
        (parse_deb("a|b (<< 2)"), "a | b (<< 2)", "(a or b < 2)"),
        (parse_rpm("(gcc or clang > 14)"), "gcc | clang (>> 14)", "(gcc or clang > 14)"),
    ],
)
def test_render_each_format(relation, deb, rpm):
    assert render_deb(relation) == deb
    assert render_rpm(relation) == rpm


@pytest.mark.parametrize("text", ["", "  ", "a |", "(>= 1)", "foo (>= 1", "foo bar", "a | | b"])
def test_bad_deb(text):
    with pytest.raises(InvalidRelation):
        parse_deb(text)


@pytest.mark.parametrize("text", ["", "foo >=", "foo ~ 1", "(a or b", "a b c d"])
def test_bad_rpm(text):
    with pytest.raises(InvalidRelation):
        parse_rpm(text)
