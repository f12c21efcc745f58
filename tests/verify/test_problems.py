"""Why a package cannot be installed, said in the repository format's own spelling."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS
from tests.verify.helpers import make_repo

# app needs a version of lib the repository lacks; top needs app.
PACKAGES = {
    "lib": {"files": ("/opt/lib/a",)},
    "app": {"depends": ("lib (>= 9.0)",)},
    "top": {"depends": ("app",)},
}


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_a_failed_install_names_the_relation_as_the_format_writes_it(tmp_path, fmt):
    root = make_repo(tmp_path, fmt, PACKAGES)
    result = CliRunner().invoke(cli, ["verify", "--repo", str(root), "--install", "top"])
    assert result.exit_code == 1, result.output
    (failure,) = [line for line in result.stdout.splitlines() if "cannot install top:" in line]
    if fmt is DEB:  # libsolv's own sentences would say "lib >= 9.0", as RPM does
        assert failure.endswith(
            "top (8.2.0-1) requires app, but none of its providers can be installed; "
            "nothing provides lib (>= 9.0) needed by app (8.2.0-1)"
        )
    else:  # libsolv's words, as dnf prints them
        assert failure.endswith("nothing provides lib >= 9.0 needed by app-8.2.0-1.x86_64")
