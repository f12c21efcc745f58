"""Text fields are checked once, when package.json and a --changelog file are read: a
NUL, a line break in a one-line field, a '/' in an architecture or a changelog year no
RPM can hold is one error line naming the file, the pointer and what is allowed, and
nothing is written. What is allowed, at its most unusual, rpm and dpkg-deb read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.cli import cli
from gfxpack.config import InvalidConfig, load_config, parse_config
from gfxpack.formats import PackageInfo, rpm
from gfxpack.text_fields import LINE, TEXT
from tests.conftest import EXAMPLE_CONFIG, run, shared_path
from tests.fuzz.conftest import fuzz_settings
from tests.small_tree import build, make_tree, write_config

LINE_ALLOWED = "expected one line of printable characters"
TEXT_ALLOWED = "expected text of printable characters, newlines and tabs"
DEB_ARCH_ALLOWED = (
    "expected a Debian architecture name (lowercase letters, digits and '-', such as "
    "amd64, arm64 or all; not a wildcard such as any)"
)
MAINTAINER_ALLOWED = "expected 'Name <email>'"
RPM_ARCH_ALLOWED = (
    "expected an RPM architecture name (letters, digits and '_', such as x86_64, aarch64 or noarch)"
)
EXAMPLE = json.loads(EXAMPLE_CONFIG.read_text())
BLAS = next(i for i, entry in enumerate(EXAMPLE) if entry["Package"] == "amdrocm-blas")


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("artifacts")
    make_tree(root)
    return root


def hostile_config(tmp_path: Path, key: str, value: object, index: int = BLAS) -> Path:
    """examples/package.json with ``key`` of entry ``index`` set to ``value``; json.dumps
    escapes what JSON must (a NUL as \\u0000, a lone surrogate as \\ud800)."""
    document = json.loads(EXAMPLE_CONFIG.read_text())
    document[index][key] = value
    path = tmp_path / "package.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def refused_build(tmp_path: Path, artifacts: Path, *args: str, config: Path) -> str:
    """The one error line of a build that must fail; asserts nothing was written to OUT
    and a file beside it is untouched."""
    neighbour = tmp_path / "neighbour"
    neighbour.write_bytes(b"kept")
    before = os.stat(neighbour)
    out = tmp_path / "out"
    result = build(tmp_path, artifacts, *args, config=config, out=out)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert result.stderr == errors[0] + "\n"  # no traceback, no other line
    assert not out.exists()
    after = os.stat(neighbour)
    assert (after.st_ino, after.st_nlink, neighbour.read_bytes()) == (before.st_ino, 1, b"kept")
    return errors[0]


# --- package.json: one error line per hostile field --------------------------------------

HOSTILE_FIELDS = {
    # one-line fields
    "maintainer-nul": (
        "Maintainer",
        "ROCm\x00 <rocm@example.com>",
        "a NUL character",
        MAINTAINER_ALLOWED,
    ),
    "maintainer-newline": (
        "Maintainer",
        "ROCm <rocm@example.com>\nDepends: evil",
        "a newline",
        MAINTAINER_ALLOWED,
    ),
    "license-nul": ("License", "MIT\x00", "a NUL character", LINE_ALLOWED),
    "summary-newline": ("Description_Short", "one\ntwo", "a newline", LINE_ALLOWED),
    "summary-line-separator": (
        "Description_Short",
        "one\u2028two",
        "a line separator (U+2028)",
        LINE_ALLOWED,
    ),
    "section-tab": ("Section", "devel\tlibs", "a tab", LINE_ALLOWED),
    "homepage-escape": ("Homepage", "https://x\x1b[2J", "an escape character", LINE_ALLOWED),
    "vendor-lone-surrogate": (
        "Vendor",
        "AMD \ud800",
        "a lone surrogate (U+D800, not UTF-8)",
        LINE_ALLOWED,
    ),
    "group-bidi-override": (
        "Group",
        "Development/\u202eLibraries",
        "the bidirectional control U+202E",
        LINE_ALLOWED,
    ),
    "priority-c1-control": (
        "Priority",
        "optional\x85",
        "the control character U+0085",
        LINE_ALLOWED,
    ),
    "version-carriage-return": ("Version", "\r", "a carriage return", LINE_ALLOWED),
    # text of several lines
    "description-nul": (
        "Description_Long",
        "Fine text.\n\nThen\x00 a NUL.",
        "a NUL character",
        TEXT_ALLOWED,
    ),
    "description-carriage-return": (
        "Description_Long",
        "overwritten\rline",
        "a carriage return",
        TEXT_ALLOWED,
    ),
    "description-form-feed": (
        "Description_Long",
        "page\x0cbreak",
        "the control character U+000C",
        TEXT_ALLOWED,
    ),
    "comments-delete": ("Comments", "free\x7f text", "the control character U+007F", TEXT_ALLOWED),
    # architectures become file names and paths
    "architecture-newline": ("Architecture", "amd64\n", "a newline", DEB_ARCH_ALLOWED),
    "architecture-slash": ("Architecture", "../../amd64", None, DEB_ARCH_ALLOWED),
    "architecture-wildcard": ("Architecture", "any", None, DEB_ARCH_ALLOWED),
    "architecture-empty": ("Architecture", "", None, DEB_ARCH_ALLOWED),
    "buildarch-slash": ("BuildArch", "x86_64/../../etc", None, RPM_ARCH_ALLOWED),
    "buildarch-dash": ("BuildArch", "x86-64", None, RPM_ARCH_ALLOWED),
    "buildarch-newline": ("BuildArch", "x86_64\n", "a newline", RPM_ARCH_ALLOWED),
}


@pytest.mark.parametrize("case", HOSTILE_FIELDS, ids=list(HOSTILE_FIELDS))
def test_a_hostile_text_field_is_one_error_and_nothing_is_written(case, tmp_path, small_tree):
    key, value, what, allowed = HOSTILE_FIELDS[case]
    config = hostile_config(tmp_path, key, value)
    error = refused_build(tmp_path, small_tree, config=config)
    expected = (
        f"{what} is not allowed; {allowed}"
        if what
        else f"{allowed}, got {value!r}"  # a grammar: the value is quoted
    )
    assert error == f"error: {config}: /{BLAS}/{key}: {expected}"


def test_the_example_error_of_the_issue(tmp_path, small_tree):
    config = hostile_config(tmp_path, "Description_Long", "ROCm\x00BLAS", index=3)
    assert refused_build(tmp_path, small_tree, config=config) == (
        f"error: {config}: /3/Description_Long: a NUL character is not allowed; "
        "expected text of printable characters, newlines and tabs"
    )


@pytest.mark.parametrize(
    ("key", "limit", "allowed"),
    [("License", 1024, LINE_ALLOWED), ("Description_Long", 65536, TEXT_ALLOWED)],
)
def test_a_field_too_long_is_refused_and_the_longest_loads(tmp_path, key, limit, allowed):
    path = hostile_config(tmp_path, key, "é" * limit)
    assert getattr(load_config(path).get("amdrocm-blas"), key.lower()) == "é" * limit
    path = hostile_config(tmp_path, key, "é" * (limit + 1))
    with pytest.raises(InvalidConfig) as error:
        load_config(path)
    assert str(error.value) == (
        f"{path}: /{BLAS}/{key}: {limit + 1:,} characters are too many; {allowed}, "
        f"at most {limit:,} characters"
    )


NESTED = {
    # a trailing newline used to pass the name checks ('$' matches before it)
    "package-trailing-newline": (
        ["Package"],
        "amdrocm-blas\n",
        "a newline is not allowed; expected a package name (lowercase letters, digits, "
        "'+', '-' and '.', at least two characters)",
    ),
    "rpm-requires-nul": (
        ["RPMRequires", 0],
        "glibc\x00",
        f"a NUL character is not allowed; {LINE_ALLOWED}",
    ),
    "deb-depends-newline": (
        ["DEBDepends", 0],
        "libc6\nEvil: yes",
        f"a newline is not allowed; {LINE_ALLOWED}",
    ),
    "artifact-newline": (
        ["Artifactory", 0, "Artifact"],
        "blas\n",
        "a newline is not allowed; expected an artifact name (a letter, then letters, "
        "digits or '-'; no '_')",
    ),
    "subdir-nul": (
        ["Artifactory", 0, "Artifact_Subdir", 0, "Name"],
        "rocBLAS\x00",
        "a NUL character is not allowed; expected a subdir name (one line of printable "
        "characters, not only '/' and spaces)",
    ),
}


@pytest.mark.parametrize("case", NESTED, ids=list(NESTED))
def test_texts_inside_an_entry_are_checked_too(case, tmp_path, small_tree):
    location, value, message = NESTED[case]
    document = json.loads(EXAMPLE_CONFIG.read_text())
    holder = document[BLAS]
    for step in location[:-1]:
        holder = holder[step]
    holder[location[-1]] = value
    config = tmp_path / "package.json"
    config.write_text(json.dumps(document))
    pointer = "/".join(str(step) for step in [BLAS, *location])
    assert refused_build(tmp_path, small_tree, config=config) == (
        f"error: {config}: /{pointer}: {message}"
    )


def test_plan_refuses_the_same_way(tmp_path):
    config = hostile_config(tmp_path, "License", "MIT\x00")
    result = CliRunner().invoke(
        cli, ["plan", "--config", str(config), "--rocm-version", "8.2.0", "--target", "gfx942"]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {config}: /{BLAS}/License: a NUL character is not allowed; {LINE_ALLOWED}\n"
    )


def test_a_hostile_key_is_shown_on_one_line(tmp_path):
    # A key is text too: a pointer holding it is escaped, never split over lines.
    config = tmp_path / "package.json"
    config.write_text('[{"Package": "amdrocm-x", "Section\\n": "a", "Section\\n": "b"}]')
    with pytest.raises(InvalidConfig) as error:
        load_config(config)
    assert str(error.value) == (
        f"{config}: /0/Section\\n: key 'Section\\n' appears more than once in amdrocm-x"
    )
    config.write_text('[{"Package": "amdrocm-x", "Fo\\u0000o": 1, "\\ud800": 2}]')
    assert load_config(config).warnings == (
        f"{config}: /0/Fo\\x00o (amdrocm-x): unknown key 'Fo\\x00o' ignored",
        f"{config}: /0/\\ud800 (amdrocm-x): unknown key '\\ud800' ignored",
    )


@pytest.mark.parametrize("kind", ["fifo", "too-big"])
def test_package_json_that_is_no_file_or_too_big_is_refused(tmp_path, kind):
    config = tmp_path / "package.json"
    if kind == "fifo":
        os.mkfifo(config)  # opening it would wait for a writer forever
        message = "is a FIFO, expected a regular file"
    else:
        with open(config, "wb") as file:
            file.truncate((16 << 20) + 1)
        message = "a package list of at most 16 MiB is expected"
    with pytest.raises(InvalidConfig) as error:
        load_config(config)
    assert str(error.value) == f"{config}: {message}"


def test_therocks_own_package_json_still_loads():
    config = load_config(shared_path("fixtures", "therock", "package.json"))
    assert len(config.packages) == 81
    assert {spec.architecture for spec in config.packages} == {"amd64"}
    assert {spec.build_arch for spec in config.packages} == {"x86_64"}


TEXT_FIELDS = ["Maintainer", "Description_Short", "Description_Long", "License", "Homepage"]


@fuzz_settings()
@given(
    st.sampled_from(TEXT_FIELDS),
    # every character, lone surrogates included, and the ones that matter most often
    st.text(
        st.characters(exclude_categories=()) | st.sampled_from("\x00\n\t\r\x85\ud800"), max_size=40
    ),
)
def test_whatever_loads_is_text_a_package_can_carry(key, value):
    """Any string in any text field: refused, or UTF-8 without NUL, CR or other controls
    (one-line fields: no newline or tab either)."""
    try:
        config = parse_config(json.dumps([{"Package": "amdrocm-x", key: value}]))
    except InvalidConfig as e:
        assert str(e).startswith(f"package.json: /0/{key}: ")
        assert "\n" not in str(e)
        return
    kept = getattr(config.packages[0], key.lower())
    assert kept == value
    kept.encode("utf-8")  # no lone surrogate
    forbidden = set(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
    if key == "Description_Long":
        forbidden -= {"\n", "\t"}
    assert not forbidden & set(kept)


# --- the changelog ------------------------------------------------------------------------

HOSTILE_CHANGELOGS = {
    "year-9999": (
        "* Fri Dec 31 9999 A <a@example.com> - 1-1\n- far\n",
        ":1: the year 9999 is not allowed; expected a year from 1990 to 2105 "
        "(what rpmbuild accepts and an RPM header holds)",
    ),
    "year-1900": (
        "* Mon Jan 01 1900 A <a@example.com> - 1-1\n- old\n",
        ":1: the year 1900 is not allowed; expected a year from 1990 to 2105 "
        "(what rpmbuild accepts and an RPM header holds)",
    ),
    "year-2106": (
        "* Fri Jan 01 2106 A <a@example.com> - 1-1\n- old\n",
        ":1: the year 2106 is not allowed; expected a year from 1990 to 2105 "
        "(what rpmbuild accepts and an RPM header holds)",
    ),
    "nul-in-text": (
        "* Tue Dec 01 2026 A <a@example.com> - 1-1\n- fine\n- a NUL \x00 here\n",
        f":3: a NUL character is not allowed; {TEXT_ALLOWED}",
    ),
    "vertical-tab": (
        # str.splitlines() took it for a line break: now it is refused, not split on.
        "* Tue Dec 01 2026 A <a@example.com> - 1-1\n- one\x0b* Mon Nov 02 2026 B <b@x> - 0\n",
        f":2: the control character U+000B is not allowed; {TEXT_ALLOWED}",
    ),
    "lone-carriage-return": (
        "* Tue Dec 01 2026 A <a@example.com> - 1-1\n- over\rwritten\n",
        f":2: a carriage return is not allowed; {TEXT_ALLOWED}",
    ),
    "escape-in-author": (
        "* Tue Dec 01 2026 A\x1b[31m <a@example.com> - 1-1\n- x\n",
        f":1: an escape character is not allowed; {TEXT_ALLOWED}",
    ),
    "paragraph-separator-in-heading": (
        "* Tue Dec 01 2026 A <a@example.com> - 1-1 \u2029\n- x\n",
        f":1: a paragraph separator (U+2029) is not allowed; {TEXT_ALLOWED}",
    ),
    "author-too-long": (
        "* Tue Dec 01 2026 " + "A" * 1025 + "\n- x\n",
        f":1: the author: 1,025 characters are too many; {LINE_ALLOWED}, at most 1,024 characters",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_CHANGELOGS, ids=list(HOSTILE_CHANGELOGS))
def test_a_hostile_changelog_is_one_error_and_nothing_is_written(case, tmp_path, small_tree):
    text, message = HOSTILE_CHANGELOGS[case]
    changelog = tmp_path / "changelog"
    changelog.write_bytes(text.encode("utf-8"))
    config = write_config(tmp_path / "package.json")
    error = refused_build(tmp_path, small_tree, "--changelog", str(changelog), config=config)
    assert error == f"error: {changelog}{message}"


# --- the referees: every field at its most unusual allowed value -------------------------

LONG_WORD = "ÿ" * 3000  # longer than any line dpkg folds, and never broken by it
UNUSUAL = {
    "Maintainer": "Zoë Ĳsselmeer-山田 (ROCm ✓) <zoë.yamada@例え.jp>",
    "Description_Short": ("Ünïcödé ✓ 山田 مرحبا " * 60)[:1024].rstrip(),
    "Description_Long": (
        "First paragraph: ünïcödé, 山田, مرحبا, emoji 🚀, combining e\u0301.\n"
        "\n"
        "\tA tab-led, preformatted line\t with tabs inside.\n"
        f"{LONG_WORD}\n"
        "\n"
        "Last paragraph " + "wörds " * 2000
    ).strip(),
    "Section": "non-free/dévél",
    "Priority": "optional",
    "Group": "Development/Libraries ✓",
    "License": "MIT AND (Apache-2.0 WITH LLVM-exception) © ".ljust(1024, "x"),
    "Vendor": "Advanced Micro Devices, Inc — ÄMD",
    "Homepage": "https://例え.jp/" + "ü" * 1000,
    "Comments": "Free text\twith a tab\nand a second line",
    "Version": "",
}
CHANGELOG = (
    "%changelog\n"
    "* Thu Dec 31 2105 Zoë 山田 <zoë@例え.jp> - 8.2.0-1\n"
    "- The last day an RPM header can date: ünïcödé\n"
    "-\ttab-led\n"
    "\n"
    "* Mon Jan 01 1990 A <a@example.com> - 0.1-1\n"
    f"- The first year rpmbuild takes {LONG_WORD}\n"
)


def test_rpm_and_dpkg_read_every_field_at_its_most_unusual(tmp_path, small_tree):
    config = write_config(tmp_path / "package.json", **UNUSUAL)
    assert len(UNUSUAL["Description_Short"]) == 1024 and len(UNUSUAL["License"]) == 1024
    spec = load_config(config).packages[0]
    assert (spec.maintainer, spec.license) == (UNUSUAL["Maintainer"], UNUSUAL["License"])
    changelog = tmp_path / "changelog"
    changelog.write_text(CHANGELOG, encoding="utf-8")
    result = build(tmp_path, small_tree, "--changelog", str(changelog), config=config)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    # Every package reads, the non-versioned ones too.
    built = [*out.glob("*.rpm"), *out.glob("*.deb")]
    assert len(built) == 4
    for path in built:
        run(*(("rpm", "-qpi") if path.suffix == ".rpm" else ("dpkg-deb", "-I")), str(path))
    # The versioned package carries package.json's fields.
    rpms = sorted(out.glob("amdrocm-blas8.2-*.rpm"))
    debs = sorted(out.glob("amdrocm-blas8.2_*.deb"))
    assert len(rpms) == len(debs) == 1
    for path in rpms:
        info = run("rpm", "-qpi", str(path))
        assert info.stderr == ""
        # "License     : MIT ...": the name padded to 12 columns, then ": " and the value
        shown = {
            line[:12].strip(): line[14:] for line in info.stdout.splitlines() if line[12:14] == ": "
        }
        assert shown["License"] == UNUSUAL["License"]
        assert shown["URL"] == UNUSUAL["Homepage"]
        assert shown["Vendor"] == UNUSUAL["Vendor"]
        assert shown["Packager"] == UNUSUAL["Maintainer"]
        assert shown["Group"] == UNUSUAL["Group"]
        assert shown["Summary"] == UNUSUAL["Description_Short"]
        description = run("rpm", "-qp", "--qf", "%{DESCRIPTION}", str(path)).stdout
        assert description == UNUSUAL["Description_Long"]
        changes = run("rpm", "-qp", "--changelog", str(path)).stdout
        assert changes.startswith("* Thu Dec 31 2105 Zoë 山田 <zoë@例え.jp> - 8.2.0-1\n")
        assert "* Mon Jan 01 1990 A <a@example.com> - 0.1-1\n" in changes
        assert LONG_WORD in changes and "-\ttab-led" in changes
    for path in debs:
        info = run("dpkg-deb", "-I", str(path))
        assert info.stderr == ""  # dpkg-deb warns about any field it finds wrong
        fields = run("dpkg-deb", "-f", str(path), "Maintainer", "Section", "Homepage").stdout
        assert fields == (
            f"Maintainer: {UNUSUAL['Maintainer']}\nSection: {UNUSUAL['Section']}\n"
            f"Homepage: {UNUSUAL['Homepage']}\n"
        )
        # One field: its value alone; the extended description folded, blank lines " .".
        synopsis, *extended = run("dpkg-deb", "-f", str(path), "Description").stdout.splitlines()
        assert synopsis == UNUSUAL["Description_Short"]
        assert extended[:4] == [
            " First paragraph: ünïcödé, 山田, مرحبا, emoji 🚀, combining e\u0301.",
            " .",
            " \tA tab-led, preformatted line\t with tabs inside.",
            f" {LONG_WORD}",
        ]
        assert max(map(len, extended[5:])) <= 79  # the last paragraph, folded


@pytest.mark.parametrize(
    ("architecture", "build_arch"), [("arm64", "aarch64"), ("musl-linux-riscv64", "riscv64")]
)
def test_an_unusual_allowed_architecture_is_read_back(tmp_path, architecture, build_arch):
    # A metapackage has no payload: no artifact directory is needed for its arch.
    config = tmp_path / "package.json"
    config.write_text(
        json.dumps(
            [
                *json.loads(write_config(tmp_path / "small.json").read_text()),
                {
                    "Package": "amdrocm-meta",
                    "Metapackage": "True",
                    "Architecture": architecture,
                    "BuildArch": build_arch,
                    "DEBDepends": ["amdrocm-blas"],
                    "RPMRequires": ["amdrocm-blas"],
                },
            ]
        )
    )
    artifacts = tmp_path / "artifacts"
    make_tree(artifacts)
    result = build(tmp_path, artifacts, config=config)
    assert result.exit_code == 0, result.output
    (deb_file,) = (tmp_path / "out").glob(f"amdrocm-meta8.2_*_{architecture}.deb")
    (rpm_file,) = (tmp_path / "out").glob(f"amdrocm-meta8.2-*.{build_arch}.rpm")
    assert run("dpkg-deb", "-f", str(deb_file), "Architecture").stdout == f"{architecture}\n"
    assert run("rpm", "-qp", "--qf", "%{ARCH}", str(rpm_file)).stdout == build_arch


def test_the_kinds_hold_what_their_words_say():
    assert LINE.problem("Zoë 山田 🚀") is None and TEXT.problem("a\n\tb") is None
    assert LINE.problem("a\tb") == f"a tab is not allowed; {LINE_ALLOWED}"
    assert TEXT.problem("a\x00") == f"a NUL character is not allowed; {TEXT_ALLOWED}"
    # a lone surrogate cannot be written as UTF-8: proof that refusing it is needed
    with pytest.raises(UnicodeEncodeError):
        "\udc80".encode()
    assert TEXT.problem("\udc80") == (
        f"a lone surrogate (U+DC80, not UTF-8) is not allowed; {TEXT_ALLOWED}"
    )


def test_a_nul_is_what_makes_rpm_unreadable(tmp_path):
    """Why NUL is refused: an rpm header string that holds one is one rpm cannot read.
    (The writer is given the NUL directly here; package.json never lets one through.)"""
    info = PackageInfo(name="tool", version="1", release="1", arch="x86_64", summary="s\x00x")
    path = tmp_path / "tool.rpm"
    with open(path, "wb") as file:
        rpm.write(info, file)
    result = subprocess.run(["rpm", "-qpi", str(path)], capture_output=True, text=True)
    assert result.returncode == 1 and "hdr load: BAD" in result.stderr
