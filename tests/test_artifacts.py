"""Scanning an artifacts tree and routing its files to packages."""

from __future__ import annotations

import json

import pytest

from gfxpack.artifacts import (
    ContentCollision,
    InvalidArtifacts,
    route,
    scan,
    selects,
)
from gfxpack.config import parse_config
from gfxpack.plan import Kind, plan


def test_scan_reads_the_example(example_artifacts):
    tree = scan(example_artifacts)
    assert tree.kpack_split
    assert tree.index.targets() == ("gfx942", "gfx950", "gfx1100")  # processor order
    assert "blas_lib_gfx942:xnack+" in tree.directories
    assert tree.manifest("blas_lib_generic")[0] == "math-libs/BLAS/hipBLAS/stage"


@pytest.mark.parametrize(
    ("subdir", "line", "selected"),
    [
        ("rocBLAS", "math-libs/BLAS/rocBLAS/stage", True),
        ("ROCBLAS", "math-libs/BLAS/rocBLAS/stage", True),
        ("BLAS", "math-libs/BLAS/rocBLAS/stage", True),
        ("BLAS/rocBLAS", "math-libs/BLAS/rocBLAS/stage", True),
        ("hipBLAS", "math-libs/BLAS/hipBLASLt/stage", False),  # upstream's substring match: True
        ("rocBLAS/BLAS", "math-libs/BLAS/rocBLAS/stage", False),
    ],
)
def test_subdirs_select_whole_components(subdir, line, selected):
    assert selects(subdir, line) is selected


@pytest.fixture(scope="module")
def routed(example_release):
    return example_release.routed


def _paths(routed, key):
    return {e.path: e for e in routed[key]}


def test_xnack_variants_merge_into_the_device(routed):
    device = _paths(routed, "amdrocm-blas8.2-gfx942")
    prefix = "/opt/rocm/core-8.2"
    assert f"{prefix}/.kpack/blas_lib_gfx942.kpack" in device
    assert f"{prefix}/.kpack/blas_lib_gfx942:xnack+.kpack" in device
    assert f"{prefix}/lib/rocblas/library/TensileLibrary_gfx942-xnack+.co" in device
    assert not any("gfx1100" in path for path in device)


def test_hidden_entries_symlinks_and_modes(routed):
    host = _paths(routed, "amdrocm-blas-host8.2")
    prefix = "/opt/rocm/core-8.2"
    assert host[f"{prefix}/share/doc/rocblas/.buildinfo"].kind == "file"
    link = host[f"{prefix}/lib/librocblas.so.1"]
    assert (link.kind, link.target) == ("symlink", "librocblas.so.1.4.0")
    assert host[f"{prefix}/bin/rocblas-info"].mode == 0o755
    assert host[prefix].kind == "dir"  # the package owns its prefix, not /opt/rocm


def test_generic_only_artifacts_stay_on_the_host(routed):
    host = _paths(routed, "amdrocm-blas-host8.2")
    assert "/opt/rocm/core-8.2/lib/libhipblasltprovider.so.1.4.0" in host
    for key in ("amdrocm-blas8.2-gfx942", "amdrocm-blas8.2-gfx1100"):
        assert not any("hipblasltprovider" in path for path in _paths(routed, key))


def test_a_target_without_artifacts_gets_no_device(example_release):
    dnn = [p.key for p in example_release.plan.family("amdrocm-dnn") if p.kind is Kind.DEVICE]
    assert dnn == ["amdrocm-dnn8.2-gfx942", "amdrocm-dnn8.2-gfx1100"]


