"""What a package may carry from an artifacts tree: no symlink followed, no FIFO,
clean names, normalised modes; each case through ``gfxpack build`` and the real tools."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.artifact_files import symlink_target_problem
from gfxpack.cli import cli
from tests.conftest import run
from tests.small_tree import PREFIX, build, make_tree, write_config


def outside_secret(tmp_path: Path, relative: str = "") -> Path:
    """A directory outside the artifacts tree holding a file nobody may package."""
    directory = tmp_path / "elsewhere" / relative
    directory.mkdir(parents=True)
    (directory / "shadow").write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    return tmp_path / "elsewhere"


def assert_refused(result: Result, tmp_path: Path, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr == f"error: {message}\n"
    out = tmp_path / "out"
    assert not out.exists() or not [p for p in out.iterdir() if p.suffix in (".deb", ".rpm")]


def contents(deb: Path) -> dict[str, str]:
    """dpkg-deb's listing: path -> the permissions column (and '-> target' for links)."""
    listing = {}
    for line in run("dpkg-deb", "--contents", str(deb)).stdout.splitlines():
        fields = line.split()
        path = fields[5].lstrip(".").rstrip("/")
        listing[path] = " ".join([fields[0], *fields[6:]])
    return listing


def the_deb(tmp_path: Path) -> Path:
    (deb,) = (tmp_path / "out").glob("amdrocm-blas8.2_*.deb")
    return deb


# --- directory symlinks --------------------------------------------------------------------


def test_a_symlinked_stage_directory_is_refused(tmp_path):
    stage = make_tree(tmp_path / "art")
    secret = outside_secret(tmp_path)
    for child in sorted(stage.rglob("*"), reverse=True):
        child.unlink() if not child.is_dir() or child.is_symlink() else child.rmdir()
    stage.rmdir()
    stage.symlink_to(secret)
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{stage}: is a symlink; the directories an artifact_manifest.txt line names must "
        "be real directories (gfxpack never follows a directory symlink)",
    )


def test_a_symlinked_middle_directory_is_refused(tmp_path):
    make_tree(tmp_path / "art")
    secret = outside_secret(tmp_path, "BLAS/rocBLAS/stage/lib")
    middle = tmp_path / "art" / "blas_lib_generic" / "math-libs"
    middle.rename(tmp_path / "moved")
    middle.symlink_to(secret)
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{middle}: is a symlink; the directories an artifact_manifest.txt line names must "
        "be real directories (gfxpack never follows a directory symlink)",
    )


def test_a_symlinked_artifact_directory_is_refused(tmp_path):
    make_tree(tmp_path / "elsewhere")
    (tmp_path / "art").mkdir()
    artifact = tmp_path / "art" / "blas_lib_generic"
    artifact.symlink_to(tmp_path / "elsewhere" / "blas_lib_generic")
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{artifact}: is a symlink; artifact directories must be real directories "
        "(gfxpack never follows a directory symlink)",
    )


def test_a_symlink_out_of_the_tree_is_refused(tmp_path):
    stage = make_tree(tmp_path / "art")
    (stage / "etc").symlink_to("/etc")
    (stage / "lib" / "up").symlink_to("../../../../escape")
    result = build(tmp_path, tmp_path / "art")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {stage}/etc: symlink to '/etc' leaves the install prefix {PREFIX} "
        "(a packaged symlink must point inside it)",
        f"error: {stage}/lib/up: symlink to '../../../../escape' leaves the install prefix "
        f"{PREFIX} (a packaged symlink must point inside it)",
    ]


def test_a_symlink_climbing_after_a_name_is_refused(tmp_path):
    """``here -> .`` stays inside; ``x -> here/here/../../..`` looks inside (normalised,
    it is the prefix itself) but climbs out through ``here``: refused, the rule split
    and join apply too."""
    stage = make_tree(tmp_path / "art")
    (stage / "lib" / "here").symlink_to(".")
    (stage / "lib" / "x").symlink_to("here/here/../../..")
    result = build(tmp_path, tmp_path / "art")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {stage}/lib/x: symlink to 'here/here/../../..' has '..' after a name (which "
        f"may climb out of the install prefix {PREFIX} through another symlink) (a packaged "
        "symlink must point inside it)"
    ]


