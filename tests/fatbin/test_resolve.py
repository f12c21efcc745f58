"""kpack resolve where users run it: on split output before installing (the archives in
the sibling artifacts), under ROCM_KPACK_PATH / ROCM_KPACK_PATH_PREFIX as the docs and
--help show them, misses that say what there is instead, and --json errors that are
JSON. On libraries hipcc built (one for gfx90a:xnack+ and gfx90a:xnack-)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import msgpack
import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.fatbin.reader import HIPK
from gfxpack.fatbin.resolve import (
    ArchiveNotFound,
    ArchNotFound,
    archive_paths,
    read_references,
    resolve,
)
from gfxpack.fatbin.split import split_tree
from tests.doc_commands import doc_block, gfxpack_shell
from tests.fatbin.conftest import HipBuild
from tests.fatbin.fat_elf import fat_elf

pytestmark = pytest.mark.slow

HOST = "split/demo_lib_generic/stage/usr/lib/libdemo.so.1"
GFX90A = "split/demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack"
SIZE = re.compile(r" \([0-9,]+ bytes\)$", re.M)  # hipcc's, not ours to pin


@pytest.fixture(scope="module")
def work(hip_build: HipBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tree/usr/lib/libdemo.so.1 (gfx90a:xnack±), split into split/ as the guide does,
    and installed/: every artifact's stage merged, as installing does."""
    work = tmp_path_factory.mktemp("resolve")
    (work / "tree/usr/lib").mkdir(parents=True)
    shutil.copy2(hip_build.variants, work / "tree/usr/lib/libdemo.so.1")
    split_tree(work / "tree", work / "split", name="demo_lib")
    for artifact in sorted((work / "split").iterdir()):
        if artifact.is_dir():
            shutil.copytree(
                artifact / "stage", work / "installed", symlinks=True, dirs_exist_ok=True
            )
    return work


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCM_KPACK_PATH", "ROCM_KPACK_PATH_PREFIX", "ROCM_KPACK_DISABLE"):
        monkeypatch.delenv(name, raising=False)


def test_split_output_finds_the_sibling_artifacts_archive(work):
    host = work / HOST
    found = resolve(host, "gfx90a:xnack-", environ={})
    assert [(item.index, item.arch, item.archive) for item in found] == [
        (0, "gfx90a:xnack-", work / GFX90A)
    ]
    # The same code object as the installed tree gives, where the runtime finds it.
    installed = resolve(work / "installed/usr/lib/libdemo.so.1", "gfx90a:xnack-", environ={})
    assert installed[0].archive == work / "installed/.kpack/demo_lib_gfx90a.kpack"
    assert [item.code for item in found] == [item.code for item in installed]
    assert found[0].code != resolve(host, "gfx90a:xnack+", environ={})[0].code


def test_the_binarys_own_path_comes_before_its_sibling(work):
    host = work / HOST
    ((_, reference),) = read_references(host)
    paths = archive_paths(host, reference, ["gfx90a:xnack-", "gfx90a"], {})
    own = str(work / "split/demo_lib_generic/stage/.kpack/demo_lib_gfx90a.kpack")
    assert paths.index(own) + 1 == paths.index(str(work / GFX90A))
    # Outside split output (no artifact_manifest.txt beside a _generic name) there is none.
    bare = work / "bare" / "demo_lib_generic" / "usr/lib/libdemo.so.1"
    bare.parent.mkdir(parents=True)
    shutil.copy2(host, bare)
    assert not [p for p in archive_paths(bare, reference, ["gfx90a"], {}) if "_gfx90a/" in p]
    with pytest.raises(ArchiveNotFound):
        resolve(bare, "gfx90a:xnack-", environ={})


def test_a_missing_arch_lists_the_target_ids_the_archive_holds(work):
    with pytest.raises(ArchNotFound) as miss:
        resolve(work / HOST, "gfx90a", environ={})
    assert str(miss.value).endswith(
        f"not found for gfx90a; {work / GFX90A} holds it for gfx90a:xnack+, gfx90a:xnack-"
    )
    assert miss.value.held == {str(work / GFX90A): ["gfx90a:xnack+", "gfx90a:xnack-"]}


