"""package.json: any text, any JSON, any mix of known keys and odd values gives a
Config or InvalidConfig naming the file, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.config import Config, InvalidConfig, load_config, parse_config
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

KEYS = [
    "Package",
    "Version",
    "Architecture",
    "BuildArch",
    "Maintainer",
    "Description_Short",
    "Description_Long",
    "DEBDepends",
    "RPMRequires",
    "DEBRecommends",
    "Provides",
    "Conflicts",
    "Replaces",
    "Obsoletes",
    "Gfxarch",
    "Metapackage",
    "DisablePackaging",
    "Postinstall",
    "Allow_Special_Modes",
    "Artifactory",
    "Components",
    "Composite",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(["True", "False", "amdrocm-x", "libc6 (>= 2.34)", "A <a@b>", "lib"])
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
SUBDIR = st.fixed_dictionaries(
    {},
    optional={"Name": VALUES | st.sampled_from(["rocBLAS", "/", ""]), "Components": VALUES},
)
ARTIFACT = st.fixed_dictionaries(
    {},
    optional={
        "Artifact": VALUES | st.sampled_from(["blas", "a_b", "x"]),
        "Artifact_Gfxarch": VALUES,
        "Artifact_Subdir": st.lists(SUBDIR, max_size=3) | VALUES,
    },
)
PACKAGE = st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=10),
    VALUES,
    max_size=6,
).flatmap(
    lambda entry: st.builds(
        lambda name, artifactory: {**entry, "Package": name, "Artifactory": artifactory},
        st.sampled_from(["amdrocm-blas", "amdrocm-x", "Bad Name", ""]) | VALUES,
        st.lists(ARTIFACT, max_size=3) | VALUES,
    )
)


def check(text: str) -> None:
    try:
        config = parse_config(text, "package.json")
    except InvalidConfig as e:
        assert str(e).startswith("package.json: ")
    else:
        assert isinstance(config, Config)


@fuzz_settings()
@given(st.lists(PACKAGE, max_size=4) | VALUES)
def test_any_json_document(document: Any) -> None:
    check(json.dumps(document))


@fuzz_settings()
@given(st.text(alphabet=st.sampled_from('[]{}",: \n0aTrue\\u'), max_size=200))
def test_any_text(text: str) -> None:
    check(text)


@fuzz_settings()
@given(st.binary(max_size=200))
def test_any_bytes_from_a_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "package.json"
        path.write_bytes(data)
        try:
            load_config(path)
        except InvalidConfig as e:
            assert str(e).startswith(f"{path}: ")


@pytest.mark.parametrize("kept", kept_inputs("package_json"))
def test_kept_inputs(kept: Path) -> None:
    check(kept.read_text(encoding="utf-8"))