def write_artifact(root, directory, prefix, files):
    base = root / directory
    (base / prefix).mkdir(parents=True, exist_ok=True)
    (base / "artifact_manifest.txt").write_text(prefix + "\n")
    for name, text in files.items():
        (base / prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (base / prefix / name).write_text(text)


def test_two_packages_installing_one_path_is_an_error(tmp_path):
    write_artifact(tmp_path, "a_lib_generic", "libs/A/stage", {"lib/libcommon.so": "a"})
    write_artifact(tmp_path, "b_lib_generic", "libs/B/stage", {"lib/libcommon.so": "b"})
    write_artifact(tmp_path, "kernels_lib_gfx942", "libs/K/stage", {"k.co": "k"})  # the target
    config = parse_config(
        json.dumps(
            [
                {
                    "Package": "amdrocm-a",
                    "Artifactory": [
                        {"Artifact": "a", "Artifact_Subdir": [{"Name": "A", "Components": ["lib"]}]}
                    ],
                },
                {
                    "Package": "amdrocm-b",
                    "Artifactory": [
                        {"Artifact": "b", "Artifact_Subdir": [{"Name": "B", "Components": ["lib"]}]}
                    ],
                },
            ]
        )
    )
    tree = scan(tmp_path)
    release = plan(config.packages, ["gfx942"], "8.2.0", artifacts=tree.index)
    with pytest.raises(ContentCollision) as caught:
        route(release, tree, 0)
    assert str(caught.value) == (
        "amdrocm-a8.2 and amdrocm-b8.2 both install /opt/rocm/core-8.2/lib/libcommon.so"
    )


def test_missing_directory(tmp_path):
    with pytest.raises(InvalidArtifacts, match=r"nope: artifacts directory does not exist$"):
        scan(tmp_path / "nope")


def test_a_file_is_not_an_artifacts_directory(tmp_path):
    (tmp_path / "x").write_text("")
    with pytest.raises(InvalidArtifacts, match=r"/x: not a directory$"):
        scan(tmp_path / "x")


def test_no_artifact_directories(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "blas_lib_generic").mkdir()  # no manifest
    with pytest.raises(InvalidArtifacts) as caught:
        scan(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path}: no artifact directories (expected <name>_<component>_<target>/ holding "
        "artifact_manifest.txt, such as blas_lib_generic/)"
    )


@pytest.mark.parametrize("line", ["/abs/stage", "../outside", "a/../../b"])
def test_manifest_lines_must_stay_inside(tmp_path, line):
    write_artifact(tmp_path, "a_lib_generic", "libs/A/stage", {"x": "1"})
    (tmp_path / "a_lib_generic" / "artifact_manifest.txt").write_text(f"libs/A/stage\n{line}\n")
    with pytest.raises(InvalidArtifacts) as caught:
        scan(tmp_path).manifest("a_lib_generic")
    assert str(caught.value) == (
        f"{tmp_path}/a_lib_generic/artifact_manifest.txt:2: {line!r} "
        "must be a relative path inside the artifact"
    )


def test_malformed_therock_manifest(tmp_path):
    write_artifact(tmp_path, "base_lib_generic", "base/stage", {"share/therock_manifest.json": "{"})
    with pytest.raises(InvalidArtifacts, match=r"therock_manifest.json: not a JSON object"):
        scan(tmp_path)


def test_kpack_mode_needs_the_flag(tmp_path):
    write_artifact(
        tmp_path,
        "base_lib_generic",
        "base/stage",
        {"share/therock_manifest.json": '{"flags": {"KPACK_SPLIT_ARTIFACTS": false}}'},
    )
    assert scan(tmp_path).kpack_split is False


KPACK_ON = '{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}'
KPACK_OFF = '{"flags": {"KPACK_SPLIT_ARTIFACTS": false}}'
CANONICAL = "share/therock/therock_manifest.json"


def test_a_kpack_flag_anywhere_in_the_tree_counts(tmp_path):
    # TheRock's own place says no; another manifest deeper in the tree says yes.
    write_artifact(tmp_path, "base_lib_generic", "base/aux-overlay/stage", {CANONICAL: KPACK_OFF})
    write_artifact(tmp_path, "blas_lib_generic", "math-libs/BLAS/stage", {})
    assert scan(tmp_path).kpack_split is False
    write_artifact(tmp_path, "blas_lib_generic", "math-libs/BLAS/stage", {CANONICAL: KPACK_ON})
    assert scan(tmp_path).kpack_split is True


def test_a_symlink_on_the_way_to_the_canonical_manifest_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    write_artifact(outside, "elsewhere", "stage", {CANONICAL: KPACK_ON})
    tree = tmp_path / "artifacts"
    write_artifact(tree, "base_lib_generic", "base", {})
    (tree / "base_lib_generic/base/aux-overlay").symlink_to(outside / "elsewhere")
    assert scan(tree).kpack_split is False