def test_a_missing_archive_lists_the_archives_of_other_target_ids(work):
    for binary, archive in (
        (work / HOST, work / GFX90A),
        (work / "installed/usr/lib/libdemo.so.1", work / "installed/.kpack/demo_lib_gfx90a.kpack"),
    ):
        with pytest.raises(ArchiveNotFound) as miss:
            resolve(binary, "gfx942", environ={})
        assert str(miss.value).endswith(
            f"; archives for other target ids: {archive} (gfx90a:xnack+, gfx90a:xnack-)"
        )
        assert miss.value.elsewhere == {str(archive): ["gfx90a:xnack+", "gfx90a:xnack-"]}
        assert all("gfx942" in tried for tried in miss.value.tried)
    # ROCM_KPACK_PATH replaces the binary's places: a miss then names only what it tried.
    with pytest.raises(ArchiveNotFound) as override:
        resolve(work / HOST, "gfx90a:xnack-", environ={"ROCM_KPACK_PATH": "nowhere.kpack"})
    assert (override.value.tried, override.value.elsewhere) == (["nowhere.kpack"], {})
    assert str(override.value).endswith("no archive found; tried nowhere.kpack")


def test_cli_json_errors_are_one_json_object(work, clean_environment, monkeypatch):
    monkeypatch.chdir(work)
    runner = CliRunner()

    def json_error(*args: str) -> dict[str, object]:
        result = runner.invoke(cli, ["kpack", "resolve", *args, "--json"])
        assert result.exit_code == 1 and result.stderr == ""
        error = json.loads(result.stdout)
        assert isinstance(error, dict) and isinstance(error["error"], str)
        return error

    arch = json_error(HOST, "--arch", "gfx90a")
    assert arch["reason"] == "arch-not-found"
    assert arch["held"] == {str(work / GFX90A): ["gfx90a:xnack+", "gfx90a:xnack-"]}
    archive = json_error(HOST, "--arch", "gfx942")
    assert archive["reason"] == "archive-not-found"
    assert archive["other_archives"] == {str(work / GFX90A): ["gfx90a:xnack+", "gfx90a:xnack-"]}
    assert len(archive["tried"]) == 2  # gfx942 beside and in the sibling; no generic
    missing = json_error("no-such-binary", "--arch", "gfx90a")
    assert missing == {
        "binary": "no-such-binary",
        "arch": "gfx90a",
        "error": "no-such-binary: no such file",
        "reason": "invalid-input",
        "option": None,  # the shape every --json error has (docs/reference/errors.md)
    }
    monkeypatch.setenv("ROCM_KPACK_DISABLE", "1")
    assert json_error(HOST, "--arch", "gfx90a:xnack-")["reason"] == "disabled"
    # Without --json the same miss is one error line on stderr, nothing on stdout.
    monkeypatch.delenv("ROCM_KPACK_DISABLE")
    text = runner.invoke(cli, ["kpack", "resolve", HOST, "--arch", "gfx90a"])
    assert text.exit_code == 1 and text.stdout == ""
    assert text.stderr.splitlines() == [f"error: {arch['error']}"]


