"""gfxpack repo as a transaction: hostile inputs are refused before anything is published,
a tampered pool is never re-signed, concurrent and interrupted runs leave a repository
apt and dnf read."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.state import DATABASE, State
from gfxpack.repo.stream import read_builds
from gfxpack.repo.transaction import LOCK, WORK
from tests.verify.helpers import craft_deb, make_repo, write_package

# make check skips it: concurrent and interrupted repo runs, read by apt and dnf.
pytestmark = pytest.mark.slow

GOOD_CONTROL = b"Package: tool\nVersion: 1.0-1\nArchitecture: amd64\nDescription: a tool\n"


def repo(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(cli, ["repo", *args])


def one_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = result.stderr.strip().splitlines()
    errors = [line for line in errors if not line.startswith("warning: ")]
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    return errors[0]


def published(out: Path) -> list[str]:
    """Every file under ``out`` but the lock: what a refused run must not have written."""
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != LOCK)


def packages_index(out: Path) -> list[dict[str, str]]:
    return parse_stanzas((out / "apt/dists/stable/main/binary-amd64/Packages").read_text())


# --- names and control fields -------------------------------------------------------------


def test_a_deb_file_name_with_newlines_injects_no_stanza(tmp_path):
    build = tmp_path / "build"
    deb = write_package(build, DEB, "tool")
    deb.rename(build / "tool_8.2.0-1_amd64.deb\n\nPackage: evil\nVersion: 9\nx.deb")
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert "is not a package file name" in message
    assert published(tmp_path / "out") == []


def test_control_fields_with_embedded_newlines_are_refused(tmp_path):
    build = tmp_path / "build"
    craft_deb(
        build / "tool_1.0-1_amd64.deb",
        GOOD_CONTROL + b"\nPackage: evil\nVersion: 9\nArchitecture: amd64\n",
    )
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert "control file holds more than one paragraph" in message
    assert published(tmp_path / "out") == []


@pytest.mark.parametrize(
    ("control", "expected"),
    [
        pytest.param(GOOD_CONTROL.replace(b"a tool", b"a\rtool"), "control character", id="cr"),
        pytest.param(GOOD_CONTROL.replace(b"tool\n", b"t\xffol\n", 1), "not UTF-8", id="utf8"),
        pytest.param(GOOD_CONTROL.replace(b"Package: tool\n", b""), "no Package", id="no-pkg"),
        pytest.param(GOOD_CONTROL.replace(b"Version: 1.0-1\n", b""), "no Version", id="no-ver"),
        pytest.param(b"", "empty control file", id="empty"),
        pytest.param(b"\n\n", "empty control file", id="blank"),
        pytest.param(GOOD_CONTROL.replace(b"tool\n", b"../x\n", 1), "Package '../x'", id="name"),
        pytest.param(GOOD_CONTROL.replace(b"1.0-1", b"1.0 -1"), "Version '1.0 -1'", id="ver"),
        pytest.param(b"Package tool\n" + GOOD_CONTROL, "is not 'Field: value'", id="no-colon"),
        pytest.param(GOOD_CONTROL + b"Depends: libc6 (>> )\n", "Depends: ", id="relation"),
    ],
)
def test_a_malformed_control_file_is_one_error(tmp_path, control, expected):
    build = tmp_path / "build"
    deb = craft_deb(build / "tool_1.0-1_amd64.deb", control)
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert message.startswith(f"error: {deb}: ") and expected in message, message
    assert published(tmp_path / "out") == []


@pytest.mark.parametrize(
    ("size_field", "expected"),
    [
        ("12x", "size field '12x' is not a number"),
        ("-5", "size field '-5' is not a number"),
        ("999999999", "past the end of the file"),
    ],
)
def test_a_malformed_ar_header_is_one_error(tmp_path, size_field, expected):
    build = tmp_path / "build"
    craft_deb(build / "tool_1.0-1_amd64.deb", GOOD_CONTROL, size_field=size_field)
    assert expected in one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))


@pytest.mark.parametrize(
    ("cut", "expected"),
    [(0, "not a Debian package (no ar magic)"), (100, "truncated or corrupt ar member header")],
    ids=["empty", "truncated-header"],
)
def test_an_empty_or_truncated_deb_is_one_error(tmp_path, cut, expected):
    build = tmp_path / "build"
    deb = write_package(build, DEB, "tool")
    deb.write_bytes(deb.read_bytes()[:cut])
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert message == f"error: {deb}: {expected}"


def test_a_data_path_with_a_newline_cannot_reach_contents(tmp_path):
    build = tmp_path / "build"
    craft_deb(build / "tool_1.0-1_amd64.deb", GOOD_CONTROL, paths=("./opt/a\nopt/b  x/evil",))
    assert "holds a control character" in one_error(
        repo("--in", str(build), "--out", str(tmp_path / "out"))
    )


def test_a_crafted_deb_that_is_well_formed_is_published(tmp_path):
    """The refusals above are about the faults, not about hand-made packages."""
    build = tmp_path / "build"
    craft_deb(build / "tool_1.0-1_amd64.deb", GOOD_CONTROL)
    result = repo("--in", str(build), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert [s["Package"] for s in packages_index(tmp_path / "out")] == ["tool"]


@pytest.mark.parametrize("suite", ["../../x", "/tmp/absolute", "a/b", "", ".hidden"])
def test_suite_must_be_a_plain_name(tmp_path, suite):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out"), "--suite", suite))
    assert f"--suite {suite!r}: expected a plain name" in message
    assert not (tmp_path / "x").exists() and not Path("/tmp/absolute").exists()
    assert published(tmp_path / "out") == []


# --- inputs: index.json, symlinks, broken packages -----------------------------------------


def _index(build: Path, entries: list[dict]) -> None:
    (build / "index.json").write_text(json.dumps({"files": entries}))


def _entry(path: Path, name: str | None = None) -> dict:
    data = path.read_bytes()
    return {
        "file": name or path.name,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


@pytest.mark.parametrize("name", ["../outside_1-1_amd64.deb", "/etc/x_1-1_amd64.deb", "a/b.deb"])
def test_index_entries_must_stay_inside_in(tmp_path, name):
    build = tmp_path / "build"
    deb = write_package(tmp_path / "elsewhere", DEB, "outside")
    build.mkdir()
    _index(build, [_entry(deb, name)])
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert f"{name!r} is not a package file name inside {build}" in message
    assert published(tmp_path / "out") == []


@pytest.mark.parametrize("link_name", ["shadow_1-1_amd64.deb", "shadow-1-1.x86_64.rpm"])
@pytest.mark.parametrize("with_index", [True, False], ids=["index", "no-index"])
def test_a_symlink_in_in_is_refused_and_later_runs_work(tmp_path, with_index, link_name):
    build = tmp_path / "build"
    good = write_package(build, DEB, "tool")
    link = build / link_name
    link.symlink_to("/etc/shadow")
    if with_index:
        _index(build, [_entry(good), {"file": link.name, "size": 1, "sha256": "0" * 64}])
    out = tmp_path / "out"
    assert f"{link}: a symlink" in one_error(repo("--in", str(build), "--out", str(out)))
    assert published(out) == []
    link.unlink()
    if with_index:
        _index(build, [_entry(good)])
    result = repo("--in", str(build), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert [s["Package"] for s in packages_index(out)] == ["tool"]


def test_a_broken_rpm_publishes_neither_side(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    rpm = write_package(build, RPM, "tool")
    data = bytearray(rpm.read_bytes())
    data[96:104] = b"\0" * 8  # the signature header's magic
    rpm.write_bytes(bytes(data))
    out = tmp_path / "out"
    message = one_error(repo("--in", str(build), "--out", str(out)))
    assert message.startswith(f"error: {rpm}: ") and "signature header" in message
    assert published(out) == []
    write_package(build, RPM, "tool")
    result = repo("--in", str(build), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "apt/pool/main/tool_8.2.0-1_amd64.deb").is_file()
    assert (out / "rpm/Packages/tool-8.2.0-1.x86_64.rpm").is_file()


# --- an interrupted or failed build (index.json and its files) ----------------------------


def test_a_file_that_disagrees_with_index_json_is_refused(example_release, tmp_path):
    build = tmp_path / "build"
    shutil.copytree(example_release.out, build)
    index = json.loads((build / "index.json").read_text())
    victim = build / index["files"][0]["file"]
    victim.write_bytes(victim.read_bytes()[:-10])
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert f"{victim}: does not match {build / 'index.json'} (size" in message
    data = bytearray(victim.read_bytes() + b"0123456789")
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert "its sha256 differs" in message and "interrupted or failed build" in message
    assert published(tmp_path / "out") == []


def test_what_an_interrupted_build_left_is_refused(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    (build / ".gfxpack-partial-abc123").mkdir()
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "out")))
    assert "no index.json, and .gfxpack-partial-abc123 is left" in message


def test_packages_not_made_by_gfxpack_are_published_with_a_warning(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    result = repo("--in", str(build), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "warning: " in result.stderr and "no index.json, so not a gfxpack build" in (
        result.stderr
    )


# --- a tampered pool ----------------------------------------------------------------------


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["new-mtime", "mtime-reset"])
def test_a_pool_file_replaced_after_publishing_is_never_re_signed(tmp_path, keep_mtime):
    """Every pool file a run indexes is checked against the record, not only what it
    adds: a run that only adds another package refuses to sign indexes over a pool file
    swapped since (even with its mtime put back: the inode changed), and verify --deep
    finds it too."""
    root = make_repo(tmp_path, DEB, {"tool": {}, "other": {}})
    pool = root / "apt/pool/main/tool_8.2.0-1_amd64.deb"
    before = pool.stat()
    trojan = bytearray(pool.read_bytes())
    trojan[-5] ^= 0xFF
    pool.unlink()  # write a new file, as an attacker would
    pool.write_bytes(bytes(trojan))
    if keep_mtime:
        os.utime(pool, ns=(before.st_atime_ns, before.st_mtime_ns))
    release = (root / "apt/dists/stable/Release").read_bytes()
    deep = CliRunner().invoke(cli, ["verify", "--repo", str(root), "--deep"])
    assert deep.exit_code == 1 and "tool_8.2.0-1_amd64.deb" in deep.output
    more = tmp_path / "more"
    write_package(more, DEB, "third")
    message = one_error(repo("--in", str(more), "--out", str(root)))
    assert message.startswith(f"error: {pool}: its bytes differ from those published")
    assert (root / "apt/dists/stable/Release").read_bytes() == release
    assert "third" not in {s["Package"] for s in packages_index(root)}


def test_an_rpm_pool_file_replaced_after_publishing_is_an_error(tmp_path):
    root = make_repo(tmp_path, RPM, {"tool": {}})
    pool = root / "rpm/Packages/tool-8.2.0-1.x86_64.rpm"
    repomd = (root / "rpm/repodata/repomd.xml").read_bytes()
    data = pool.read_bytes()
    pool.unlink()
    pool.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    message = one_error(repo("--in", str(tmp_path / "build-rpm"), "--out", str(root)))
    assert "its bytes differ from those published" in message
    assert (root / "rpm/repodata/repomd.xml").read_bytes() == repomd


# --- leftovers of interrupted runs, modes ---------------------------------------------------


def test_leftovers_of_an_interrupted_run_are_cleaned(tmp_path):
    root = make_repo(tmp_path, RPM, {"tool": {}})
    make_repo(tmp_path, DEB, {"tool": {}})
    rpm = root / "rpm"
    # What an older gfxpack's killed run left: repodata moved aside and being made.
    shutil.copytree(rpm / "repodata", rpm / ".repodata-old")
    (rpm / ".repodata-x1y2z3").mkdir()
    # What a killed run leaves: its scratch directory, and a pool file it copied in and
    # had not recorded yet (its name is pending in the record).
    (root / WORK).mkdir()
    (root / WORK / "Packages-0.gz").write_bytes(b"half")
    orphan = root / "apt/pool/main/orphan_1-1_amd64.deb"
    shutil.copy(root / "apt/pool/main/tool_8.2.0-1_amd64.deb", orphan)
    with State.open(root, create=False) as state, state.transaction():
        state.set_pending(DEB.name, [orphan.name])
    result = repo("--in", str(tmp_path / "build-deb"), "--out", str(root))
    assert result.exit_code == 0, result.output
    assert f"{orphan}: removed, an interrupted run added it" in result.stderr
    leftovers = [
        p for p in root.rglob("*") if "partial" in p.name or "repodata-" in p.name or WORK in p.name
    ]
    assert leftovers == [] and not orphan.exists()
    assert CliRunner().invoke(cli, ["verify", "--repo", str(root)]).exit_code == 0


def test_repodata_moved_aside_by_a_killed_run_is_put_back(tmp_path):
    root = make_repo(tmp_path, RPM, {"tool": {}})
    rpm = root / "rpm"
    os.replace(rpm / "repodata", rpm / ".repodata-old")
    more = tmp_path / "more"
    write_package(more, DEB, "other")
    result = repo("--in", str(more), "--out", str(root))  # an apt-only run recovers rpm too
    assert result.exit_code == 0, result.output
    assert (rpm / "repodata/repomd.xml").is_file() and not (rpm / ".repodata-old").exists()


def test_repository_modes_do_not_follow_the_umask(tmp_path):
    build = tmp_path / "build"
    for fmt in FORMATS:
        write_package(build, fmt, "tool").chmod(0o600)
    out = tmp_path / "out"
    old = os.umask(0o077)
    try:
        result = repo("--in", str(build), "--out", str(out))
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    modes = {
        str(p.relative_to(out)): stat.S_IMODE(p.stat().st_mode)
        for p in [out, *out.rglob("*")]
        if p.name != LOCK
    }
    assert modes and {m for p, m in modes.items() if (out / p).is_dir()} == {0o755}
    assert {m for p, m in modes.items() if (out / p).is_file()} == {0o644}
    # The inputs keep their own modes (a hard link would have shared them).
    assert {stat.S_IMODE(p.stat().st_mode) for p in build.iterdir()} == {0o600}


# --- output directories ---------------------------------------------------------------------


def test_a_missing_output_directory_is_made(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    result = repo("--in", str(build), "--out", str(tmp_path / "a/b/c"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a/b/c/apt/pool/main/tool_8.2.0-1_amd64.deb").is_file()


def test_an_output_directory_that_cannot_be_made_is_one_error(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    (tmp_path / "file").write_text("not a directory")
    message = one_error(repo("--in", str(build), "--out", str(tmp_path / "file/out")))
    assert str(tmp_path / "file") in message


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")


@pytest.fixture
def small_fs(tmp_path):
    mounts = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        _mount_tmpfs(where, options)
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", str(where)], check=False)


def test_a_read_only_output_directory_is_one_error(tmp_path, small_fs):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    readonly = small_fs("ro", "ro,size=1m")
    message = one_error(repo("--in", str(build), "--out", str(readonly / "repo")))
    assert "Read-only file system" in message


def test_no_space_left_leaves_nothing_partial(example_release, tmp_path, small_fs):
    full = small_fs("full", "size=600k")
    out = full / "repo"
    message = one_error(repo("--in", str(example_release.out), "--out", str(out)))
    assert "No space left on device" in message and "run gfxpack repo again" in message
    assert [p for p in out.rglob("*") if "partial" in p.name or "repodata-" in p.name] == []
    # No pool file without its record: a pool holds only what was published.
    recorded = set()
    if (out / DATABASE).exists():
        with State.open(out, create=False) as state:
            recorded = {n for fmt in FORMATS for n, *_ in state.live_stamps(fmt.name)}
    for pool in (out / "apt/pool/main", out / "rpm/Packages"):
        on_disk = {p.name for p in pool.glob("*.*")} if pool.exists() else set()
        assert on_disk <= recorded
    # With room again, the next run completes the repository.
    subprocess.run(["mount", "-o", "remount,size=200m", str(full)], check=True)
    result = repo("--in", str(example_release.out), "--out", str(out))
    assert result.exit_code == 0, result.output + result.stderr
    assert CliRunner().invoke(cli, ["verify", "--repo", str(out), "--deep"]).exit_code == 0


# --- one repository, two runs at once -------------------------------------------------------


def _gfxpack(*args: str) -> list[str]:
    return [sys.executable, "-m", "gfxpack", *args]


def test_runs_at_once_keep_every_release(tmp_path):
    """Four runs at once, in fact: without the lock, at least one release goes missing
    from the apt index most of the time."""
    versions = ("8.2.0", "8.2.1", "8.3.0", "8.4.0")
    names = ("tool", "lib", "extra", "docs", "dev", "tests")
    builds = []
    for version in versions:
        build = tmp_path / version
        for name in names:
            write_package(build, DEB, name, version=version)
            write_package(build, RPM, name, version=version)
        builds.append(build)
    out = tmp_path / "out"
    runs = [
        subprocess.Popen(
            _gfxpack("repo", "--in", str(b), "--out", str(out)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for b in builds
    ]
    for run_ in runs:
        _, err = run_.communicate(timeout=120)
        assert run_.returncode == 0, err.decode()
    listed = {(s["Package"], s["Version"]) for s in packages_index(out)}
    assert listed == {(n, f"{v}-1") for n in names for v in versions}
    assert len(list((out / "rpm/Packages").glob("*.rpm"))) == len(names) * len(versions)
    assert CliRunner().invoke(cli, ["verify", "--repo", str(out)]).exit_code == 0


def test_a_second_run_waits_for_the_lock_and_says_so(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "out"
    out.mkdir()
    with open(out / LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen(
            _gfxpack("repo", "--in", str(build), "--out", str(out)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(2)  # the run has started and found the lock held
        assert waiting.poll() is None and not (out / "apt").exists()
        busy = one_error(repo("--in", str(build), "--out", str(out), "--no-wait"))
        assert f"{out}: another gfxpack repo run is publishing here" in busy
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err.decode()
    assert f"waiting for another gfxpack repo run on {out} to finish" in err.decode()
    assert [s["Package"] for s in packages_index(out)] == ["tool"]


def _live(root: Path) -> set[str]:
    with State.open(root, create=False) as state:
        return {name for fmt in FORMATS for name, *_ in state.live_stamps(fmt.name)}


def test_a_repository_without_records_is_adopted_as_it_is(tmp_path):
    """Repositories written before pools kept records: their files are read once and
    recorded, and from then on held to it."""
    root = make_repo(tmp_path, DEB, {"tool": {}})
    make_repo(tmp_path, RPM, {"tool": {}})
    (root / DATABASE).unlink()
    (root / "apt/.gfxpack-apt-cache.json").write_text("{}")  # what older versions kept
    more = tmp_path / "more"
    write_package(more, DEB, "other")
    write_package(more, RPM, "other")
    result = repo("--in", str(more), "--out", str(root))
    assert result.exit_code == 0, result.output + result.stderr
    pools = (root / "apt/pool/main", root / "rpm/Packages")
    assert _live(root) == {p.name for pool in pools for p in pool.iterdir()}
    assert len(_live(root)) == 4
    assert not (root / "apt/.gfxpack-apt-cache.json").exists()
    assert [s["Package"] for s in packages_index(root)] == ["tool", "other"]


def test_the_json_records_of_an_older_gfxpack_are_adopted(tmp_path):
    """What the JSON records of an older gfxpack say is kept: its builds, and that a pool
    file none of them names was left by an interrupted run (removed, and said so)."""
    build = tmp_path / "8.2.0"
    files = [write_package(build, fmt, "tool") for fmt in FORMATS]
    root = tmp_path / "repo"
    CliRunner().invoke(cli, ["repo", "--in", str(build), "--out", str(root)])
    (root / DATABASE).unlink()
    pools = {".deb": root / "apt/pool/main", ".rpm": root / "rpm/Packages"}
    for package in files:
        digest = hashlib.sha256(package.read_bytes()).hexdigest()
        record = {package.name: {"size": package.stat().st_size, "sha256": digest}}
        (pools[package.suffix] / ".gfxpack-pool.json").write_text(json.dumps(record))
    orphan = pools[".deb"] / "orphan_1-1_amd64.deb"
    shutil.copy(pools[".deb"] / files[0].name, orphan)
    builds = {"builds": [{"version": "8.2.0-1", "published": 1, "files": [f.name for f in files]}]}
    (root / ".gfxpack-builds.json").write_text(json.dumps(builds))
    more = tmp_path / "more"
    write_package(more, DEB, "other")
    result = repo("--in", str(more), "--out", str(root))
    assert result.exit_code == 0, result.output + result.stderr
    assert f"{orphan}: removed, an interrupted run added it but never published it" in (
        result.stderr
    )
    assert not orphan.exists() and len(_live(root)) == 3
    (adopted,) = read_builds(root)
    assert (adopted.version, adopted.published) == ("8.2.0-1", 1)
    assert sorted(adopted.files) == sorted(f.name for f in files)
    assert not list(root.rglob(".gfxpack-*.json"))


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_one_version_is_one_file(tmp_path, fmt):
    """The same name, version and arch under a second file name is refused."""
    root = make_repo(tmp_path, fmt, {"tool": {}})
    again = tmp_path / "again"
    copy = write_package(again, fmt, "tool", files=("/opt/other",))
    renamed = copy.rename(again / f"renamed-tool.{fmt}")
    message = one_error(repo("--in", str(again), "--out", str(root)))
    assert message.startswith(f"error: {renamed.name}: ") and "is already published as" in message