@pytest.mark.parametrize(
    ("target", "depth", "top", "allowed"),
    [
        ("libx.so.1", 0, None, True),
        ("../include/x.h", 1, None, True),
        ("./a//./b", 0, None, True),
        ("..", 1, None, True),  # the top itself
        ("../..", 1, None, False),
        ("a/../b", 1, None, False),
        ("here/..", 0, None, False),
        ("", 0, None, False),
        ("/opt/rocm/lib/libx.so", 1, None, False),  # split and join: no place known
        ("/opt/rocm/lib/libx.so", 1, "/opt/rocm", True),  # build: inside its prefix
        ("/opt/rocm", 1, "/opt/rocm", True),
        ("/opt/rocmx/lib", 1, "/opt/rocm", False),
        ("/opt/rocm/lib/../../../etc", 1, "/opt/rocm", False),
        ("/etc/shadow", 1, "/opt/rocm", False),
        ("/etc/shadow", 1, "/", True),  # everything is inside /
    ],
)
def test_the_one_symlink_rule_of_build_split_and_join(target, depth, top, allowed):
    assert (symlink_target_problem(target, depth, "the tree", top) is None) == allowed


def test_a_directory_symlink_inside_the_tree_is_packaged_as_a_symlink(tmp_path):
    stage = make_tree(tmp_path / "art")
    (stage / "lib64").symlink_to("lib")
    (stage / "lib" / "current").symlink_to(f"{PREFIX}/lib")
    result = build(tmp_path, tmp_path / "art", "--format", "deb")
    assert result.exit_code == 0, result.output
    listing = contents(the_deb(tmp_path))
    assert listing[f"{PREFIX}/lib64"] == "lrwxrwxrwx -> lib"
    assert listing[f"{PREFIX}/lib/current"] == f"lrwxrwxrwx -> {PREFIX}/lib"
    assert not any(path.startswith(f"{PREFIX}/lib64/") for path in listing)


def test_a_symlinked_manifest_is_not_followed(tmp_path):
    make_tree(tmp_path / "art")
    manifest = tmp_path / "art" / "blas_lib_generic" / "artifact_manifest.txt"
    manifest.unlink()
    manifest.symlink_to("/etc/passwd")
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{manifest}: is a symlink; gfxpack does not follow it",
    )


# --- file types and names ------------------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    # Relative: a socket's path is limited to about 100 bytes.
    with contextlib.chdir(path.parent), socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path.name)


def _device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("creating a character device needs root")


@pytest.mark.parametrize(
    ("make", "kind"),
    [(_fifo, "a FIFO"), (_socket, "a socket"), (_device, "a character device")],
    ids=["fifo", "socket", "device"],
)
def test_special_files_are_one_clear_error(tmp_path, make, kind):
    stage = make_tree(tmp_path / "art")
    make(stage / "lib" / "odd")
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{stage}/lib/odd: is {kind}; only regular files, directories and symlinks can be packaged",
    )


def test_a_fifo_as_manifest_does_not_hang(tmp_path):
    make_tree(tmp_path / "art")
    manifest = tmp_path / "art" / "blas_lib_generic" / "artifact_manifest.txt"
    manifest.unlink()
    os.mkfifo(manifest)
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{manifest}: is a FIFO, expected a regular file",
    )


@pytest.mark.parametrize(
    ("name", "shown", "why"),
    [
        (b"new\nline.so", "new\\x0aline.so", "name contains a control character"),
        (b"tab\tname", "tab\\x09name", "name contains a control character"),
        (b"latin1-\xe9.so", "latin1-\\xe9.so", "name is not valid UTF-8"),
    ],
    ids=["newline", "tab", "not-utf8"],
)
def test_names_must_be_utf8_without_control_characters(tmp_path, name, shown, why):
    stage = make_tree(tmp_path / "art")
    with open(os.path.join(os.fsencode(stage / "lib"), name), "wb") as file:
        file.write(b"x")
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{stage}/lib/{shown}: {why}; dpkg and rpm accept only UTF-8 names without control "
        "characters",
    )


