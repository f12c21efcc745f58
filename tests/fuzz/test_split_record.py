"""Fuzz join's reader of split records: a real ``gfxpack-split.msgpack`` with bytes
overwritten, or with one value somewhere replaced (by hostile paths among others) or
one key dropped. join either succeeds, every file it wrote a byte-identical copy of a
file of the input or the split, or raises a GfxpackError; never another exception,
never a write outside its OUT, never a half-written OUT."""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.split import SPLIT_INDEX, split_tree
from tests.fatbin.conftest import build_once
from tests.fatbin.test_join_hostile import FAT, GENERIC, PREFIX, make_artifacts
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import mutated

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Seed:
    root: Path  # holds the input, the split, the planted files and OUT
    split: Path
    record: bytes  # the split's own record
    paths: tuple[str, ...]  # every path the record names, and links planted in the split
    contents: frozenset[bytes]  # the digests of every file of the input and the split
    before: dict[str, tuple[Any, ...]]  # everything under root but OUT and the record

    @property
    def out(self) -> Path:
        return self.root / "joined"


def _state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root`` but OUT and the record: inode, links, size, bytes."""
    state: dict[str, tuple[Any, ...]] = {}
    for path in sorted(root.rglob("*")):
        if path.name == SPLIT_INDEX or path.is_relative_to(root / "joined"):
            continue
        info = path.lstat()
        content: Any = None
        if path.is_symlink():
            content = os.readlink(path)
        elif path.is_file():
            content = path.read_bytes()
        state[str(path.relative_to(root))] = (info.st_ino, info.st_nlink, info.st_size, content)
    return state


def _digests(*roots: Path) -> frozenset[bytes]:
    return frozenset(
        hashlib.sha256(path.read_bytes()).digest()
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink()
    )


def _record_paths(document: Any) -> Iterator[str]:
    if isinstance(document, str) and "/" in document:
        yield document
    elif isinstance(document, list):
        for item in document:
            yield from _record_paths(item)
    elif isinstance(document, dict):
        for item in document.values():
            yield from _record_paths(item)


def make_seed(root: Path, fat_binary: Path | None) -> Seed:
    artifacts = make_artifacts(root / "artifacts")
    if fat_binary is not None:
        shutil.copy2(fat_binary, artifacts / FAT / PREFIX / "lib" / "libfat.so")
    split = root / "split"
    split_tree(artifacts, split)
    outside = root / "outside"
    outside.mkdir()
    (outside / "victim").write_bytes(b"precious\n")
    # Links an entry may be pointed at: out of the split, to a directory and a file.
    (split / GENERIC / "dir_out").symlink_to(outside)
    (split / GENERIC / "file_out").symlink_to(outside / "victim")
    record = (split / SPLIT_INDEX).read_bytes()
    named = sorted(set(_record_paths(msgpack.unpackb(record, raw=False))))
    return Seed(
        root,
        split,
        record,
        (*named, f"{GENERIC}/dir_out", f"{GENERIC}/file_out", f"{GENERIC}/dir_out/victim"),
        _digests(artifacts, split),
        _state(root),
    )


def exercise(seed: Seed, record: bytes) -> None:
    """Join ``seed``'s split under ``record``: only GfxpackError may come out, nothing
    outside OUT may change, and what OUT holds comes from the input or the split."""
    (seed.split / SPLIT_INDEX).write_bytes(record)
    shutil.rmtree(seed.out, ignore_errors=True)
    try:
        join_tree(seed.split, seed.out)
    except GfxpackError:
        assert not os.path.lexists(seed.out)
    else:
        therock_manifest = msgpack.unpackb(record, raw=False).get("therock_manifest")
        allowed = seed.contents | {hashlib.sha256(therock_manifest or b"").digest()}
        for path in seed.out.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert hashlib.sha256(path.read_bytes()).digest() in allowed, path
    finally:
        (seed.split / SPLIT_INDEX).write_bytes(seed.record)
    assert _state(seed.root) == seed.before
    shutil.rmtree(seed.out, ignore_errors=True)


def hostile_paths(seed: Seed) -> st.SearchStrategy[str]:
    """Paths a forger would try: out of OUT or the split, absolute, odd, the planted
    links, and the record's own paths (to cross its entries)."""
    victim = seed.root / "outside" / "victim"
    return st.sampled_from(
        [
            "../outside/victim",
            "../../outside/victim",
            "../" * 8 + "outside/victim",
            str(victim),
            str(victim.parent),
            "/etc/passwd",
            "a/../../outside/victim",
            "",
            ".",
            "..",
            "a//b",
            "a/./b",
            "a\0b",
            "a/",
            "x",
            "x/y",
            *seed.paths,
        ]
    )


