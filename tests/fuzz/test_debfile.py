"""Fuzz the .deb reader gfxpack repo uses, with mutations of a package our writer made."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.formats import DEB
from gfxpack.repo.debfile import InvalidDeb, parse_control, parse_stanzas, read_deb
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import mutated
from tests.verify.helpers import write_package

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow


def _exercise(data: bytes) -> None:
    """Read one input; only InvalidDeb may come out, and what is read is valid."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz_1-1_amd64.deb"
        path.write_bytes(data)
        try:
            package = read_deb(str(path))
        except InvalidDeb:
            return
        assert "\n" not in package.name and "/" not in package.name
        assert all("\n" not in p for p in package.paths)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("deb")
    files = ("/opt/rocm/lib/libx.so", "/opt/rocm/share/doc/x/README")
    return write_package(folder, DEB, "fuzz", files=files).read_bytes()


def test_mutated_deb_raises_only_invalid_deb(original: bytes) -> None:
    @fuzz_settings()
    @given(data=mutated(original))
    def run(data: bytes) -> None:
        _exercise(data)

    run()


CONTROL = "Package: tool\nVersion: 1.0-1\nArchitecture: amd64\nDescription: a\n long one\n"


def test_a_control_file_never_yields_a_second_stanza() -> None:
    """Whatever the control text, what is accepted writes back as exactly one stanza
    (the property that keeps a package from injecting another into Packages)."""

    @fuzz_settings()
    @given(
        text=st.one_of(
            st.text(alphabet=st.sampled_from("Pk: \n\t\r#-.1aV\x85\u2028"), max_size=80).map(
                lambda junk: CONTROL + junk
            ),
            st.text(max_size=200),
        )
    )
    def run(text: str) -> None:
        try:
            fields = parse_control(text, "control")
        except InvalidDeb:
            return
        written = "".join(f"{name}: {value}\n" for name, value in fields.items())
        assert parse_stanzas(written) == [fields]
        assert all(
            "\n" not in v or all(line[:1] in (" ", "\t") for line in v.split("\n")[1:])
            for v in fields.values()
        )

    run()


@pytest.mark.parametrize("path", kept_inputs("debfile"))
def test_kept_crash_inputs(path: Path) -> None:
    _exercise(path.read_bytes())
