"""Mutations of a real input: a few overwritten byte runs, then maybe a cut."""

from __future__ import annotations

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