def values(seed: Seed) -> st.SearchStrategy[Any]:
    scalars = (
        hostile_paths(seed)
        | st.none()
        | st.booleans()
        | st.integers(-(2**63), 2**64 - 1)
        | st.sampled_from([0, 1, 4096, 2**31, 2**63 - 1, 2**64 - 1])
        | st.text(max_size=8)
        | st.binary(max_size=16)
        | st.sampled_from(["dir", "file", "symlink", "binary"])
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=8,
    )


def _locations(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The key path of every value in a record, containers and scalars alike."""
    items = sorted(node.items()) if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        yield (*path, key)
        if isinstance(value, dict | list):
            yield from _locations(value, (*path, key))


@st.composite
def structurally_mutated(draw: st.DrawFn, seed: Seed) -> bytes:
    """The seed's record with one to three values anywhere in it replaced (a path
    mostly by a hostile one), dropped, or copied over another entry of its list."""
    document = msgpack.unpackb(seed.record, raw=False)
    for _ in range(draw(st.integers(1, 3))):
        locations = list(_locations(document))
        *parents, key = draw(st.sampled_from(locations))
        node: Any = document
        for parent in parents:
            node = node[parent]
        action = draw(st.sampled_from(["replace", "replace", "replace", "drop", "copy"]))
        if action == "drop":
            del node[key]
        elif action == "copy":
            other = draw(
                st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node)))
            )
            node[key] = copy.deepcopy(node[other])
        elif isinstance(node[key], str) and draw(st.integers(0, 3)):
            node[key] = draw(hostile_paths(seed))
        else:
            node[key] = draw(values(seed))
    return msgpack.packb(document, use_bin_type=True)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return make_seed(tmp_path_factory.mktemp("record"), None)


@pytest.fixture(scope="module")
def fat(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return make_seed(tmp_path_factory.mktemp("fat-record"), build_once(tmp_path_factory).one_file)


def test_the_unmutated_record_joins_the_input_back(plain: Seed) -> None:
    join_tree(plain.split, plain.out)
    artifacts = plain.root / "artifacts"
    joined = sorted(str(p.relative_to(plain.out)) for p in plain.out.rglob("*"))
    assert joined == sorted(str(p.relative_to(artifacts)) for p in artifacts.rglob("*"))
    for path in artifacts.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert (plain.out / path.relative_to(artifacts)).read_bytes() == path.read_bytes()
    shutil.rmtree(plain.out)
    exercise(plain, plain.record)


def test_a_mutated_record_is_joined_or_refused(plain: Seed) -> None:
    @fuzz_settings()
    @given(st.one_of(structurally_mutated(plain), mutated(plain.record)))
    def run(record: bytes) -> None:
        exercise(plain, record)

    run()


@pytest.mark.slow
def test_a_mutated_record_of_a_fat_binary_is_joined_or_refused(fat: Seed) -> None:
    @fuzz_settings()
    @given(st.one_of(structurally_mutated(fat), mutated(fat.record)))
    def run(record: bytes) -> None:
        exercise(fat, record)

    run()


@pytest.mark.parametrize("path", kept_inputs("split_record"))
def test_kept_inputs(plain: Seed, path: Path) -> None:
    exercise(plain, path.read_bytes())
