"""What scripts read keeps its shape: a build's index.json and the ``--json`` output of
merge, repo and the stream commands, run on one fixed release, compared key by key
(and value type by value type) with tests/scenarios/golden/json-shapes/.

The golden shapes were written by gfxpack before these outputs were made from typed
results (BuildIndex, PublishResult, StreamResult): a key renamed, dropped, added or
turned into another type fails here. ``pytest --update-golden`` rewrites them; the
reference page docs/reference/json.md says the same shapes in words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden import Golden
from tests.verify.signed import Key, gfxpack, make_key, signed_build

# make check skips it: a release built, signed, published and promoted.
pytestmark = pytest.mark.slow

BASE_URL = "https://repo.example.com/rocm"


def shape(value: Any) -> Any:
    """``value`` with every scalar replaced by its JSON type's name and every list by
    the distinct shapes of its items (sorted): what a reader of the document relies on,
    without the digests, sizes and times that differ from run to run."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        shapes = {json.dumps(shape(item), sort_keys=True) for item in value}
        return [json.loads(text) for text in sorted(shapes)]
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str"}[type(value)]


def check(golden: Golden, name: str, document: Any) -> None:
    if isinstance(document, dict) and "plan" in document:
        # plan --format json, kept whole: its shape is views/plan_json.py's, tested there
        document = {**document, "plan": {}}
    golden.check(f"json-shapes/{name}.json", json.dumps(shape(document), indent=2) + "\n")


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Key:
    return make_key(tmp_path_factory.mktemp("gnupg"), "ed25519")


@pytest.fixture(scope="module")
def signed(example_release: Any, key: Key, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example release with its RPMs signed (gfxpack sign rewrites its index)."""
    return signed_build(key, example_release.out, tmp_path_factory.mktemp("signed") / "build")


def json_of(key: Key, *args: str) -> Any:
    return json.loads(gfxpack(key, *args, "--json"))


def test_the_index_json_of_a_build_a_signed_build_and_a_merge(
    example_release: Any, signed: Path, key: Key, tmp_path: Path, golden: Golden
) -> None:
    built = json.loads((example_release.out / "index.json").read_text())
    check(golden, "index", built)
    # gfxpack sign changes sizes and digests, never the shape
    assert shape(json.loads((signed / "index.json").read_text())) == shape(built)
    merged = json_of(key, "merge", str(example_release.out), "--out", str(tmp_path / "m"))
    check(golden, "merge", merged)
    assert json.loads((tmp_path / "m" / "index.json").read_text()) == merged


def test_repo_and_stream_json(signed: Path, key: Key, tmp_path: Path, golden: Golden) -> None:
    nightly, stable = tmp_path / "nightly", tmp_path / "stable"
    published = json_of(
        key, "repo", "--in", str(signed), "--out", str(nightly), "--sign-key", key.fingerprint,
        "--setup-package", "rocm-repo", "--base-url", BASE_URL, "--retain", "30d",
    )  # fmt: skip
    check(golden, "repo", published)
    listing = json_of(key, "stream", "list", "--repo", str(nightly))
    check(golden, "stream-list", listing)
    version = listing["builds"][0]["version"]
    promoted = json_of(
        key, "stream", "promote", "--from", str(nightly), "--to", str(stable),
        "--version", version, "--sign-key", key.fingerprint, "--base-url", BASE_URL,
    )  # fmt: skip
    check(golden, "stream-promote", promoted)
    refreshed = json_of(
        key, "stream", "refresh", "--repo", str(stable), "--sign-key", key.fingerprint
    )
    check(golden, "stream-refresh", refreshed)
    pruned = json_of(
        key, "stream", "prune", "--repo", str(stable), "--retain", "1builds", "--dry-run",
        "--sign-key", key.fingerprint,
    )  # fmt: skip
    check(golden, "stream-prune", pruned)
    removed = json_of(
        key, "stream", "remove", "--repo", str(stable), "--version", version,
        "--sign-key", key.fingerprint,
    )  # fmt: skip
    check(golden, "stream-remove", removed)
