"""gfxpack diff between the example's 8.2.0 build and an 8.2.1 build with one package
added, one removed, one dependency changed and one file moved."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.artifacts import route, scan
from gfxpack.build import DEFAULT_EPOCH, BuildOptions, build
from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.diff import compare, text
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.formats.payload import Entry, EntryKind
from gfxpack.formats.rpm_policy import LDCONFIG, ships_linker_libraries
from gfxpack.inventory import Inventory, Package
from gfxpack.plan import Kind, PlannedPackage, ReleasePlan, plan
from gfxpack.plan.model import PackageRelations
from gfxpack.repo import publish
from gfxpack.repo.rpmfile import FILEDIGESTALGO
from tests.conftest import EXAMPLE_CONFIG, EXAMPLE_TARGETS, build_example
from tests.repo.test_file_digests import patch_rpm_tag, write_deb

pytestmark = pytest.mark.slow  # make check skips it: the example release built twice

REMOVED = "amdrocm-hipify"  # a non-versioned package nothing depends on
ADDED = "amdrocm-hipify-tools8.2"
CHANGED = "amdrocm-blas8.2-gfx942"  # its amdrocm-solver8.2-gfx942 pin: >= becomes =
DEPENDENCY = "amdrocm-solver8.2-gfx942"
MOVED_FROM, MOVED_TO = "amdrocm-blas-host8.2", "amdrocm-blas-devel8.2"


@dataclasses.dataclass
class Update:
    out: Path
    plan: ReleasePlan
    moved: str  # the path that moved
    moved_size: int


def _changed_plan(release_plan: ReleasePlan) -> ReleasePlan:
    assert not any(req.target == REMOVED for p in release_plan.packages for req in p.deb.edges()), (
        "the removed package must be a leaf"
    )
    packages = [p for p in release_plan.packages if p.key != REMOVED]

    def pin_exact(relations: PackageRelations) -> PackageRelations:
        depends = tuple(
            tuple(dataclasses.replace(r, op="=") if r.target == DEPENDENCY else r for r in dep)
            for dep in relations.depends
        )
        return dataclasses.replace(relations, depends=depends)

    packages = [
        dataclasses.replace(p, deb=pin_exact(p.deb), rpm=pin_exact(p.rpm))
        if p.key == CHANGED
        else p
        for p in packages
    ]
    packages.append(
        PlannedPackage(
            key=ADDED,
            base="amdrocm-hipify",
            kind=Kind.VERSIONED_META,
            arch=None,
            has_files=False,
            deb=PackageRelations(ADDED),
            rpm=PackageRelations(ADDED),
        )
    )
    return dataclasses.replace(release_plan, packages=tuple(packages))


@pytest.fixture(scope="module")
def update(example_artifacts, tmp_path_factory) -> Update:
    tree = scan(example_artifacts)
    specs = load_config(EXAMPLE_CONFIG).packages
    release_plan = _changed_plan(plan(specs, tree.index.targets(), "8.2.1", artifacts=tree.index))
    routed = dict(route(release_plan, tree, DEFAULT_EPOCH))
    # Move one library from the host package to the -devel package, into a directory
    # the -devel package has too.
    devel_dirs = {e.path for e in routed[MOVED_TO] if e.kind == "dir"}
    moved = next(
        e for e in routed[MOVED_FROM] if e.kind == "file" and e.path.rsplit("/", 1)[0] in devel_dirs
    )
    routed[MOVED_FROM] = tuple(e for e in routed[MOVED_FROM] if e != moved)
    routed[MOVED_TO] = tuple(sorted((*routed[MOVED_TO], moved), key=lambda e: e.path))
    out = tmp_path_factory.mktemp("update") / "packages"
    build(release_plan, routed, out, BuildOptions(jobs=2))
    return Update(out, release_plan, moved.path, moved.size)


def diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["diff", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_each_change_reported_exactly(example_release, update, fmt):
    status, output = diff(str(example_release.out), str(update.out), "--format", fmt.name, "--json")
    assert status == 0, output
    found = json.loads(output)
    name = {p.key: p.name(fmt) for p in update.plan.packages}
    assert found["added"] == [ADDED]
    assert found["removed"] == [REMOVED]
    # Every pin moved from 8.2.0-1 to 8.2.1-1: only the one real change is reported.
    pin = "{} ({} 8.2.{}-1)" if fmt is DEB else "{} {} 8.2.{}-1"
    expected = [
        {
            "package": CHANGED,
            "field": "depends",
            "removed": [pin.format(DEPENDENCY, ">=", 0)],
            "added": [pin.format(DEPENDENCY, "=", 1)],
        }
    ]
    if fmt is RPM and ships_linker_libraries((Entry(update.moved, EntryKind.FILE),)):
        # The moved shared library brings ldconfig scriptlets, and Requires(post) on
        # ldconfig, to the package it moved to: a real change of its requirements.
        expected.append(
            {"package": name[MOVED_TO], "field": "depends", "removed": [], "added": [LDCONFIG]}
        )
    key = lambda change: change["package"]  # noqa: E731
    assert sorted(found["dependencies"], key=key) == sorted(expected, key=key)
    assert found["moved"] == [
        {"path": update.moved, "old": [name[MOVED_FROM]], "new": [name[MOVED_TO]]}
    ]
    sizes = {c["name"]: c for c in found["packages"]}
    assert {ADDED, REMOVED, name[MOVED_FROM], name[MOVED_TO]} <= sizes.keys()
    assert sizes[REMOVED]["download"][1] == 0 and sizes[ADDED]["download"][0] == 0
    old_host, new_host = sizes[name[MOVED_FROM]]["installed"]
    old_devel, new_devel = sizes[name[MOVED_TO]]["installed"]
    if fmt is RPM:  # RPM records exact bytes; DEB Installed-Size rounds up to KiB
        assert old_host - new_host == new_devel - old_devel == update.moved_size
    else:
        assert new_host < old_host and new_devel > old_devel
    # Installed sizes of other packages did not change: only control data did.
    assert all(
        c["installed"][0] == c["installed"][1]
        for n, c in sizes.items()
        if n not in {ADDED, REMOVED, name[MOVED_FROM], name[MOVED_TO]}
    )
    arches = {c["name"]: c for c in found["arches"]}
    assert set(arches) <= {"host", *EXAMPLE_TARGETS}
    assert found["changed"] is True and found["not_compared"] == []


def test_text_and_exit_code(example_release, update):
    status, output = diff(str(example_release.out), str(update.out), "--exit-code")
    assert status == 1
    lines = output.splitlines()
    assert lines[0] == f"--- {example_release.out} (build 8.2.0-1, deb)"
    assert lines[1] == f"+++ {update.out} (build 8.2.1-1, deb)"
    assert f"  + {ADDED}" in lines and f"  - {REMOVED}" in lines
    assert f"  {CHANGED} (depends):" in lines
    assert f"    - {DEPENDENCY} (>= 8.2.0-1)" in lines
    assert f"    + {DEPENDENCY} (= 8.2.1-1)" in lines
    assert f"  {update.moved}: amdrocm-blas-host8.2 -> amdrocm-blas-dev8.2" in lines
    assert "size per arch:" in lines
    same, text = diff(str(example_release.out), str(example_release.out), "--exit-code")
    assert (same, text.splitlines()[2]) == (0, "no differences")


def test_a_repository_and_a_plan_against_the_build(example_release, tmp_path):
    repo = tmp_path / "repo"
    publish(example_release.out, repo, "stable", 1_700_000_000)
    for fmt in FORMATS:
        status, output = diff(str(example_release.out), str(repo), "--format", fmt.name, "--json")
        assert status == 0 and json.loads(output)["changed"] is False, output
    status, output = diff(
        str(EXAMPLE_CONFIG),
        str(example_release.out),
        "--target",
        ",".join(EXAMPLE_TARGETS),
        "--rocm-version",
        "8.2.0",
        "--json",
    )
    found = json.loads(output)
    # The build planned with what the artifacts hold: amdrocm-dnn has no gfx950 build.
    assert found["removed"] == ["amdrocm-dnn8.2-gfx950"] and found["added"] == []
    assert found["not_compared"] == ["files", "sizes"]
    planned = tmp_path / "plan.json"
    planned.write_text(
        json.dumps(json.loads((example_release.out / "index.json").read_text())["plan"])
    )
    status, output = diff(str(planned), str(example_release.out), "--exit-code")
    assert status == 0, output


def test_errors_exit_2(tmp_path):
    (tmp_path / "x.json").write_text("[]")
    status, output = diff(str(tmp_path / "x.json"), str(tmp_path))
    assert status == 2
    assert output == (
        f"error: {tmp_path / 'x.json'}: a package.json needs the release to plan: "
        "add --target and --rocm-version\n"
    )
    (tmp_path / "y.json").write_text('{"packages": [{"name": 1}]}')
    status, output = diff(str(tmp_path / "y.json"), str(tmp_path / "y.json"))
    assert status == 2 and output.startswith(f"error: {tmp_path / 'y.json'}: not a gfxpack plan")
    status, output = diff(str(tmp_path), str(tmp_path))
    assert status == 2 and "neither a build directory" in output


def test_a_symlink_out_of_the_build_is_not_followed(example_release, tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    index = json.loads((example_release.out / "index.json").read_text())
    index["files"] = [f for f in index["files"] if f["format"] == "deb"][:1]
    (build / "index.json").write_text(json.dumps(index))
    outside = example_release.out / index["files"][0]["file"]
    (build / index["files"][0]["file"]).symlink_to(outside)
    status, output = diff(str(build), str(build))
    assert status == 2
    assert output == (
        f"error: {build / index['files'][0]['file']}: leads outside {build} (a symlink?); "
        "not read\n"
    )


@pytest.mark.parametrize("fmt", ["deb", "rpm"])
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_package_is_one_error_line(example_release, tmp_path, fmt, damage):
    build = tmp_path / "build"
    build.mkdir()
    index = json.loads((example_release.out / "index.json").read_text())
    index["files"] = [f for f in index["files"] if f["format"] == fmt][:1]
    (build / "index.json").write_text(json.dumps(index))
    name = index["files"][0]["file"]
    data = (example_release.out / name).read_bytes()
    cut = {"truncated": data[: len(data) // 2], "garbage": data[:8] + bytes(range(256)) * 4}
    data = cut[damage]
    (build / name).write_bytes(data)
    status, output = diff(str(build), str(build), "--format", fmt)
    assert status == 2
    assert output.startswith(f"error: {build / name}") and output.count("\n") == 1, output


@pytest.fixture(scope="module")
def two_releases(example_release, update, tmp_path_factory) -> Path:
    """8.2.0, then the changed 8.2.1, published into one repository (the README's
    incremental workflow)."""
    repo = tmp_path_factory.mktemp("two-releases") / "repo"
    for build_dir in (example_release.out, update.out):
        publish(build_dir, repo, "stable", 1_700_000_000)
    return repo


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_a_repository_of_two_releases_is_its_newest_versions(
    example_release, update, two_releases, fmt
):
    # The repository keeps 8.2.0's packages: its newest version of each name is 8.2.1's
    # package, and the package 8.2.1 removed is still there at 8.2.0.
    status, output = diff(str(update.out), str(two_releases), "--format", fmt.name, "--json")
    assert status == 0, output
    found = json.loads(output)
    assert found["new"] == f"{two_releases} (repository 2 versions, {fmt})"
    assert (found["added"], found["removed"]) == ([REMOVED], [])
    # Had any 8.2.0 package been taken for its name, its pins, files or sizes would differ.
    assert found["dependencies"] == [] and found["moved"] == []
    assert [c["name"] for c in found["packages"]] == [REMOVED]
    # Against 8.2.0 the repository shows 8.2.1's changes, less the removal.
    status, output = diff(str(example_release.out), str(two_releases), "--format", fmt.name)
    assert status == 0, output
    lines = output.splitlines()
    assert f"  + {ADDED}" in lines and f"  {CHANGED} (depends):" in lines
    assert not any(line.startswith("packages removed") for line in lines)
    pin = "{} ({} 8.2.{}-1)" if fmt is DEB else "{} {} 8.2.{}-1"
    assert f"    - {pin.format(DEPENDENCY, '>=', 0)}" in lines
    assert f"    + {pin.format(DEPENDENCY, '=', 1)}" in lines
    moved_to = update.plan.by_key[MOVED_TO].name(fmt)
    assert any(line.startswith(f"  {update.moved}: ") and line.endswith(moved_to) for line in lines)


# --- what changed inside packages, and releases that differ only in version ---------------

BLAS_LIB = "blas_lib_generic/math-libs/BLAS"  # the artifact of amdrocm-blas-host8.2
LIB = "/opt/rocm/core-8.2/lib"


@dataclasses.dataclass
class FileChanges:
    out: Path
    old_digest: str  # sha256 of the changed library before and after
    new_digest: str


@pytest.fixture(scope="module")
def file_changes(example_artifacts, tmp_path_factory) -> FileChanges:
    """8.2.1 built from the example's artifacts with, in amdrocm-blas-host8.2's, one
    library changed, one symlink removed and one file added."""
    base = tmp_path_factory.mktemp("file-changes")
    artifacts = base / "artifacts"
    shutil.copytree(example_artifacts, artifacts, symlinks=True)
    library = artifacts / BLAS_LIB / "hipBLAS/stage/lib/libhipblas.so.1.4.0"
    before = library.read_bytes()
    library.write_bytes(before + b"\0")
    (artifacts / BLAS_LIB / "origami/stage/lib/liborigami.so.1").unlink()
    (artifacts / BLAS_LIB / "hipBLAS/stage/lib/hipblas-tuning.txt").write_text("tuned\n")
    out = build_example(artifacts, base / "packages", version="8.2.1").out
    return FileChanges(
        out, hashlib.sha256(before).hexdigest(), hashlib.sha256(before + b"\0").hexdigest()
    )


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_files_added_removed_and_changed_in_a_package(example_release, file_changes, fmt):
    old, new = str(example_release.out), str(file_changes.out)
    status, output = diff(old, new, "--format", fmt.name, "--json")
    assert status == 0, output
    found = json.loads(output)
    assert found["files"] == [
        {
            "package": "amdrocm-blas-host8.2",
            "added": [f"{LIB}/hipblas-tuning.txt"],
            "removed": [f"{LIB}/liborigami.so.1"],
            "changed": [
                {
                    "path": f"{LIB}/libhipblas.so.1.4.0",
                    "old": f"sha256:{file_changes.old_digest}",
                    "new": f"sha256:{file_changes.new_digest}",
                }
            ],
        }
    ]
    assert (found["added"], found["removed"], found["dependencies"]) == ([], [], [])
    assert found["version_only"] is False and found["changed"] is True

    status, output = diff(old, new, "--format", fmt.name)
    lines = output.splitlines()
    start = lines.index("files changed in packages (1):")
    assert lines[start : start + 5] == [
        "files changed in packages (1):",
        "  amdrocm-blas-host8.2:",
        f"    + {LIB}/hipblas-tuning.txt",
        f"    - {LIB}/liborigami.so.1",
        f"    ~ {LIB}/libhipblas.so.1.4.0 (sha256:{file_changes.old_digest[:12]}… -> "
        f"sha256:{file_changes.new_digest[:12]}…)",
    ]
    assert not lines[start + 5].startswith("    ")
    # The version changed too, but the files did: --ignore-version does not hide them.
    for extra in (["--exit-code"], ["--exit-code", "--ignore-version"]):
        status, output = diff(old, new, "--format", fmt.name, *extra)
        assert status == 1, (extra, output)


@pytest.fixture(scope="module")
def rebuilt(example_artifacts, tmp_path_factory) -> dict[str, Path]:
    """The example's artifacts built again as 8.2.1 and as 8.3.0 (names and the install
    prefix carry 8.3)."""
    base = tmp_path_factory.mktemp("rebuilt")
    return {
        v: build_example(example_artifacts, base / v, version=v).out for v in ("8.2.1", "8.3.0")
    }


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("version", ["8.2.1", "8.3.0"])
def test_a_release_that_differs_only_in_version_says_so_in_one_line(
    example_release, rebuilt, fmt, version
):
    old, new = str(example_release.out), str(rebuilt[version])
    count = len(example_release.files(fmt))
    # The version alone is a difference for --exit-code, and none with --ignore-version.
    status, output = diff(old, new, "--format", fmt.name, "--exit-code")
    assert status == 1
    assert output.splitlines() == [
        f"--- {old} (build 8.2.0-1, {fmt})",
        f"+++ {new} (build {version}-1, {fmt})",
        f"8.2.0 → {version}: only the version changed ({count} packages, identical contents)",
    ]
    status, output = diff(
        old, new, "--format", fmt.name, "--json", "--exit-code", "--ignore-version"
    )
    assert status == 0
    found = json.loads(output)
    assert found["version_only"] is True and found["compared"] == count
    assert found["added"] == found["removed"] == found["files"] == found["moved"] == []
    renamed = {r["old"]: r["new"] for r in found["renamed"]}
    if version == "8.3.0":  # every versioned name, and the prefix /opt/rocm/core-8.3
        assert renamed["amdrocm-blas8.2-gfx942"] == "amdrocm-blas8.3-gfx942"
        assert renamed["amdrocm-blas-host8.2"] == "amdrocm-blas-host8.3"
        assert "amdrocm-blas" not in renamed  # the unversioned name is the same
    else:
        assert renamed == {}


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_changes_across_x_y_pair_the_renamed_packages_and_paths(file_changes, rebuilt, fmt):
    """The changed 8.2.1 against 8.3.0 of the example's own files: amdrocm-blas-host8.2 and
    /opt/rocm/core-8.2 are amdrocm-blas-host8.3 and /opt/rocm/core-8.3."""
    status, output = diff(
        str(file_changes.out), str(rebuilt["8.3.0"]), "--format", fmt.name, "--json"
    )
    assert status == 0, output
    found = json.loads(output)
    new_lib = LIB.replace("8.2", "8.3")
    assert found["files"] == [
        {
            "package": "amdrocm-blas-host8.3",
            "added": [f"{new_lib}/liborigami.so.1"],
            "removed": [f"{LIB}/hipblas-tuning.txt"],
            "changed": [
                {
                    "path": f"{new_lib}/libhipblas.so.1.4.0",
                    "old": f"sha256:{file_changes.new_digest}",
                    "new": f"sha256:{file_changes.old_digest}",
                }
            ],
        }
    ]
    assert found["added"] == found["removed"] == found["dependencies"] == found["moved"] == []
    assert {"old": "amdrocm-blas-host8.2", "new": "amdrocm-blas-host8.3"} in found["renamed"]
    assert found["version_only"] is False


def test_contents_not_recorded_are_not_called_identical():
    """A side that knows a package's paths but not what they hold (None) is compared by
    path, and the one line says so."""

    def inventory(version: str, content: str | None) -> Inventory:
        package = Package(
            name="tool",
            version=version,
            arch=None,
            kind=None,
            depends=(),
            recommends=(),
            files={"/opt/tool/bin/tool": content},
            download=10,
            installed=10,
        )
        return Inventory(f"r{version}", "repository", DEB, {"tool": package})

    result = compare(inventory("1.0-1", "sha256:ab"), inventory("1.1-1", None))
    assert result.version_only and result.not_compared == ["file contents"]
    assert text(result).splitlines()[2] == (
        "1.0 → 1.1: only the version changed (1 packages, the same files; their contents "
        "not compared: one side does not record them)"
    )
    changed = compare(inventory("1.0-1", "sha256:ab"), inventory("1.1-1", "sha256:cd"))
    assert not changed.version_only
    assert changed.files[0].changed[0].old == "sha256:ab"


@pytest.mark.parametrize("fmt", ["deb", "rpm"])
def test_a_broken_file_list_is_one_error_line(example_release, tmp_path, fmt):
    build = tmp_path / "build"
    build.mkdir()
    if fmt == "rpm":
        rpm = example_release.files("rpm")["amdrocm-blas-host8.2"]
        name = rpm.name
        patch_rpm_tag(rpm, build / name, FILEDIGESTALGO, 99)
        why = "file digest algorithm [99] is not one rpm knows"
    else:
        name = "tool_1.0-1_all.deb"
        link = tarfile.TarInfo("./opt/tool/b")
        link.type, link.linkname = tarfile.LNKTYPE, "./opt/tool/a"
        write_deb(build / name, [(link, b"")])
        why = (
            "data.tar: hard link './opt/tool/b' to './opt/tool/a', which is not an earlier "
            "file of the archive"
        )
    data = (build / name).read_bytes()
    listed = {"file": name, "format": fmt, "size": len(data)}
    listed["sha256"] = hashlib.sha256(data).hexdigest()
    (build / "index.json").write_text(json.dumps({"files": [listed]}))
    before = {p: p.read_bytes() for p in build.iterdir()}
    status, output = diff(str(build), str(build), "--format", fmt)
    assert (status, output) == (2, f"error: {build / name}: {why}\n")
    assert {p: p.read_bytes() for p in build.iterdir()} == before  # diff writes nothing
