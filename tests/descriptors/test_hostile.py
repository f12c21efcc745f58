"""Descriptor trees built to hurt: huge lists and schemas, deep nesting, FIFOs and devices
where files or archives are expected. Each is a diagnostic or one error line, in time
linear in the input, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gfxpack.descriptors import Diagnostics
from gfxpack.descriptors.jsonc import MAX_DEPTH, JsoncError, loads
from gfxpack.descriptors.parse import parse_file
from tests.descriptors.helpers import found, load, make_set_documents, problems, uid, write_tree
from tests.descriptors.test_kpack_sources import packaged_tree

# make check skips it: a sweep of huge and deep hostile descriptor trees.
pytestmark = pytest.mark.slow

ID = uid("a", 1)


def gfxpack(*args: str) -> subprocess.CompletedProcess:
    """The real command in a child process: a hang fails the test instead of the suite."""
    return subprocess.run(
        [sys.executable, "-m", "gfxpack", *args], capture_output=True, text=True, timeout=120
    )


# --- linear in the size of a document ---------------------------------------------------------


def kmd(count: int) -> dict:
    fields = [{"name": f"f{i}", "type": "int", "default_value": i} for i in range(count)]
    return {"version": "1.0", "id": ID, "name": "fields", "fields": fields}


def ued(count: int) -> dict:
    return {
        "version": "1.0",
        "id": ID,
        "name": "test:Big",
        "metadata": ID,
        "numerical_notes": [f"note {i}" for i in range(count)],
    }


def kdp(count: int) -> dict:
    return {
        "version": "1.0",
        "id": ID,
        "name": "pack",
        "engine": ID,
        "dispatch": ID,
        "matchers": [],
        "arch": [f"gfx9{i}" for i in range(count)],
        "kernelDescriptors": [],
    }


def parse_seconds(path: Path, suffix: str) -> float:
    """CPU time of parsing one file, best of three."""
    best = float("inf")
    for _ in range(3):
        diags = Diagnostics()
        start = time.process_time()
        descriptor = parse_file(path, path.parent, suffix, diags)
        best = min(best, time.process_time() - start)
        assert descriptor is not None, [d.message for d in diags.items]
    return best


@pytest.mark.parametrize(
    ("make", "suffix"), [(kmd, ".kmd.json"), (ued, ".ued.json"), (kdp, ".kdp.json")]
)
def test_repeat_detection_is_linear(tmp_path, make, suffix):
    """16x the entries cost about 16x the time; the old pairwise checks cost 256x. The
    bound (64x) sits far from both, so machine noise cannot decide it."""
    times = []
    for count in (1000, 16000):
        path = tmp_path / f"{count}{suffix}"
        path.write_text(json.dumps(make(count)))
        times.append(parse_seconds(path, suffix))
    assert times[1] < 64 * times[0], times


@pytest.mark.parametrize(
    ("document", "suffix", "message"),
    [
        (
            {**kmd(3), "fields": [*kmd(3)["fields"], {"name": "f1", "type": "int"}]},
            ".kmd.json",
            "fields[3] in \"{path}\" repeats field 'f1'",
        ),
        (
            {**ued(3), "numerical_notes": ["a", "b", "c", "b", "a"]},
            ".ued.json",
            "'numerical_notes' in \"{path}\" repeats 'b'",
        ),
        (
            {**kdp(3), "arch": ["gfx942", "gfx950", "gfx942"]},
            ".kdp.json",
            "'arch' in \"{path}\" repeats 'gfx942'",
        ),
    ],
)
def test_a_repeat_is_still_named(tmp_path, document, suffix, message):
    path = tmp_path / f"x{suffix}"
    path.write_text(json.dumps(document))
    diags = Diagnostics()
    assert parse_file(path, tmp_path, suffix, diags) is None
    assert [d.message for d in diags.items] == [
        f'"{path}" is not a valid descriptor: ' + message.format(path=path)
    ]


# --- deep nesting -----------------------------------------------------------------------------


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a": ' * depth + leaf + "}" * depth


def test_jsonc_accepts_the_depth_limit_and_refuses_one_more():
    assert loads(nested(MAX_DEPTH)) is not None
    with pytest.raises(JsoncError, match=f"nested more than {MAX_DEPTH} levels deep"):
        loads(nested(MAX_DEPTH + 1))
    with pytest.raises(JsoncError, match=f"nested more than {MAX_DEPTH} levels deep"):
        loads("[" * 100_000 + "]" * 100_000)


def deep_tree(root: Path, depth: int) -> Path:
    """The canonical set plus two identical-id KMDs and a KDP carrying deep values: the
    catalog compares identical copies (recursively) and lint validates them."""
    documents = make_set_documents()
    deep_kmd = json.dumps({**documents["a.kmd.json"], "name": "deep"})[:-1]
    text = f'{deep_kmd}, "x-deep": {nested(depth)}}}'
    return write_tree(
        root,
        {
            **documents,
            "one/deep.kmd.json": text,
            "two/deep.kmd.json": text,
            "pack.kdp.json": '{"version": "1.0", "engine": ' + "[" * depth + "]" * depth + "}",
        },
    )


@pytest.mark.parametrize("depth", [900, 100_000])
def test_deep_descriptors_are_diagnostics(tmp_path, depth):
    result = load(deep_tree(tmp_path, depth))
    messages = found(result, "D202")
    assert len(messages) == 3
    assert all(
        m.endswith(f"arrays and objects nested more than {MAX_DEPTH} levels deep") for m in messages
    )
    assert [s.name for s in result.sets] == ["test:EngineA"]  # the rest still loads


@pytest.mark.parametrize("command", ["list-engines", "lint"])
def test_deep_descriptors_never_reach_a_traceback(tmp_path, command):
    result = gfxpack("descriptors", command, "--root", str(deep_tree(tmp_path, 100_000)))
    assert "Traceback" not in result.stderr
    assert result.stdout.count("nested more than") + result.stderr.count("nested more than") >= 3


def test_nesting_within_the_limit_loads(tmp_path):
    """Two identical copies nested to the limit are compared without recursion trouble."""
    result = load(deep_tree(tmp_path, MAX_DEPTH - 2))
    assert "D202" not in problems(result)
    assert found(result, "D207")


def test_symbols_nested_100000_deep_is_one_error_line(tmp_path):
    symbols = tmp_path / "symbols.json"
    symbols.write_text("[" * 100_000 + "]" * 100_000)
    result = gfxpack(
        "descriptors", "list-engines", "--root", str(tmp_path), "--symbols", str(symbols)
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {symbols}: not a symbol registry: arrays or objects nested too deeply "
        "(expected an object of kind -> list of symbols)\n"
    )


# --- only regular files ------------------------------------------------------------------------


def test_a_fifo_named_as_a_descriptor_is_not_opened(tmp_path):
    write_tree(tmp_path, make_set_documents())
    os.mkfifo(tmp_path / "stuck.kdp.json")
    (tmp_path / "linked.ukd.json").symlink_to(tmp_path / "stuck.kdp.json")
    for command in ("list-engines", "lint"):
        result = gfxpack("descriptors", command, "--root", str(tmp_path))
        assert "Traceback" not in result.stderr
    listed = gfxpack("descriptors", "list-engines", "--root", str(tmp_path))
    assert "test:EngineA" in listed.stdout
    assert f'WARN D106: "{tmp_path}/stuck.kdp.json" is not a regular file (a FIFO); skipping' in (
        listed.stderr
    )
    assert (
        f'WARN D106: "{tmp_path}/linked.ukd.json" is not a regular file (a FIFO)' in listed.stderr
    )


def test_a_fifo_as_a_kpack_library_drops_its_pack(tmp_path):
    packaged_tree(tmp_path, archive=False)
    (tmp_path / "gfx942/kpack").mkdir()
    fifo = tmp_path / "gfx942/kpack/hip_kernel_provider_gfx942.kpack"
    os.mkfifo(fifo)
    result = gfxpack("descriptors", "list-engines", "--root", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    diagnostics = json.loads(result.stdout)["diagnostics"]
    (message,) = [d["message"] for d in diagnostics if d["code"] == "D421"]
    assert message.endswith(
        f"kernel 'a.f32_64' names kpack archive \"{fifo}\", which cannot be read: "
        "cannot open: not a regular file (a FIFO); dropping the pack"
    )
    lint = gfxpack("descriptors", "lint", "--root", str(tmp_path))
    assert lint.returncode == 1 and "not a regular file (a FIFO)" in lint.stdout + lint.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_symbol_registry_that_is_not_a_file_is_refused(tmp_path, kind):
    if kind == "fifo":
        symbols = tmp_path / "symbols.txt"
        os.mkfifo(symbols)
        what = "a FIFO"
    else:
        symbols = Path("/dev/zero")
        what = "a character device"
    result = gfxpack(
        "descriptors", "list-engines", "--root", str(tmp_path), "--symbols", str(symbols)
    )
    assert result.returncode == 1
    assert result.stderr == f"error: {symbols}: is {what}, expected a regular file\n"
