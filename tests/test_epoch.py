"""SOURCE_DATE_EPOCH is read in one place: a bad value is the same one-line error in
build and repo (repo used to raise a traceback)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.epoch import InvalidEpoch, source_date_epoch
from tests.conftest import build_example_args

MESSAGE = (
    "error: SOURCE_DATE_EPOCH='abc': expected seconds since 1970 (0 to 4294967295), "
    "e.g. 1704067200\n"
)


def test_repo_with_a_bad_epoch_is_one_clean_line(example_release, tmp_path):
    out = tmp_path / "repo"
    result = CliRunner(env={"SOURCE_DATE_EPOCH": "abc"}).invoke(
        cli, ["repo", "--in", str(example_release.out), "--out", str(out)]
    )
    assert result.exit_code == 1
    assert not isinstance(result.exception, ValueError)  # no traceback
    assert result.stderr == MESSAGE
    assert not out.exists()


def test_build_says_the_same(example_artifacts, tmp_path):
    result = CliRunner(env={"SOURCE_DATE_EPOCH": "abc"}).invoke(
        cli,
        build_example_args(example_artifacts, tmp_path / "out"),
    )
    assert result.exit_code == 1
    assert result.stderr == MESSAGE


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "４２", "4294967296", " 1"])
def test_values_outside_unsigned_32_bit_seconds_are_refused(value):
    with pytest.raises(InvalidEpoch):
        source_date_epoch({"SOURCE_DATE_EPOCH": value}, 0)


def test_unset_or_empty_gives_the_default_and_digits_are_used():
    assert source_date_epoch({}, 7) == 7
    assert source_date_epoch({"SOURCE_DATE_EPOCH": ""}, 7) == 7
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "1704067200"}, 7) == 1704067200
