"""RPM %changelog: from a --changelog file, or generated; read back by rpm."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import PackageInfo, rpm
from gfxpack.formats.changelog import ChangelogError, parse_changelog
from tests.conftest import EXAMPLE_CONFIG

CHANGELOG = """%changelog
* Tue Dec 01 2026 ROCm Release <release@example.com> - 8.2.1-1
- Fix the gfx942 kernels
- Add gfx950

* Mon Nov 02 2026 ROCm Release <release@example.com> - 8.2.0-1
- First release
"""


def rpm_changelog(path: Path) -> str:
    return subprocess.run(
        ["rpm", "-qp", "--changelog", str(path)], capture_output=True, text=True, check=True
    ).stdout


def write(tmp_path: Path, **fields) -> Path:
    info = PackageInfo(name="tool", version="8.2.1", release="1", arch="x86_64", **fields)
    path = tmp_path / rpm.filename(info)
    with open(path, "wb") as out:
        rpm.write(info, out)
    return path


def test_changelog_file_is_what_rpm_shows(tmp_path):
    source = tmp_path / "changelog"
    source.write_text(CHANGELOG)
    entries = parse_changelog(source)
    assert [author for _, author, _ in entries] == [
        "ROCm Release <release@example.com> - 8.2.1-1",
        "ROCm Release <release@example.com> - 8.2.0-1",
    ]
    shown = rpm_changelog(write(tmp_path, summary="t", changelog=entries))
    assert shown.startswith(
        "* Tue Dec 01 2026 ROCm Release <release@example.com> - 8.2.1-1\n"
        "- Fix the gfx942 kernels\n- Add gfx950\n"
    )
    assert (
        "* Mon Nov 02 2026 ROCm Release <release@example.com> - 8.2.0-1\n- First release" in shown
    )


def test_generated_changelog_names_version_and_packager(tmp_path):
    path = write(tmp_path, summary="t", maintainer="ROCm <rocm@example.com>", mtime=1_704_067_200)
    shown = rpm_changelog(path)
    assert shown.startswith("* Mon Jan 01 2024 ROCm <rocm@example.com> - 8.2.1-1\n- tool 8.2.1-1")
    packager = subprocess.run(
        ["rpm", "-qp", "--qf", "%{PACKAGER}", str(path)], capture_output=True, text=True
    ).stdout
    assert packager == "ROCm <rocm@example.com>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a change before any entry\n", ":1: expected an entry line"),
        ("* Someday ROCm - 1\n", ":1: expected '* Www Mmm DD YYYY"),
        ("* Tue Dec 01 2026\n- no author\n", ":1: expected '* Www Mmm DD YYYY"),
        ("%changelog\n\n", "no changelog entry"),
    ],
)
def test_bad_changelog_is_one_line_naming_the_file(tmp_path, text, message):
    source = tmp_path / "changelog"
    source.write_text(text)
    with pytest.raises(ChangelogError) as error:
        parse_changelog(source)
    assert str(error.value).startswith(str(source)) and message in str(error.value)
    assert "\n" not in str(error.value)


def test_build_changelog_option(example_artifacts, tmp_path):
    source = tmp_path / "changelog"
    source.write_text(CHANGELOG)
    out = tmp_path / "out"
    args = ["build", "--config", str(EXAMPLE_CONFIG), "--artifacts", str(example_artifacts)]
    args += ["--out", str(out), "--rocm-version", "8.2.1", "--target", "gfx942", "-q"]
    result = CliRunner().invoke(cli, [*args, "--changelog", str(source), "--format", "rpm"])
    assert result.exit_code == 0, result.output
    packages = sorted(out.glob("*.rpm"))
    assert packages
    assert rpm_changelog(packages[0]).startswith("* Tue Dec 01 2026 ROCm Release")
    source.write_text("nonsense\n")
    refused = CliRunner().invoke(cli, [*args, "--changelog", str(source)])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == f"error: {source}:1: expected an entry line " + (
        "'* Www Mmm DD YYYY Name <email> - version-release'"
    )
