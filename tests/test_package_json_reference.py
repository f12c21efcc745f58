"""docs/reference/package-json.md documents exactly the keys gfxpack knows.

The keys come from gfxpack.config's own tables (:func:`gfxpack.config.known_keys`),
not a copy: a key the loader learns and the page does not document fails here, as
does a documented key the loader does not know. Every key's example is loaded as
package.json, so it says what the loader accepts; the summary table agrees with
the sections, and its counts with TheRock's file (skipped without ../shared).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gfxpack.config import FALSE_WORDS, TRUE_WORDS, known_keys, load_config, parse_config
from tests.conftest import ROOT, shared_path

PAGE = ROOT / "docs" / "reference" / "package-json.md"
# The sections whose '### `Key`' headings document one level of an entry.
LEVELS = {
    "Package keys": "package",
    "Artifactory entries": "artifact",
    "Artifact_Subdir entries": "subdir",
}
# How the summary table names a key of each level.
SUMMARY_PREFIX = {"artifact": "Artifactory[].", "subdir": "Artifact_Subdir[]."}
FENCE = "`" * 3


def sections() -> dict[tuple[str, str], str]:
    """(level, key) -> the text of the key's section."""
    found: dict[tuple[str, str], str] = {}
    level = None
    key = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            level, key = LEVELS.get(line[3:].strip()), None
        elif heading := re.fullmatch(r"### `([^`]+)`", line):
            assert level is not None, f"{line!r} is under no section of keys"
            key = heading[1]
            assert (level, key) not in found, f"{key} documented twice"
            found[level, key] = ""
        elif key is not None and level is not None:
            found[level, key] += line + "\n"
    return found


def summary() -> dict[tuple[str, str], list[str]]:
    """(level, key) -> the other cells of its row in the summary table."""
    text = PAGE.read_text(encoding="utf-8").split("## Summary", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        if cells := re.fullmatch(r"\| `([^`]+)` \|(.*)\|", line):
            name, rest = cells[1], [c.strip() for c in cells[2].split("|")]
            level = next((lv for lv, p in SUMMARY_PREFIX.items() if name.startswith(p)), None)
            key = name.removeprefix(SUMMARY_PREFIX.get(level or "", ""))
            rows[level or "package", key] = rest
    return rows


def documented(level: str) -> set[str]:
    return {key for lv, key in sections() if lv == level}


@pytest.mark.parametrize("level", ["package", "artifact", "subdir"])
def test_the_page_documents_every_key_the_loader_knows_and_no_other(level: str):
    known = set(known_keys()[level])
    assert known - documented(level) == set(), "known to gfxpack.config, not documented"
    assert documented(level) - known == set(), "documented, unknown to gfxpack.config"


def test_the_summary_lists_the_sections_keys_with_their_defaults_and_uses():
    rows = summary()
    assert set(rows) == set(sections())
    for (level, key), text in sections().items():
        # Each section opens with its own | Type | Default | Used by | row.
        cells = re.search(r"\| Type \| Default \| Used by \|\n\|[-|]+\|\n\|(.*)\|\n", text)
        assert cells, f"{key}: no Type / Default / Used by table"
        _, default, used_by = [c.strip() for c in cells[1].rsplit("|", 2)]
        assert [default, used_by] == rows[level, key][1:3], key


def wrapped(level: str, key: str, fragment: dict) -> list:
    """A package.json whose only content is ``fragment`` at ``level``."""
    if level == "package":
        return [{"Package": "amdrocm-example", **fragment}]
    if level == "artifact":
        return [{"Package": "amdrocm-example", "Artifactory": [{"Artifact": "x", **fragment}]}]
    subdir = {"Name": "x", **fragment}
    return [
        {
            "Package": "amdrocm-example",
            "Artifactory": [{"Artifact": "x", "Artifact_Subdir": [subdir]}],
        }
    ]


@pytest.mark.parametrize(("level", "key"), sorted(sections()))
def test_each_keys_example_loads(level: str, key: str):
    text = sections()[level, key]
    examples = re.findall(f"{FENCE}json\n(.*?){FENCE}", text, re.DOTALL)
    assert len(examples) == 1, f"{key}: expected one JSON example"
    fragment = json.loads("{" + examples[0] + "}")
    assert list(fragment) == [key]
    config = parse_config(json.dumps(wrapped(level, key, fragment)), "example.json")
    assert len(config.packages) == 1
    row = summary()[level, key]
    if "ignored" in row[2] or "legacy" in row[2]:
        (warning,) = config.warnings
        assert f"key {key!r} is ignored" in warning and "unknown" not in warning
    else:
        assert config.warnings == ()


def test_the_opening_example_loads_without_a_warning(tmp_path: Path):
    text = PAGE.read_text(encoding="utf-8")
    opening = re.search(f"{FENCE}json\n(\\[.*?){FENCE}", text, re.DOTALL)
    assert opening
    path = tmp_path / "package.json"
    path.write_text(opening[1])
    config = load_config(path)
    assert [spec.name for spec in config.packages] == ["amdrocm-blas"]
    assert config.warnings == ()


def test_the_boolean_words_are_the_loaders():
    text = PAGE.read_text(encoding="utf-8")
    for label, words in (("true", TRUE_WORDS), ("false", FALSE_WORDS)):
        line = re.search(f"^- {label}: (.*)$", text, re.MULTILINE)
        assert line, label
        assert set(re.findall(r'`"([^"]*)"`', line[1])) == set(words), label


def test_the_counts_are_therocks():
    """Every key TheRock's file uses is documented, and counted right."""
    entries = json.loads(shared_path("fixtures", "therock", "package.json").read_text())
    counts: Counter[tuple[str, str]] = Counter()
    for entry in entries:
        counts.update(("package", key) for key in entry)
        for source in entry.get("Artifactory", []):
            counts.update(("artifact", key) for key in source)
            for subdir in source.get("Artifact_Subdir", []):
                counts.update(("subdir", key) for key in subdir)
    rows = summary()
    assert set(counts) <= set(rows), "used by TheRock, not documented"
    assert {where: int(cells[3]) for where, cells in rows.items()} == {
        where: counts.get(where, 0) for where in rows
    }


@pytest.mark.parametrize(
    ("level", "key", "warning"),
    [
        ("artifact", "Artifact_Subdirs", "unknown artifact key 'Artifact_Subdirs' ignored (did "
         "you mean 'Artifact_Subdir'?)"),
        ("subdir", "Component", "unknown subdir key 'Component' ignored (did you mean "
         "'Components'?)"),
        ("package", "allow_special_mode", "unknown key 'allow_special_mode' ignored (did you "
         "mean 'Allow_Special_Modes'?)"),
    ],
)  # fmt: skip
def test_a_misspelt_key_is_a_warning_with_the_key_meant(level: str, key: str, warning: str):
    """As the page says: at every level, since a misspelt Components would package
    nothing, silently."""
    config = parse_config(json.dumps(wrapped(level, key, {key: ["lib"]})), "p.json")
    (found,) = config.warnings
    assert found.endswith(f"(amdrocm-example): {warning}")
