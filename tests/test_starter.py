"""gfxpack init: a starter package.json that plan and build take as written.

Shown on the trees users have: the example generator's (kpack-split and
single-arch), a ``gfxpack split`` of a hipcc library (skipped without hipcc), and
trees built here to be awkward: an output that exists, or is a symlink, trees that
cannot be described or built, directories gfxpack does not package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.artifacts import scan
from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.plan import Kind, Mode
from gfxpack.release import ReleaseOptions, prepare
from gfxpack.starter import StarterError, propose, subdir_names
from tests.conftest import EXAMPLE_CONFIG, EXAMPLE_TARGETS, load_generator
from tests.small_tree import make_tree


def init(artifacts: Path, out: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        cli, ["init", "--artifacts", str(artifacts), "--out", str(out), *extra]
    )


def plan_and_build(config: Path, artifacts: Path, packages: Path, targets: str, *extra: str):
    """``gfxpack plan`` (JSON) and ``gfxpack build`` with ``config``, as init suggests them."""
    runner = CliRunner()
    planned = runner.invoke(
        cli,
        ["plan", "--config", str(config), "--target", targets, "--rocm-version", "8.2.0",
         "--format", "json", "-q", *extra],
    )  # fmt: skip
    assert planned.exit_code == 0, planned.output
    built = runner.invoke(
        cli,
        ["build", "--config", str(config), "--artifacts", str(artifacts), "--out",
         str(packages), "--rocm-version", "8.2.0", "-j", "2"],
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    index = json.loads((packages / "index.json").read_text())
    return json.loads(planned.stdout), index


def every_file(artifacts: Path) -> set[tuple[str, str]]:
    """(directory, path) of every file and symlink under the prefixes the manifests list."""
    tree = scan(artifacts)
    found = set()
    for directory in tree.directories:
        for prefix in tree.manifest(directory):
            top = artifacts / directory / prefix
            for root, dirs, files in os.walk(top):
                for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
                    found.add((directory, os.path.relpath(os.path.join(root, name), top)))
    return found


def test_the_example_tree_gets_one_package_per_artifact_that_plans_and_builds(
    example_artifacts: Path, tmp_path: Path
):
    config = tmp_path / "package.json"
    result = init(example_artifacts, config)
    assert result.exit_code == 0, result.output
    artifacts = sorted({name.split("_")[0] for name in scan(example_artifacts).directories})
    assert result.stdout.startswith(
        f"wrote {config}: {len(artifacts)} packages from 84 artifact directories "
        "(kpack mode, GPU targets: gfx942, gfx950, gfx1100)\n"
    )
    assert "review before building:\n  - Maintainer" in result.stdout
    assert "--target gfx942,gfx950,gfx1100 --rocm-version VERSION" in result.stdout
    specs = {spec.name: spec for spec in load_config(config).packages}
    assert sorted(specs) == [f"amdrocm-{name}" for name in artifacts]
    assert load_config(config).warnings == ()
    gfxarch = {name for name, spec in specs.items() if spec.gfxarch}
    assert gfxarch == {
        f"amdrocm-{name}"
        for name in ("blas", "fft", "hipdnn", "miopen", "rand", "solver", "sparse")
    }
    blas = specs["amdrocm-blas"].artifactory
    assert [(s.artifact, s.gfxarch) for s in blas] == [("blas", True)]
    # The names TheRock's own file gives these subdirs: the distinctive part of each line.
    assert {s.name for s in blas[0].subdirs} == {
        "hipBLAS", "hipBLASLt", "hipSPARSELt", "origami", "rocBLAS", "rocRoller",
    }  # fmt: skip

    plan_json, index = plan_and_build(
        config, example_artifacts, tmp_path / "packages", ",".join(EXAMPLE_TARGETS)
    )
    built = {entry["package"] for entry in index["files"]}
    devices = {p["name"] for p in plan_json["packages"] if p["kind"] == str(Kind.DEVICE)}
    assert {"amdrocm-blas8.2-gfx942", "amdrocm-blas8.2-gfx1100"} <= devices & built
    # Every file of the tree is in exactly one package: nothing left behind.
    release = prepare(config, example_artifacts, ReleaseOptions("8.2.0"))
    routed = [e for entries in release.routed.values() for e in entries if e.kind != "dir"]
    assert len(routed) == len(every_file(example_artifacts)) > 200


def test_a_single_arch_tree_keeps_its_generic_content(tmp_path: Path):
    artifacts = tmp_path / "artifacts"
    load_generator().generate(
        artifacts, EXAMPLE_CONFIG, EXAMPLE_TARGETS, 0.01, 7, family="gfx94X-dcgpu"
    )
    config = tmp_path / "package.json"
    result = init(artifacts, config)
    assert result.exit_code == 0, result.output
    assert "(single-arch mode, GPU targets: gfx94X-dcgpu)" in result.stdout
    assert "--target gfx94X-dcgpu --mode single-arch --rocm-version VERSION" in result.stdout
    # blas's headers stay generic while its libraries are the family's: a single-arch
    # build reads a gfxarch artifact from the family's directory only, so the generic
    # part is an entry of its own.
    blas = load_config(config).get("amdrocm-blas")
    assert blas is not None and blas.gfxarch
    assert [(s.gfxarch, s.subdirs[0].components) for s in blas.artifactory] == [
        (False, ("dev",)),
        (True, ("lib", "run", "doc")),
    ]
    _, index = plan_and_build(
        config, artifacts, tmp_path / "packages", "gfx94X-dcgpu", "--mode", "single-arch"
    )
    assert "amdrocm-blas8.2-gfx94x" in {entry["package"] for entry in index["files"]}
    release = prepare(config, artifacts, ReleaseOptions("8.2.0", detect_mode=True))
    assert release.plan.mode is Mode.SINGLE_ARCH
    routed = [e for entries in release.routed.values() for e in entries if e.kind != "dir"]
    assert len(routed) == len(every_file(artifacts))


@pytest.mark.slow
def test_a_split_hipcc_library_gets_its_device_packages(tmp_path_factory, tmp_path: Path):
    from gfxpack.fatbin.split import split_tree
    from tests.fatbin.conftest import build_once

    hip = build_once(tmp_path_factory)  # skips, naming hipcc, when it is not installed
    install = tmp_path / "tree"
    (install / "lib").mkdir(parents=True)
    (install / "lib" / "libtwo.so.1").write_bytes(hip.two_files.read_bytes())
    (install / "lib" / "libtwo.so").symlink_to("libtwo.so.1")
    split_tree(install, tmp_path / "split", name="demo_lib")
    config = tmp_path / "package.json"
    result = init(tmp_path / "split", config)
    assert result.exit_code == 0, result.output
    assert (
        "1 package from 4 artifact directories (kpack mode, GPU targets: gfx906, gfx90a, gfx1030)"
    ) in result.stdout
    _, index = plan_and_build(config, tmp_path / "split", tmp_path / "packages", "gfx90a")
    built = {(entry["package"], entry["format"]) for entry in index["files"]}
    for fmt in ("deb", "rpm"):
        assert {
            ("amdrocm-demo-host8.2", fmt),
            *((f"amdrocm-demo8.2-{arch}", fmt) for arch in ("gfx906", "gfx90a", "gfx1030")),
        } <= built


def test_subdir_names_select_each_line_once():
    assert subdir_names(["projects/util-linux/stage"]) == {
        "projects/util-linux/stage": ("projects/util-linux/stage",)
    }
    assert subdir_names(["core/a/stage", "core/b/stage", "other/a/stage"]) == {
        "b": ("core/b/stage",),
        "core/a": ("core/a/stage",),
        "other": ("other/a/stage",),
    }
    # A line that is a run of another's components selects both: one name for the two.
    assert subdir_names(["stage", "x/stage/y"]) == {"stage": ("stage", "x/stage/y")}


# --- the output file -------------------------------------------------------------------


def test_an_existing_output_is_replaced_only_with_force(tmp_path: Path):
    artifacts = tmp_path / "artifacts"
    make_tree(artifacts)
    config = tmp_path / "package.json"
    config.write_text("mine\n")
    refused = init(artifacts, config)
    assert refused.exit_code == 1
    assert refused.stderr == f"error: {config}: already exists (give --force to replace it)\n"
    assert refused.stdout == ""
    assert config.read_text() == "mine\n"
    replaced = init(artifacts, config, "--force")
    assert replaced.exit_code == 0, replaced.output
    assert [spec.name for spec in load_config(config).packages] == ["amdrocm-blas"]


def test_a_symlink_output_is_replaced_never_written_through(tmp_path: Path):
    artifacts = tmp_path / "artifacts"
    make_tree(artifacts)
    outside = tmp_path / "outside.json"
    outside.write_text("not yours\n")
    before = outside.stat()
    link = tmp_path / "out" / "package.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    refused = init(artifacts, link)
    assert refused.exit_code == 1
    assert refused.stderr == f"error: {link}: already exists (give --force to replace it)\n"
    assert link.is_symlink()
    forced = init(artifacts, link, "--force")
    assert forced.exit_code == 0, forced.output
    assert not link.is_symlink() and load_config(link).packages[0].name == "amdrocm-blas"
    after = outside.stat()
    assert outside.read_text() == "not yours\n"
    assert (after.st_ino, after.st_nlink, after.st_mtime_ns) == (
        before.st_ino,
        before.st_nlink,
        before.st_mtime_ns,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["artifacts", "out", "outside.json"]


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("dir", "{out}: is a directory; give the name of the file to write"),
        ("missing/package.json", "{out}: cannot write: No such file or directory"),
    ],
)
def test_an_output_that_cannot_be_written_is_one_error(tmp_path: Path, out: str, message: str):
    artifacts = tmp_path / "artifacts"
    make_tree(artifacts)
    (tmp_path / "dir").mkdir()
    result = init(artifacts, tmp_path / out)
    assert result.exit_code == 1
    assert result.stderr == f"error: {message.format(out=tmp_path / out)}\n"
    assert list((tmp_path / "dir").iterdir()) == []
    assert not (tmp_path / "missing").exists()


# --- trees that cannot be described, or not built as they are ---------------------------


def artifact(root: Path, directory: str, lines: str, files: dict[str, str]) -> None:
    (root / directory).mkdir(parents=True)
    (root / directory / "artifact_manifest.txt").write_text(lines)
    for path, text in files.items():
        (root / directory / path).parent.mkdir(parents=True, exist_ok=True)
        (root / directory / path).write_text(text)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: None, "{root}: artifacts directory does not exist"),
        (
            lambda root: (root / "logs").mkdir(parents=True),
            "{root}: no artifact directories (expected <name>_<component>_<target>/ holding "
            "artifact_manifest.txt, such as blas_lib_generic/)",
        ),
        (
            lambda root: (
                artifact(root, "Foo_lib_generic", "a\n", {"a/x": "1"}),
                artifact(root, "foo_lib_generic", "b\n", {"b/y": "2"}),
            ),
            "{root}: artifacts 'Foo' and 'foo' would both be package amdrocm-foo; rename one "
            "of their directories",
        ),
        (
            lambda root: artifact(root, "x_lib_generic", "a\nb\nb/a/c\n", {}),
            "{root}/x_*: no subdir names select each manifest line once: a name selects "
            "every line holding it as a run of components, so both 'a' and 'b' select "
            "'b/a/c'; give that content a line of its own",
        ),
        (
            lambda root: (
                artifact(root, "real_lib_generic", "a\n", {"a/x": "1"}),
                (root / "blas_lib_generic").symlink_to(root / "real_lib_generic"),
            ),
            "{root}/blas_lib_generic: is a symlink; artifact directories must be real "
            "directories (gfxpack never follows a directory symlink)",
        ),
        (
            lambda root: artifact(root, "x_lib_generic", "", {}),
            "{root}: no artifact directory lists content to package",
        ),
    ],
    ids=["missing", "empty", "case", "nested", "symlink", "no-content"],
)
def test_a_tree_that_cannot_be_described_is_one_error(tmp_path: Path, make, message: str):
    root = tmp_path / "artifacts"
    make(root)
    result = init(root, tmp_path / "package.json")
    assert result.exit_code == 1
    assert result.stderr == f"error: {message.format(root=root)}\n"
    assert not (tmp_path / "package.json").exists()


def test_what_build_would_refuse_is_said_before_it_runs(tmp_path: Path):
    """Two artifacts that install one path: the starter is written, its notes say build
    will refuse it and why, and build does."""
    root = tmp_path / "artifacts"
    artifact(root, "one_lib_generic", "stage\n", {"stage/lib/libx.so": "one"})
    artifact(root, "two_lib_generic", "stage\n", {"stage/lib/libx.so": "two"})
    artifact(root, "one_lib_gfx942", "stage\n", {"stage/lib/x_gfx942.co": "code"})
    (root / "therock_manifest.json").write_text('{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}')
    (root / "odd_lib_banana").mkdir()
    (root / "odd_lib_banana" / "artifact_manifest.txt").write_text("")
    (root / "odd_extra_generic").mkdir()
    (root / "odd_extra_generic" / "artifact_manifest.txt").write_text("")
    config = tmp_path / "package.json"
    result = init(root, config)
    assert result.exit_code == 0, result.output
    notes = result.stdout.splitlines()
    assert (
        "  - gfxpack build will refuse this tree until fixed: amdrocm-one-host1.0 and "
        "amdrocm-two1.0 both install /opt/rocm/core-1.0/lib/libx.so"
    ) in notes
    assert (
        "  - odd_lib_banana/: its target is neither 'generic' nor a GPU target (such as "
        "gfx942); gfxpack does not package it"
    ) in notes
    assert (
        "  - odd_extra_generic/: component 'extra' is none of lib, run, dev, doc, test, dbg; "
        "not packaged"
    ) in notes
    built = CliRunner().invoke(
        cli,
        ["build", "--config", str(config), "--artifacts", str(root), "--out",
         str(tmp_path / "packages"), "--rocm-version", "8.2.0"],
    )  # fmt: skip
    assert built.exit_code == 1
    assert "both install /opt/rocm/core-8.2/lib/libx.so" in built.stderr


def test_propose_is_a_library_call(tmp_path: Path):
    root = tmp_path / "artifacts"
    make_tree(root)
    starter = propose(root)
    assert starter.packages == ("amdrocm-blas",)
    assert starter.mode is Mode.SINGLE_ARCH and starter.targets == ("gfx942",)
    # Its gfx942 directory lists nothing: no device code, so not gfxarch.
    assert json.loads(starter.text)[0]["Gfxarch"] == "False"
    with pytest.raises(StarterError, match="no artifact directory lists content"):
        (root / "blas_lib_generic" / "artifact_manifest.txt").write_text("")
        propose(root)


def test_init_placeholders_are_one_warning_per_field_at_build(tmp_path: Path):
    """The Maintainer and the empty License init writes would ship in every package: the
    build says so once per field, naming the packages, and --strict refuses them."""
    artifacts = tmp_path / "artifacts"
    make_tree(artifacts)
    config = tmp_path / "package.json"
    assert init(artifacts, config).exit_code == 0
    args = ["build", "--config", str(config), "--artifacts", str(artifacts)]
    args += ["--rocm-version", "8.2.0", "-j", "1", "--out"]
    built = CliRunner().invoke(cli, [*args, str(tmp_path / "out")])
    assert built.exit_code == 0, built.output
    warnings = [line for line in built.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {config}: Maintainer of amdrocm-blas is gfxpack init's placeholder "
        "'Your Name <you@example.invalid>': set who answers for the packages",
        f"warning: {config}: License of amdrocm-blas is empty (an RPM then says 'Unknown'): "
        "set the license, such as MIT",
    ]
    # Filled in, they are heard of no more.
    entries = json.loads(config.read_text())
    for entry in entries:
        entry.update(Maintainer="ROCm <rocm@amd.com>", License="MIT")
    config.write_text(json.dumps(entries))
    again = CliRunner().invoke(cli, [*args, str(tmp_path / "again"), "--strict"])
    assert again.exit_code == 0, again.output
    assert "warning: " not in again.stderr
