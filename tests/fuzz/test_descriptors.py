"""Fuzz the descriptor readers: the JSONC parser, each type's parser, and the whole
loader and lint on a random tree. The parser raises only JsoncError; parsing a file,
loading a tree and linting it never raise, and no problem reaches the loader's
last-resort handler (a diagnostic naming a Python exception type)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.descriptors import Diagnostics, EngineNames, load_validated
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.lint import lint
from gfxpack.descriptors.parse import parse_file
from gfxpack.descriptors.types import SUFFIXES
from gfxpack.kpack import write_kpack
from tests.descriptors.helpers import make_set_documents, symbols_for
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

# The loader's catch-all reports "failed to parse "<path>": <ExceptionType>: ...": a crash
# it survived. Every expected problem has its own code and text instead.
CRASH = re.compile(r'": [A-Z]\w*(Error|Exception): ')


def assert_no_crash(diags: Diagnostics) -> None:
    crashes = [d.message for d in diags.items if CRASH.search(d.message)]
    assert crashes == []


# --- the JSONC parser ---------------------------------------------------------------------------

jsonc_text = st.lists(
    st.sampled_from(
        [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            '"a"',
            '"\\',
            '"',
            "1",
            "-0.5e9",
            "true",
            "null",
            "NaN",
            "Infinity",
            "//",
            "/*",
            "*/",
            "\n",
            " ",
            "\ufeff",
            "\\u0000",
            "'",
            "x",
        ]
    )
    | st.text(max_size=3),
    max_size=40,
).map("".join)


def check_loads(data: bytes | str) -> None:
    with contextlib.suppress(JsoncError):
        loads(data)


@fuzz_settings()
@given(jsonc_text)
def test_jsonc_tokens(text):
    check_loads(text)


@fuzz_settings()
@given(st.binary(max_size=200))
def test_jsonc_bytes(data):
    check_loads(data)


# --- one file of each type ----------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
    | st.sampled_from(
        [
            "1.0",
            "0.9",
            "1.1",
            "gfx942",
            "gfx942:xnack-",
            "kpack",
            "native",
            "embedded_source",
            "a7000000-0000-4000-8000-000000000000",
            "test:E",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)

DOCUMENTS = make_set_documents()
BY_SUFFIX = {
    suffix: next(doc for name, doc in DOCUMENTS.items() if name.endswith(suffix))
    for suffix in SUFFIXES
    if any(name.endswith(suffix) for name in DOCUMENTS)
}
BY_SUFFIX[".ukd.json"] = {**DOCUMENTS["a.kdp.json"]["kernelDescriptors"][0], "arch": ["gfx942"]}


@st.composite
def bent(draw: st.DrawFn, document: dict) -> dict:
    """A valid document with values replaced, keys dropped or added, anywhere inside."""
    result = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 4))):
        node = result
        while True:  # walk down to a random container
            children = list(node.values() if isinstance(node, dict) else node)
            containers = [c for c in children if isinstance(c, (dict, list)) and c]
            if not containers or draw(st.booleans()):
                break
            node = draw(st.sampled_from(containers))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) | st.text(max_size=8))
            if draw(st.integers(0, 3)) == 0:
                node.pop(key, None)
            else:
                node[key] = draw(json_values)
        elif node:
            node[draw(st.integers(0, len(node) - 1))] = draw(json_values)
    return result


@st.composite
def typed_file(draw: st.DrawFn) -> tuple[str, str]:
    suffix = draw(st.sampled_from(sorted(BY_SUFFIX)))
    document = draw(bent(BY_SUFFIX[suffix]) | json_values)
    text = json.dumps(document)
    if draw(st.booleans()):
        text = "// a comment\n" + text
    return suffix, text


def parse_text(suffix: str, text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"x{suffix}"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        diags = Diagnostics()
        parse_file(path, tmp, suffix, diags)  # must not raise
        assert_no_crash(diags)


@fuzz_settings()
@given(typed_file())
def test_each_type(case):
    parse_text(*case)


# --- the whole loader on a random tree ------------------------------------------------------------

KPACK_SOURCE = {
    "kind": "kpack",
    "library": "../kpack/p_gfx942.kpack",
    "toc_key": "k",
    "symbol": "K",
    "sha256": "0" * 64,
    "signature": [],
}


@st.composite
def trees(draw: st.DrawFn) -> dict[str, object]:
    """Two engines' sets, some documents bent, some copied elsewhere, a kpack kernel whose
    archive may be real, garbage or absent, and stray files."""
    files: dict[str, object] = {}
    for tag in draw(st.lists(st.sampled_from("ab"), min_size=1, max_size=2, unique=True)):
        for name, document in make_set_documents(tag).items():
            if draw(st.integers(0, 4)) == 0:
                document = draw(bent(document))
            files[draw(st.sampled_from(["", "gfx942/", "x/y/"])) + name] = document
    pack = copy.deepcopy(DOCUMENTS["a.kdp.json"])
    pack["kernelDescriptors"][0]["kernel_source"] = (
        draw(bent(KPACK_SOURCE)) if draw(st.booleans()) else KPACK_SOURCE
    )
    files["gfx942/packs/k.kdp.json"] = pack
    archive = draw(st.sampled_from(["valid", "garbage", "absent"]))
    if archive == "garbage":
        files["gfx942/kpack/p_gfx942.kpack"] = draw(st.binary(max_size=64))
    elif archive == "valid":
        files["gfx942/kpack/p_gfx942.kpack"] = None  # written below
    for _ in range(draw(st.integers(0, 2))):
        files[draw(st.sampled_from(["z.kdp.json", "y.ued.json", "n.json", ".kmd.json"]))] = draw(
            st.text(max_size=30)
        )
    return files


def write(root: Path, files: dict[str, object]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            write_kpack(path, [("k", b"\x7fELF")], "p", "gfx942")
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        else:
            path.write_text(json.dumps(content))


def load_and_lint(root: Path) -> None:
    result = load_validated([root], symbols_for("a", "b"), "test:EngineB", EngineNames())
    assert_no_crash(result.diagnostics)
    assert_no_crash(lint([root]).load.diagnostics)


@fuzz_settings()
@given(trees())
def test_random_trees(files):
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), files)
        load_and_lint(Path(tmp))


@pytest.mark.parametrize("path", kept_inputs("descriptors"))
def test_kept_crash_inputs(path):
    """Each kept input is one descriptor file: parsed alone, then loaded as a tree."""
    suffix = next((s for s in SUFFIXES if path.name.endswith(s)), ".kdp.json")
    parse_text(suffix, path.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / f"x{suffix}").write_bytes(path.read_bytes())
        load_and_lint(Path(tmp))
