"""repo.publish is the whole of gfxpack repo under one lock: what it takes from the
repository's record is read under that lock, after any run it waited for, and what it
returns is a PublishResult whose JSON is what ``gfxpack repo --json`` prints."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB
from gfxpack.repo import FormatSummary, PublishResult, RepoError, publish
from gfxpack.repo.state import State
from gfxpack.repo.transaction import LOCK
from tests.verify.helpers import write_package

EPOCH = 1_700_000_000


def test_the_settings_are_those_recorded_by_the_run_it_waited_for(tmp_path: Path) -> None:
    """A run waiting for the lock takes the record as the run before it left it: a base
    URL that run recorded is the one its setup lines name, not one read before."""
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    first = publish(build, out, None, EPOCH, base_url="https://old.example/rocm")
    assert "https://old.example/rocm/apt" in first.formats[0].setup["apt"]

    lock = os.open(out / LOCK, os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another run holds the repository
    waiting = threading.Event()
    results: list[PublishResult | BaseException] = []

    def second_run() -> None:
        try:
            results.append(publish(build, out, None, EPOCH, warn=lambda _: waiting.set()))
        except BaseException as error:  # handed to the test thread
            results.append(error)

    thread = threading.Thread(target=second_run)
    thread.start()
    try:
        assert waiting.wait(60), "the second run did not wait for the lock"
        # What the run holding the lock records before it ends: a new base URL.
        with State.open(out, create=False) as state, state.transaction():
            state.set_settings({"base_url": "https://new.example/rocm"})
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
        thread.join(120)
    (result,) = results
    assert isinstance(result, PublishResult), result
    assert "https://new.example/rocm/apt" in result.formats[0].setup["apt"]
    assert "old.example" not in json.dumps(result.as_json())


def test_a_run_that_may_not_wait_writes_nothing(tmp_path: Path) -> None:
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    publish(build, out, None, EPOCH)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    lock = os.open(out / LOCK, os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        with pytest.raises(RepoError, match="another gfxpack repo run is publishing here"):
            publish(build, out, None, EPOCH, wait=False, base_url="https://x.example/r")
    finally:
        os.close(lock)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_the_json_printed_is_the_result(tmp_path: Path) -> None:
    """gfxpack repo --json prints the PublishResult the library returns, and nothing of
    its own: the same run twice (nothing new the second time) prints the same as the
    call returns."""
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    printed = CliRunner().invoke(
        cli, ["repo", "--in", str(build), "--out", str(out), "--json", "--retain", "all"]
    )
    assert printed.exit_code == 0, printed.output
    (summary,) = json.loads(printed.stdout)
    assert summary["format"] == "deb" and summary["pruned"] == []
    again = publish(build, out, None, EPOCH + 1, retain=None)
    assert again.formats == (
        FormatSummary(
            format="deb",
            added=(),
            packages=1,
            signed=False,
            suite="stable",
            setup=again.formats[0].setup,
        ),
    )
    expected = {key: value for key, value in summary.items() if key != "pruned"}
    assert again.as_json() == [{**expected, "added": []}]


def _held(out: Path) -> bool:
    """Whether a run holds the lock of the repository at ``out``."""
    fd = os.open(out / LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_stream_run_publishes_the_key_before_it_lets_go(tmp_path: Path) -> None:
    """stream refresh (as every stream command) writes the public key beside the
    indexes it signed while it still holds the repository: a run after it never sees
    indexes signed by one key beside another."""
    from gfxpack.repo import stream
    from gfxpack.repo.options import PublishOptions
    from gfxpack.repo.publishing import stream_run
    from gfxpack.repo.trust import key_path
    from tests.verify.signed import make_key

    key = make_key(tmp_path / "gnupg", "ed25519")
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    publish(build, out, None, EPOCH, key.fingerprint, key.home)
    key_path(DEB, out).unlink()
    seen: list[tuple[bool, bool]] = []

    def refresh(then):
        def watched(state, result):
            then(state, result)
            seen.append((key_path(DEB, out).is_file(), _held(out)))

        return stream.refresh(
            out, PublishOptions("", EPOCH + 1, key.fingerprint, key.home), then=watched
        )

    result, recorded = stream_run(refresh, out, key.fingerprint, gnupghome=key.home)
    assert seen == [(True, True)] and not _held(out)
    assert result.published == ("deb",) and result.formats[0].signed
    assert recorded is not None and recorded.signed_by == key.fingerprint
