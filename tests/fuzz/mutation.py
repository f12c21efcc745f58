"""Mutations of a real input: a few overwritten byte runs, then maybe a cut; or, for a
JSON document, one value replaced or one key dropped somewhere in it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with up to six runs of 1-8 bytes overwritten, maybe truncated."""
    data = bytearray(original)
    edits = draw(
        st.lists(
            st.tuples(st.integers(0, max(len(data) - 1, 0)), st.binary(min_size=1, max_size=8)),
            max_size=6,
        )
    )
    for position, value in edits:
        data[position : position + len(value)] = value
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return bytes(data[:cut] if cut is not None else data)


@st.composite
def json_mutated(draw: st.DrawFn, document: Any, values: st.SearchStrategy[Any]) -> Any:
    """A copy of ``document`` with one value somewhere replaced by one of ``values``,
    or one key dropped."""
    data = json.loads(json.dumps(document))
    node: Any = data
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(
            st.sampled_from(list(node.keys()) if isinstance(node, dict) else range(len(node)))
        )
        if not isinstance(node[key], dict | list) or not node[key]:
            break
        node = node[key]
    if isinstance(node, dict) and node:
        key = draw(st.sampled_from(sorted(node)))
        if draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(values)
    elif isinstance(node, list) and node:
        node[draw(st.integers(0, len(node) - 1))] = draw(values)
    return data