def test_a_symlink_target_with_a_newline_is_refused(tmp_path):
    stage = make_tree(tmp_path / "art")
    (stage / "lib" / "link").symlink_to("librocblas.so.1\nInjected: yes")
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f"{stage}/lib/link: symlink target: name contains a control character",
    )


def test_a_utf8_name_is_packaged(tmp_path):
    stage = make_tree(tmp_path / "art")
    (stage / "lib" / "données.txt").write_text("ok")
    result = build(tmp_path, tmp_path / "art", "--format", "deb")
    assert result.exit_code == 0, result.output
    assert f"{PREFIX}/lib/données.txt" in contents(the_deb(tmp_path))


# --- modes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (0o6777, "6777 is setuid and setgid and world-writable"),
        (0o4755, "4755 is setuid"),
        (0o666, "0666 is world-writable"),
    ],
)
def test_special_modes_are_refused(tmp_path, mode, words):
    stage = make_tree(tmp_path / "art")
    os.chmod(stage / "bin" / "rocblas-info", mode)
    assert_refused(
        build(tmp_path, tmp_path / "art"),
        tmp_path,
        f'{stage}/bin/rocblas-info: mode {words}; set "Allow_Special_Modes": "True" on '
        "the package in package.json to ship it",
    )


def test_allow_special_modes_ships_them(tmp_path):
    stage = make_tree(tmp_path / "art")
    os.chmod(stage / "bin" / "rocblas-info", 0o4755)
    (stage / "tmp").mkdir()
    os.chmod(stage / "tmp", 0o1777)
    config = write_config(tmp_path / "package.json", Allow_Special_Modes="True")
    result = build(tmp_path, tmp_path / "art", config=config)
    assert result.exit_code == 0, result.output
    listing = contents(the_deb(tmp_path))
    assert listing[f"{PREFIX}/bin/rocblas-info"] == "-rwsr-xr-x"
    assert listing[f"{PREFIX}/tmp"] == "drwxrwxrwt"
    (rpm,) = (tmp_path / "out").glob("amdrocm-blas8.2-8*.rpm")
    modes = run("rpm", "-qp", "--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]", str(rpm)).stdout
    assert f"-rwsr-xr-x {PREFIX}/bin/rocblas-info" in modes.splitlines()


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def test_output_does_not_depend_on_the_umask(tmp_path):
    """The same tree made under umask 0077 and 0022, built under each: the same bytes,
    normalised modes in the package, 0644 files in OUT."""
    digests = {}
    for mask in (0o077, 0o022):
        with umask(mask):
            make_tree(tmp_path / f"art{mask:o}")
            out = tmp_path / f"out{mask:o}"
            result = CliRunner().invoke(
                cli,
                [
                    "build",
                    "--config",
                    str(write_config(tmp_path / "package.json")),
                    "--artifacts",
                    str(tmp_path / f"art{mask:o}"),
                    "--out",
                    str(out),
                    "--rocm-version",
                    "8.2.0",
                    "--target",
                    "gfx942",
                    "-j",
                    "2",
                    "-q",
                ],
            )
        assert result.exit_code == 0, result.output
        files = sorted(p for p in out.iterdir())
        assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o644}
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        # index.json records how long each package took; the packages are compared.
        digests[mask] = {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files
            if p.name != "index.json"
        }
    assert len(digests[0o077]) == 4  # amdrocm-blas8.2 and amdrocm-blas, deb and rpm
    assert digests[0o077] == digests[0o022]
    (deb,) = (tmp_path / "out77").glob("amdrocm-blas8.2_*.deb")
    listing = contents(deb)
    assert listing[f"{PREFIX}/lib"] == "drwxr-xr-x"
    assert listing[f"{PREFIX}/lib/librocblas.so.1"] == "-rw-r--r--"
    assert listing[f"{PREFIX}/bin/rocblas-info"] == "-rwxr-xr-x"
