"""gfxpack descriptors list-engines and lint; the shipped schemas; the example tree."""

from __future__ import annotations

import filecmp
import importlib.util
import json

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.descriptors.lint import lowest_version, schema_errors
from tests.conftest import ROOT
from tests.descriptors.helpers import edited, make_set_documents, write_tree
from tests.descriptors.test_parse import VIOLATIONS

EXAMPLE = ROOT / "examples" / "descriptors"
SYMBOLS = ROOT / "examples" / "descriptor-symbols.json"


def run(*args, env=None):
    return CliRunner(env=env).invoke(cli, ["descriptors", *args])


def engines_of(result):
    return {
        e["name"]: {p["name"]: [k["name"] for k in p["kernels"]] for p in e["packs"]}
        for e in json.loads(result.stdout)["engines"]
    }


def test_list_engines_json_contract(tmp_path):
    result = run(
        "list-engines",
        "--root",
        str(EXAMPLE),
        "--device",
        "gfx942",
        "--symbols",
        str(SYMBOLS),
        "--json",
        "--level",
        "info",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [e["uuid"] for e in data["engines"]] == sorted(e["uuid"] for e in data["engines"])
    pointwise = next(e for e in data["engines"] if e["name"] == "gfxpack:Pointwise")
    assert set(pointwise) >= {"name", "id", "id_hex", "uuid", "packs"}
    assert pointwise["id_hex"] == f"0x{pointwise['id'] & (2**64 - 1):016X}"
    pack = pointwise["packs"][0]
    assert set(pack) >= {"name", "id", "arch", "kernels"} and pack["arch"] == ["gfx942"]
    kernel = pack["kernels"][0]
    assert set(kernel) >= {"name", "id", "arch", "priority", "metadata"}
    assert kernel["metadata"]["operation"] in ("ADD", "MUL", "SUB")
    assert {d["code"] for d in data["diagnostics"]} == {"D301", "D509"}
    assert all(set(d) == {"severity", "code", "path", "message"} for d in data["diagnostics"])


@pytest.mark.parametrize(
    ("device", "pointwise_packs"),
    [("gfx942", 3), ("gfx950:sramecc+:xnack-", 3), ("gfx1100", 0)],
)
def test_a_device_sees_its_shards(device, pointwise_packs):
    seen = engines_of(run("list-engines", "--root", str(EXAMPLE), "--device", device, "--json"))
    assert len(seen["gfxpack:Pointwise"]) == pointwise_packs
    assert seen["gfxpack:ConvFwd"] == {
        "gfxpack:conv_fwd": [
            "conv_fwd.float_block64",
            "conv_fwd.float_block256",
            "conv_fwd.f16_block64",
        ]
    }


def test_without_a_device_every_shard_is_listed():
    seen = json.loads(run("list-engines", "--root", str(EXAMPLE), "--json").stdout)
    pointwise = next(e for e in seen["engines"] if e["name"] == "gfxpack:Pointwise")
    assert sorted(p["arch"][0] for p in pointwise["packs"]) == ["gfx942"] * 3 + ["gfx950"] * 3


def test_list_engines_text(tmp_path):
    result = run("list-engines", "--root", str(EXAMPLE), "--device", "gfx942")
    assert result.exit_code == 0
    assert "gfxpack:ConvFwd  id " in result.stdout
    assert (
        "    kernel pointwise_add.float_block256  priority 1  [gfx942]  block_size=256, "
        "dtype=FLOAT, operation=ADD" in result.stdout
    )


def test_levels_filter_diagnostics(tmp_path):
    root = write_tree(tmp_path, edited(make_set_documents(), "a.ued.json", **{"x-note": 1}))
    warn = json.loads(run("list-engines", "--root", str(root), "--json").stdout)["diagnostics"]
    error = json.loads(
        run("list-engines", "--root", str(root), "--json", "--level", "error").stdout
    )["diagnostics"]
    assert [d["code"] for d in warn] == ["D207"] and error == []


def test_environment_roots_and_disabled_engines(tmp_path):
    other = write_tree(tmp_path / "other", make_set_documents("b"))
    drop_in = write_tree(tmp_path / "drop-in", make_set_documents("c"))
    env = {
        "HIPDNN_DESCRIPTOR_DIR": str(other),
        "HIPDNN_DESCRIPTOR_RUNTIME_DIR": str(drop_in),
        "HIPDNN_DISABLE_ENGINES": "test:EngineC",
    }
    result = run("list-engines", "--root", str(EXAMPLE), "--json", "--level", "info", env=env)
    assert list(engines_of(result)) == ["test:EngineB"]
    assert "D401" in {d["code"] for d in json.loads(result.stdout)["diagnostics"]}


def test_no_root_is_an_error():
    result = run("list-engines", env={"HIPDNN_DESCRIPTOR_DIR": None})
    assert result.exit_code == 1
    assert result.stderr == (
        "error: no descriptor root: give --root DIR (or set HIPDNN_DESCRIPTOR_DIR)\n"
    )


def test_a_bad_symbol_file_is_one_line(tmp_path):
    bad = tmp_path / "s.txt"
    bad.write_text("nonsense\n")
    result = run("list-engines", "--root", str(EXAMPLE), "--symbols", str(bad))
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {bad}:1: expected '<kind> <symbol>' with kind one of "
        "graph_match, kernel_match, dispatch, score\n"
    )


