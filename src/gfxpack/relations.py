"""Dependency relations in DEB and RPM syntax.

A relation is one entry of a dependency list: one or more alternatives
("atoms"), any of which satisfies it. DEB writes alternatives as ``a | b`` and
a version constraint as ``name (>= 1.0)``; RPM writes ``(a or b)`` and
``name >= 1.0``. Both parse into the same neutral :class:`Relation`, and each
format renders it back in its own syntax.

>>> parse_deb("libstdc++6 | libstdc++8").names()
('libstdc++6', 'libstdc++8')
>>> render_rpm(parse_deb("python3 (>= 3.6.8)"))
'python3 >= 3.6.8'
>>> render_deb(parse_rpm("(gcc or clang)"))
'gcc | clang'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Neutral comparison operators; DEB spells the strict ones << and >>.
OPERATORS = ("<", "<=", "=", ">=", ">")
_DEB_OP = {"<": "<<", "<=": "<=", "=": "=", ">=": ">=", ">": ">>"}
_FROM_DEB_OP = {"<<": "<", "<=": "<=", "=": "=", ">=": ">=", ">>": ">", "<": "<", ">": ">"}

_DEB_ATOM = re.compile(
    r"""^(?P<name>[A-Za-z0-9][A-Za-z0-9+.\-]*)(?P<archqual>:[a-z0-9\-]+)?
        \s*(?:\(\s*(?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[0-9A-Za-z][^\s()]*)\s*\))?
        \s*(?P<rest>(?:\[[^\]]*\]\s*|<[^>]*>\s*)*)$""",
    re.VERBOSE,
)
# RPM names may carry parentheses (libfoo.so.1()(64bit), python3dist(x)).
_RPM_NAME = re.compile(r"^[A-Za-z0-9_/][^\s<>=]*$")
_RICH_OPERATORS = re.compile(r"\s(and|if|else|with|without|unless)\s")


class InvalidRelation(ValueError):
    """A dependency string that is not valid in its format's syntax."""


@dataclass(frozen=True, slots=True)
class Atom:
    """One alternative: a package name with an optional version constraint.

    ``text`` keeps the atom as written, so a system dependency can be copied
    verbatim into the format it came from.
    """

    name: str
    op: str | None = None
    version: str | None = None
    text: str = ""

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", self.name)


@dataclass(frozen=True, slots=True)
class Relation:
    """One dependency-list entry: satisfied by any one of its atoms."""

    atoms: tuple[Atom, ...]
    # An RPM rich expression we do not decompose (``(a with b)``): kept whole.
    opaque: str | None = None

    def names(self) -> tuple[str, ...]:
        return tuple(atom.name for atom in self.atoms)


def parse_deb(text: str) -> Relation:
    """Parse one Debian relation (``a (>= 1) | b``)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidRelation("expected a dependency such as 'libc6' or 'python3 (>= 3.6.8)'")
    atoms = []
    for part in text.split("|"):
        part = part.strip()
        match = _DEB_ATOM.match(part)
        if not part or match is None:
            raise InvalidRelation(
                f"{text!r} is not a Debian relation (expected 'name', 'name (>= version)' "
                "or alternatives joined by '|')"
            )
        op = match["op"]
        atoms.append(
            Atom(
                name=match["name"],
                op=_FROM_DEB_OP[op] if op else None,
                version=match["version"],
                text=part,
            )
        )
    return Relation(tuple(atoms))


def parse_rpm(text: str) -> Relation:
    """Parse one RPM dependency (``name``, ``name >= 1``, or ``(a or b)``)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidRelation("expected a dependency such as 'glibc' or 'python3 >= 3.6.8'")
    stripped = text.strip()
    if stripped.startswith("("):
        if not stripped.endswith(")") or stripped.count("(") != stripped.count(")"):
            raise InvalidRelation(f"{text!r} has unbalanced parentheses")
        inner = stripped[1:-1].strip()
        if _RICH_OPERATORS.search(f" {inner} ") or "(" in inner:
            # A rich dependency other than a flat "or": kept as written.
            return Relation((), opaque=stripped)
        return Relation(tuple(_parse_rpm_atom(part.strip(), text) for part in inner.split(" or ")))
    return Relation((_parse_rpm_atom(stripped, text),))


def _parse_rpm_atom(part: str, whole: str) -> Atom:
    tokens = part.split()
    if len(tokens) == 1 and _RPM_NAME.match(tokens[0]):
        return Atom(tokens[0], text=part)
    if len(tokens) == 3 and _RPM_NAME.match(tokens[0]) and tokens[1] in OPERATORS:
        return Atom(tokens[0], tokens[1], tokens[2], text=part)
    raise InvalidRelation(
        f"{whole!r} is not an RPM dependency (expected 'name', 'name >= version' or '(a or b)')"
    )


def deb_atom(name: str, op: str | None = None, version: str | None = None) -> str:
    """Render one atom in Debian syntax: ``name (>= 8.2.0-1)``."""
    return f"{name} ({_DEB_OP[op]} {version})" if op else name


def rpm_atom(name: str, op: str | None = None, version: str | None = None) -> str:
    """Render one atom in RPM syntax: ``name >= 8.2.0-1``."""
    return f"{name} {op} {version}" if op else name


def render_deb(relation: Relation) -> str:
    """Render canonically in Debian syntax (an atom's ``text`` is the verbatim form)."""
    if relation.opaque is not None:
        return relation.opaque
    return " | ".join(deb_atom(atom.name, atom.op, atom.version) for atom in relation.atoms)


def render_rpm(relation: Relation) -> str:
    """Render canonically in RPM syntax."""
    if relation.opaque is not None:
        return relation.opaque
    parts = [rpm_atom(atom.name, atom.op, atom.version) for atom in relation.atoms]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"
