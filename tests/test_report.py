"""gfxpack report on the example build: the page rendered by headless Chromium (no
console error, no request outside the file) with the gfx942 figures equal to those
computed from index.json; the JSON; index.json's sizes against rpm and dpkg-deb."""

from __future__ import annotations

import json
import math
import re
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack import views
from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, PackageFormat
from gfxpack.plan import Kind
from gfxpack.repo import publish
from gfxpack.units import human
from tests import chromium

FIELDS = (
    "download-host",
    "download-device",
    "download",
    "installed-host",
    "installed-device",
    "installed",
)


@pytest.fixture(scope="module")
def published(example_release, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report") / "repo"
    publish(example_release.out, root, "stable", 1_700_000_000)
    return root


@pytest.fixture(scope="module")
def page(example_release, published, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(
        cli,
        ["report", "--build", str(example_release.out), "--repo", str(published), "--html", path],
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"report: {path.resolve()}\n"
    return path


def expected_sizes(build: Path, root: str, fmt: PackageFormat = DEB) -> dict[str, int]:
    """What installing ``root`` costs, from index.json alone: the packages its plan
    reaches, their files' sizes, device packages apart."""
    index = json.loads((build / "index.json").read_text())
    plan = views.plan_from_dict(index["plan"], "index.json")
    files = {f["package"]: f for f in index["files"] if f["format"] == fmt.name}
    reached = views.reachable(plan, root, fmt)
    sizes = dict.fromkeys(FIELDS, 0)
    for package in reached:
        part = "device" if package.kind is Kind.DEVICE else "host"
        sizes[f"download-{part}"] += files[package.key]["size"]
        sizes[f"installed-{part}"] += files[package.key]["installed_size"]
    sizes["download"] = sizes["download-host"] + sizes["download-device"]
    sizes["installed"] = sizes["installed-host"] + sizes["installed-device"]
    return sizes


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


READ_ROW = """
Object.fromEntries(Array.from(
  document.querySelectorAll('tr[data-package="{package}"] td[data-field]'),
  td => [td.dataset.field, [Number(td.dataset.bytes), td.textContent.trim()]]))
"""


@pytest.mark.slow
def test_page_in_chromium(page, example_release, tmp_path):
    if chromium.executable() is None:
        pytest.skip("chromium is not installed (make test installs it)")
    browser = chromium.Page(tmp_path / "profile", 1366, 768)
    try:
        browser.load(page.as_uri())
        assert browser.errors() == []
        assert browser.requests == [page.as_uri()]  # self-contained: nothing else loaded
        screenshot = tmp_path / "report.png"
        browser.screenshot(screenshot)
        assert png_size(screenshot) == (1366, 768)
        # The figures shown for gfx942, and for every arch, are index.json's.
        for package in ("amdrocm-core8.2-gfx942", "amdrocm-core8.2"):
            shown = browser.evaluate(READ_ROW.replace("{package}", package))
            expected = expected_sizes(example_release.out, package)
            assert {k: v[0] for k, v in shown.items()} == expected
            assert {k: v[1] for k, v in shown.items()} == {k: human(v) for k, v in expected.items()}
        assert expected["download-device"] > 0 and expected["download-host"] > 0
        # Laid out for a laptop: nothing wider than the window.
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1366
        headings = browser.evaluate("Array.from(document.querySelectorAll('h2'), h => h.id)")
        assert headings == ["summary", "arches", "biggest", "graphs", "notes"]
        pictures = browser.evaluate("document.querySelectorAll('details svg.graph').length")
        assert pictures == len({p.base for p in example_release.plan.packages})
    finally:
        browser.close()
    # The check can fail: a page with a script error and a blocked load is caught.
    broken = tmp_path / "broken.html"
    broken.write_text(
        '<!DOCTYPE html><img src="http://127.0.0.1:9/x.png"><script>nothing();</script>'
    )
    browser = chromium.Page(tmp_path / "profile2")
    try:
        browser.load(broken.as_uri())
        errors = browser.errors()
        assert any("nothing is not defined" in e for e in errors)
        assert any("loading failed" in e for e in errors)
    finally:
        browser.close()


def test_page_is_static_and_complete(page, example_release):
    text = page.read_text()
    assert "<script" not in text and "<link" not in text
    assert not re.search(r'(src|href)="(https?:)?//', text)
    assert text.count("<svg") == 1 + len({p.base for p in example_release.plan.packages})
    for note in example_release.plan.notes:
        assert note.message in text
    assert "amdrocm-core8.2-gfx950" in text and "every arch" in text


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_json_plan_and_libsolv_agree(example_release, published, fmt):
    def figures(*extra: str) -> dict:
        args = ["report", "--build", str(example_release.out), "--format", fmt.name, "--json"]
        result = CliRunner().invoke(cli, [*args, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    by_plan, by_libsolv = figures(), figures("--repo", str(published))
    assert by_plan["installs"] == by_libsolv["installs"]
    assert by_libsolv["resolver"] == f"libsolv against {published}"
    # Processor order (Decision 16), the targets given as gfx1100, gfx942, gfx950.
    assert list(by_plan["installs"]) == by_plan["targets"] == ["gfx942", "gfx950", "gfx1100"]
    row, devel = by_plan["installs"]["gfx942"]
    assert row["package"] == "amdrocm-core8.2-gfx942" and row["every_arch"] == "amdrocm-core8.2"
    # The developer's install of one arch (Decision 15) is a fraction of every arch's too.
    core_devel = fmt.spell("amdrocm-core-devel")  # DEB: amdrocm-core-dev
    assert (devel["package"], devel["every_arch"]) == (
        f"{core_devel}8.2-gfx942",
        f"{core_devel}8.2",
    )
    assert 0 < devel["share"] < 1
    assert {k.replace("_", "-"): v for k, v in row["sizes"].items() if k != "packages"} == (
        expected_sizes(example_release.out, "amdrocm-core8.2-gfx942", fmt)
    )
    assert 0 < row["share"] < 1
    assert by_plan["counts"]["Device"] == {"deb": 17, "rpm": 17}
    assert by_plan["totals"][fmt.name]["packages"] == len(example_release.plan.packages)
    biggest = [b["download"] for b in by_plan["biggest"]]
    assert biggest == sorted(biggest, reverse=True) and len(biggest) == 12


def test_index_records_what_rpm_and_dpkg_report(example_release):
    """installed_size in index.json is RPM's SIZE and, rounded up to KiB, DEB's
    Installed-Size, as the real tools read them."""
    files = json.loads((example_release.out / "index.json").read_text())["files"]
    checked = 0
    for item in files:
        if item["package"] not in ("amdrocm-blas8.2-gfx942", "amdrocm-blas-host8.2"):
            continue
        path = str(example_release.out / item["file"])
        if item["format"] == "rpm":
            command = ["rpm", "-qp", "--nosignature", "--qf", "%{SIZE}", path]
            assert int(subprocess.check_output(command)) == item["installed_size"]
        else:
            field = subprocess.check_output(["dpkg-deb", "-f", path, "Installed-Size"])
            assert int(field) == math.ceil(item["installed_size"] / 1024)
        checked += 1
    assert checked == 4


def test_errors_are_one_line(tmp_path, example_release):
    def fails(*args: str) -> str:
        result = CliRunner().invoke(cli, ["report", *args])
        assert result.exit_code == 1
        if "--json" not in args:
            return result.output
        # With --json, the error is one JSON object on stdout (docs/reference/errors.md).
        error = json.loads(result.stdout)
        assert (result.stderr, error["reason"], error["option"]) == ("", "invalid-input", None)
        return f"error: {error['error']}\n"

    assert fails("--build", str(tmp_path), "--json") == (
        f"error: {tmp_path}: no index.json (not a gfxpack build directory)\n"
    )
    assert fails("--build", str(example_release.out)) == (
        "error: say what to write: --html FILE, --json, or both\n"
    )
    (tmp_path / "index.json").write_text('{"files": []}')
    assert fails("--build", str(tmp_path), "--json") == (
        f"error: {tmp_path / 'index.json'}: records no plan (built by an older gfxpack); "
        "build it again\n"
    )
    (tmp_path / "index.json").write_text('{"files": [{"package": 1}], "plan": {}}')
    assert fails("--build", str(tmp_path), "--json") == (
        f"error: {tmp_path / 'index.json'}: /files/0/file: expected a string, got nothing\n"
    )


def test_a_file_the_plan_does_not_have(tmp_path, example_release):
    index = json.loads((example_release.out / "index.json").read_text())
    index["files"].append({**index["files"][0], "package": "amdrocm-stray8.2"})
    (tmp_path / "index.json").write_text(json.dumps(index))
    result = CliRunner().invoke(cli, ["report", "--build", str(tmp_path), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == (
        f"{tmp_path / 'index.json'}: lists a file of amdrocm-stray8.2, which its plan has not"
    )


def test_build_index_and_report_list_targets_in_processor_order(example_release, page):
    """The example's artifacts are for gfx1100, gfx942 and gfx950: index.json, its plan
    and the report's per-arch table list gfx942, gfx950, gfx1100 (Decision 16)."""
    order = ["gfx942", "gfx950", "gfx1100"]
    index = json.loads((example_release.out / "index.json").read_text())
    assert index["targets"] == index["plan"]["targets"] == order
    devices = [p["arch"] for p in index["plan"]["packages"] if p["base"] == "amdrocm-blas"]
    assert [a for a in devices if a] == order
    rows = re.findall(r'<tr data-package="amdrocm-core8\.2-(gfx\w+)"', page.read_text())
    assert rows == order