def test_a_registry_of_an_unknown_kind_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "symbols.json"
    bad.write_text('{"graph_match": [], "scores": ["a.score"]}')
    result = run("lint", "--root", str(EXAMPLE), "--symbols", str(bad))
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {bad}: unknown symbol kind(s) scores; expected graph_match, kernel_match, "
        "dispatch, score\n"
    )


def test_a_file_that_is_not_a_registry_is_refused():
    result = run("list-engines", "--root", str(EXAMPLE), "--symbols", str(ROOT / "README.md"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {ROOT / 'README.md'}:")


def test_lint_passes_the_example_and_reports_versions():
    result = run("lint", "--root", str(EXAMPLE), "--symbols", str(SYMBOLS), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and len(data["files"]) == 22
    assert {(f["version"], f["needs"]) for f in data["files"]} == {("1.0", "1.0")}


def test_lint_without_symbols_says_they_were_not_checked():
    """OK without --symbols covers no symbol: D510 stands beside the verdict (issue 33)."""
    text = run("lint", "--root", str(EXAMPLE))
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[-1] == (
        "22 files, 2 engine(s) loaded, symbols not checked (D510: no --symbols given): OK"
    )
    data = json.loads(run("lint", "--root", str(EXAMPLE), "--json").stdout)
    assert data["ok"] is True and data["symbols_checked"] is False
    assert [(d["code"], d["severity"]) for d in data["diagnostics"]] == [("D510", "INFO")]


def test_lint_with_symbols_says_nothing_of_d510():
    text = run("lint", "--root", str(EXAMPLE), "--symbols", str(SYMBOLS))
    assert text.stdout.splitlines()[-1] == "22 files, 2 engine(s) loaded: OK"
    data = json.loads(
        run("lint", "--root", str(EXAMPLE), "--symbols", str(SYMBOLS), "--json").stdout
    )
    assert data["symbols_checked"] is True and data["diagnostics"] == []


def test_lint_fails_on_schema_and_loader_errors(tmp_path):
    root = write_tree(
        tmp_path,
        edited(make_set_documents(), "a.ued.json", knobs=["tile"], behavior_notes=["fast"]),
    )
    result = run("lint", "--root", str(root))
    assert result.exit_code == 1
    assert f"{root}/a.ued.json: .ued.json 1.0, needs ?: schema 1 problem(s)" in result.stdout
    assert "behavior_notes/0: 'fast' is not one of ['runtime_compilation']" in result.stdout
    assert result.stdout.rstrip().endswith("FAILED")


# --- schemas and loader agree ---------------------------------------------------------------------


@pytest.mark.parametrize("case", VIOLATIONS, ids=list(VIOLATIONS))
def test_the_schema_rejects_every_violation_the_loader_rejects(case):
    name, changes, _, _ = VIOLATIONS[case]
    documents = make_set_documents()
    if changes is None:
        documents["a.kdp.json"]["kernelDescriptors"][0]["priority"] = 1.5
    else:
        documents = edited(documents, name, **changes)
    suffix = "." + ".".join(name.split(".")[-2:])
    assert schema_errors(documents[name], suffix) != []


@pytest.mark.parametrize("name", sorted(make_set_documents()))
def test_the_schema_accepts_the_canonical_set(name):
    document = make_set_documents()[name]
    suffix = "." + ".".join(name.split(".")[-2:])
    assert schema_errors(document, suffix) == []
    assert lowest_version(document, suffix) == "1.0"


def test_a_version_with_no_schema_is_reported():
    assert schema_errors({"version": "1.4"}, ".udd.json") == [
        "no schema for .udd.json version 1.4 (gfxpack knows 1.0)"
    ]


def _pack_with(change):
    document = make_set_documents()["a.kdp.json"]
    change(document)
    return document


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["kernelDescriptors"][0].pop("version"),
            ["kernelDescriptors/0: 'version' is a required property"],
        ),
        (
            lambda d: d["kernelDescriptors"][1].update(prioirty=1),
            [
                "kernelDescriptors/1: unknown key 'prioirty'; extension keys must start with "
                "'x-' or '_'; did you mean 'priority'?"
            ],
        ),
        (
            lambda d: d["kernelDescriptors"][2].update(priority=1.5),
            ["kernelDescriptors/2/priority: 1.5 is not of type 'integer'"],
        ),
        (
            lambda d: d["kernelDescriptors"].append("not-a-uuid"),
            ['kernelDescriptors/3: must be a UUID (8-4-4-4-12 hex digits), got "not-a-uuid"'],
        ),
        (
            lambda d: d["kernelDescriptors"].append(7),
            ["kernelDescriptors/3: expected object or string, got 7"],
        ),
        (
            lambda d: d.update(heuristik="x"),
            ["(root): unknown key 'heuristik'; extension keys must start with 'x-' or '_'"],
        ),
        (
            lambda d: d.update(arch=["gfx942", "gfx950", "gfx942"]),
            ['arch: repeats "gfx942"'],
        ),
        (
            lambda d: d.update(name={"x": "y" * 500}),
            ['name: {"x": "' + "y" * 62 + "... is not of type 'string'"],
        ),
    ],
    ids=[
        "inline-kernel-missing-a-key",
        "misspelt-inline-key",
        "inline-wrong-type",
        "malformed-reference",
        "entry-of-no-accepted-type",
        "unknown-top-level-key",
        "repeated-arch",
        "long-value",
    ],
)
def test_schema_errors_name_the_key_not_the_whole_object(change, expected):
    """A kernel entry's violation is reported at its key, not as the whole entry followed by
    "is not valid under any of the given schemas" (issue 33)."""
    assert schema_errors(_pack_with(change), ".kdp.json") == expected


# --- the example tree is the generator's output ---------------------------------------------


def test_the_example_tree_is_what_the_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "generate_descriptors", ROOT / "examples" / "generate_descriptors.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate(tmp_path / "descriptors", ["gfx942", "gfx950"], tmp_path / "symbols.json")
    comparison = filecmp.dircmp(tmp_path / "descriptors", EXAMPLE)
    differing = []

    def walk(node):
        differing.extend(node.left_only + node.right_only + node.diff_files)
        for sub in node.subdirs.values():
            walk(sub)

    walk(comparison)
    assert differing == []
    assert (tmp_path / "symbols.json").read_bytes() == SYMBOLS.read_bytes()
