"""RPM %changelog: from a --changelog file, or generated; read back by rpm."""

from __future__ import annotations

import calendar
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import PackageInfo, rpm
from gfxpack.formats.changelog import FIRST_YEAR, LAST_YEAR, ChangelogError, parse_changelog
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


def test_the_first_and_last_years_are_what_rpm_shows(tmp_path):
    # rpmbuild takes no changelog year before 1990; an RPM header's unsigned 32-bit time
    # ends in February 2106, so 2105 is the last whole year.
    assert (FIRST_YEAR, LAST_YEAR) == (1990, 2105)
    source = tmp_path / "changelog"
    source.write_text(
        "* Thu Dec 31 2105 A <a@example.com> - 2-1\n- last\n\n"
        "* Mon Jan 01 1990 A <a@example.com> - 1-1\n- first\n"
    )
    entries = parse_changelog(source)
    noon = 12 * 3600
    assert [when for when, _, _ in entries] == [
        calendar.timegm((2105, 12, 31, 0, 0, 0)) + noon,
        calendar.timegm((1990, 1, 1, 0, 0, 0)) + noon,
    ]
    assert entries[0][0] < 2**32
    shown = rpm_changelog(write(tmp_path, summary="t", changelog=entries))
    assert shown.startswith("* Thu Dec 31 2105 A <a@example.com> - 2-1\n- last\n")
    assert "* Mon Jan 01 1990 A <a@example.com> - 1-1\n- first" in shown


@pytest.mark.parametrize("year", [1900, 1989, 2106, 9999])
def test_a_year_outside_them_is_one_line_naming_the_file(tmp_path, year):
    source = tmp_path / "changelog"
    source.write_text(f"%changelog\n* Mon Jan 01 {year} A <a@example.com> - 1-1\n- x\n")
    with pytest.raises(ChangelogError) as error:
        parse_changelog(source)
    assert str(error.value) == (
        f"{source}:2: the year {year} is not allowed; expected a year from 1990 to 2105 "
        "(what rpmbuild accepts and an RPM header holds)"
    )


def test_a_changelog_that_is_a_fifo_is_refused(tmp_path):
    source = tmp_path / "changelog"
    os.mkfifo(source)  # opening it would wait for a writer forever
    with pytest.raises(ChangelogError) as error:
        parse_changelog(source)
    assert str(error.value) == f"{source}: is a FIFO, expected a regular file"


def test_crlf_line_ends_are_line_ends(tmp_path):
    source = tmp_path / "changelog"
    source.write_bytes(b"%changelog\r\n* Tue Dec 01 2026 A <a@x> - 1-1\r\n- one\r\n- two\r\n")
    assert parse_changelog(source) == (
        (calendar.timegm((2026, 12, 1, 12, 0, 0)), "A <a@x> - 1-1", "- one\n- two"),
    )