def test_out_is_written_only_when_every_object_is_found(work, tmp_path, clean_environment):
    runner = CliRunner()
    out = tmp_path / "objects"
    miss = runner.invoke(cli, ["kpack", "resolve", str(work / HOST), "--arch", "gfx90a",
                               "--out", str(out)])  # fmt: skip
    assert miss.exit_code == 1 and not out.exists()
    # A file in the way is one error naming it, and stays as it was.
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"keep")
    before = os.stat(blocker)
    blocked = runner.invoke(cli, ["kpack", "resolve", str(work / HOST), "--arch",
                                  "gfx90a:xnack-", "--out", str(blocker / "sub")])  # fmt: skip
    assert blocked.exit_code == 1
    (line,) = blocked.stderr.splitlines()
    assert line.startswith(f"error: cannot write {blocker / 'sub'}: ")
    after = os.stat(blocker)
    assert blocker.read_bytes() == b"keep" and (after.st_ino, after.st_nlink) == (
        before.st_ino,
        before.st_nlink,
    )
    # A symlink planted where an object goes is replaced, its target left alone.
    out.mkdir()
    (out / "0.hsaco").symlink_to(blocker)
    written = runner.invoke(cli, ["kpack", "resolve", str(work / HOST), "--arch",
                                  "gfx90a:xnack-", "--out", str(out)])  # fmt: skip
    assert written.exit_code == 0, written.output
    assert not (out / "0.hsaco").is_symlink() and (out / "0.hsaco").read_bytes()[:4] == b"\x7fELF"
    assert blocker.read_bytes() == b"keep" and os.stat(blocker).st_ino == before.st_ino


def test_readme_resolve_commands_work(hip_build, tmp_path):
    (tmp_path / "tree/usr/lib").mkdir(parents=True)
    shutil.copy2(hip_build.variants, tmp_path / "tree/usr/lib/libdemo.so.1")
    result = gfxpack_shell(
        tmp_path,
        doc_block("guides/distro-packager.md", "### Looking code objects up: `kpack resolve`"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    archive = tmp_path / GFX90A
    found = [SIZE.sub("", line) for line in lines if line.startswith("0: ")]
    assert found == [
        f"0: stage/usr/lib/libdemo.so.1#0 [gfx90a:xnack-] in {archive}",
        # ROCM_KPACK_PATH names the archive relative to the current directory, as given.
        f"0: stage/usr/lib/libdemo.so.1#0 [gfx90a:xnack+] in {GFX90A}",
        f"0: stage/usr/lib/libdemo.so.1#0 [gfx90a:xnack-] in {archive}",
    ]
    json_start = next(i for i, line in enumerate(lines) if line == "{")
    error = json.loads("\n".join(lines[json_start:-1]))
    assert error["reason"] == "arch-not-found" and lines[-1] == "exit 1"
    assert "holds it for gfx90a:xnack+, gfx90a:xnack-" in error["error"]


def test_help_example_works(work, clean_environment):
    """The example of ``kpack resolve --help``, run as written in split's output."""
    help_text = CliRunner().invoke(cli, ["kpack", "resolve", "--help"]).output
    example = help_text[help_text.index("ROCM_KPACK_PATH=split/") :].split("\n\n")[0]
    assert "gfxpack split tree --out split --name demo_lib" in " ".join(help_text.split())
    result = gfxpack_shell(work, example.replace("\\\n", " "))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        SIZE.sub("", result.stdout)
        == f"0: stage/usr/lib/libdemo.so.1#0 [gfx90a:xnack-] in {GFX90A}\n"
    )


def test_a_miss_in_a_crowded_forged_split_output_is_bounded(tmp_path):
    """A reference of 2,000 search paths in a <name>_generic artifact beside 3,000
    sibling directories: the runtime's list, the siblings and the archives of other
    target ids cost a bounded number of directory reads, and the miss is one line."""
    paths = [f"p{i}/x_lib_@GFXARCH@.kpack" for i in range(2000)]  # under 64 KiB
    reference = msgpack.packb({"kernel_name": "lib/x.so", "kpack_search_paths": paths})
    generic = tmp_path / "out" / "x_lib_generic"
    binary = generic / "stage" / "x.so"
    binary.parent.mkdir(parents=True)
    (generic / "artifact_manifest.txt").write_text("stage\n")
    binary.write_bytes(fat_elf(reference, [(HIPK, 0, 0)], ".rocm_kpack_ref", relocate=False)[0])
    for number in range(3000):
        (tmp_path / "out" / f"x_lib_gfx{number}").mkdir()
    result = CliRunner().invoke(cli, ["kpack", "resolve", str(binary), "--arch", "gfx90a:xnack-"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {binary}: wrapper 0: no archive found; tried ")
    assert line.endswith(" more") and len(line) < 2000
