"""Reading a .deb's control file and paths, checked against dpkg-deb."""

from __future__ import annotations

import pytest

from gfxpack.formats import DEB
from gfxpack.repo.debfile import InvalidDeb, parse_stanzas, read_deb
from tests.conftest import run
from tests.verify.helpers import write_package


@pytest.mark.parametrize("name", ["tool", "amdrocm-blas8.2-gfx942"])
def test_read_deb_agrees_with_dpkg_deb(tmp_path, name):
    deb = write_package(
        tmp_path, DEB, name, depends=("libc6 (>= 2.34)",), files=("/opt/a/x", "/opt/a/b/y")
    )
    package = read_deb(str(deb))
    assert package.fields == parse_stanzas(run("dpkg-deb", "--field", str(deb)).stdout)[0]
    assert (package.name, package.fields["Depends"]) == (name, "libc6 (>= 2.34)")
    listed = run("dpkg-deb", "--contents", str(deb)).stdout.splitlines()
    files = sorted(line.split()[-1].removeprefix("./") for line in listed if line[0] == "-")
    assert sorted(package.paths) == files == ["opt/a/b/y", "opt/a/x"]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"not an ar archive", "not a Debian package"),
        (b"!<arch>\n", "no control"),
    ],
)
def test_read_deb_rejects_what_is_not_a_deb(tmp_path, data, why):
    path = tmp_path / "bad.deb"
    path.write_bytes(data)
    with pytest.raises(InvalidDeb) as caught:
        read_deb(str(path))
    assert str(caught.value).startswith(f"{path}: ")
    assert why in str(caught.value)


def test_parse_stanzas_keeps_continuations_and_skips_comments():
    text = "# a system\nPackage: a\nDescription: first\n second\n .\n\n\nPackage: b\nX:y\n"
    assert parse_stanzas(text) == [
        {"Package": "a", "Description": "first\n second\n ."},
        {"Package": "b", "X": "y"},
    ]
