"""repo/state.py: the record opens only as what it is, names read back are checked before
they become paths, and a run's writes commit whole or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gfxpack.repo.inputs import RepoError
from gfxpack.repo.state import DATABASE, SCHEMA_VERSION, PackageEntry, Piece, State


def entry(name: str, ident: str = "tool 1.0-1 amd64") -> PackageEntry:
    """A .deb's row as a publish records it: its stanza names its pool file and digests."""
    stanza = {"Package": "tool", "Version": "1.0-1", "Architecture": "amd64",
              "Filename": f"pool/main/{name}", "Size": "10", "SHA256": "ab" * 32}  # fmt: skip
    document = {"stanza": stanza, "paths": ["/opt/tool"]}
    return PackageEntry(name, "deb", 10, "ab" * 32, ident, "amd64", document, "1:2:3:4")


def test_a_new_record_is_empty_and_names_its_schema(tmp_path: Path) -> None:
    with State.open(tmp_path) as state:
        assert state.is_empty() and state.setting("schema") == SCHEMA_VERSION
    assert (tmp_path / DATABASE).stat().st_mode & 0o777 == 0o644


def test_no_record_is_an_error_when_one_is_expected(tmp_path: Path) -> None:
    with pytest.raises(RepoError, match="no repository gfxpack published is there"):
        State.open(tmp_path, create=False)
    assert not (tmp_path / DATABASE).exists()


def test_a_file_that_is_no_record_is_one_error(tmp_path: Path) -> None:
    (tmp_path / DATABASE).write_bytes(b"not a database, but long enough for a header" * 4)
    with (
        pytest.raises(RepoError, match="not a record of a published repository"),
        State.open(tmp_path) as state,
    ):
        state.builds()


def test_a_record_of_another_schema_is_refused(tmp_path: Path) -> None:
    with State.open(tmp_path) as state, state.transaction():
        state.set_settings({"schema": "99"})
    with pytest.raises(RepoError, match="a record of schema 99; this gfxpack reads schema"):
        State.open(tmp_path)


@pytest.mark.parametrize("planted", ["../../etc/shadow", "/etc/shadow", "a/b.deb", "x.txt"])
def test_a_name_read_back_is_checked_before_it_becomes_a_path(tmp_path: Path, planted: str) -> None:
    with State.open(tmp_path) as state, state.transaction():
        state.add_files(1, [entry("tool_1.0-1_amd64.deb")])
    with sqlite3.connect(tmp_path / DATABASE) as db:
        db.execute("UPDATE files SET retired = 1, name = ?", (planted,))
    with State.open(tmp_path) as state, pytest.raises(RepoError, match="not a package file"):
        state.retired_before("deb", 5)


def test_a_transaction_commits_whole_or_not_at_all(tmp_path: Path) -> None:
    with State.open(tmp_path) as state:
        with pytest.raises(RuntimeError), state.transaction():
            state.add_build("8.2.0-1", 1, None, ["tool_1.0-1_amd64.deb"])
            raise RuntimeError("killed")
        assert state.builds() == []
        with state.transaction():
            state.add_build("8.2.0-1", 1, None, ["tool_1.0-1_amd64.deb"])
        assert [b.version for b in state.builds()] == ["8.2.0-1"]


def test_live_identities_are_unique_and_a_retired_file_comes_back(tmp_path: Path) -> None:
    with State.open(tmp_path) as state:
        with state.transaction():
            segment = state.new_segment("deb")
            state.set_pieces(segment, {"Packages/amd64": Piece(b"a", b"b")})
            state.add_files(segment, [entry("tool_1.0-1_amd64.deb")])
        assert state.live_owner("deb", "tool 1.0-1 amd64") == "tool_1.0-1_amd64.deb"
        with pytest.raises(RepoError), state.transaction():
            state.add_files(segment, [entry("renamed.deb")])  # one version, two files
        with state.transaction():
            state.retire(["tool_1.0-1_amd64.deb"], 4)
        assert state.live_owner("deb", "tool 1.0-1 amd64") is None
        assert state.retired_before("deb", 3) == [] and state.retired_before("deb", 4)
        with state.transaction():
            state.add_files(segment, [entry("tool_1.0-1_amd64.deb")])
        found = state.file("tool_1.0-1_amd64.deb")
        assert found is not None and found[1] is None  # live again
        with state.transaction():
            state.set_pieces(segment, {})
        assert state.segments("deb") == []


def test_a_record_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    elsewhere.write_bytes(b"")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / DATABASE).symlink_to(elsewhere)
    with pytest.raises(RepoError, match="not a regular file; the record is never followed"):
        State.open(tmp_path / "repo")
    assert elsewhere.read_bytes() == b""


@pytest.mark.parametrize(
    ("field", "planted"),
    [
        ("Filename", "../../../etc/shadow"),
        ("SHA256", "cd" * 32),
        ("Description", "x\nFilename: ../../evil.deb"),
    ],
)
def test_an_entry_is_what_the_indexes_say_of_its_own_file(
    tmp_path: Path, field: str, planted: str
) -> None:
    """A segment that loses a file has its pieces made again from its entries: each must
    name its own pool file, with its own digests, in fields of one line."""
    with State.open(tmp_path) as state, state.transaction():
        state.add_files(1, [entry("tool_1.0-1_amd64.deb")])
    with sqlite3.connect(tmp_path / DATABASE) as db:
        db.execute("UPDATE files SET entry = json_set(entry, ?, ?)", (f"$.stanza.{field}", planted))
    with State.open(tmp_path) as state, pytest.raises(RepoError, match="not a record of a"):
        state.segment_entries(1)
