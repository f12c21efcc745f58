"""Golden tests: every "Package Generation" table and dependency tree of seed 000.

The golden texts are the seed's own (see golden/seed000/README.md); the first
test proves they still are. gfxpack's output is compared with them exactly,
except for three things the seed writes as prose rather than as data:

- the sample file paths under ``[Files: ...]`` (illustrations; gfxpack prints
  where the files come from instead);
- the parenthesised notes on leaf lines (the seed writes ``libc6`` once and
  ``libc6 (system dependency)`` once; developer-tools leaves have none), while
  the labels of expanded nodes, such as ``(device)``, are compared;
- the ``└─► ...`` lines eliding the rest of amdrocm-core's dependencies
  (the fixture lists exactly the seven the seed names).

A table row that the seed summarises in words ("host + all devices") is
checked against the children the seed's own tree draws under that package.

The seed draws its two targets in the order it names them, gfx1100 before
gfx942; gfxpack draws every target in processor order (Decision 16: gfx942
before gfx1100). The seed's two per-arch blocks differ only in their arch, so
the comparisons read the golden texts with the two names exchanged
(``golden``): the seed's drawing in processor order.

gfxpack adds the version pin of every in-set edge (``amdrocm-blas-host8.2 (=
8.2.0-1)``), which the seed does not print: the comparisons take the pins out
of gfxpack's output (``unpinned``), and ``test_trees_and_tables_show_pins``
checks that they are there.
"""

from __future__ import annotations

import re

import pytest

from gfxpack import views
from gfxpack.formats import RPM
from tests.conftest import shared_path
from tests.golden import Golden

# The seed's own texts: read through the golden helper, never rewritten by
# --update-golden (they are the seed's words; test_golden_text_is_the_seeds proves it).
SEED_GOLDEN = Golden(update=False)
GOLDEN = SEED_GOLDEN.path("seed000")
SEED = ("seeds", "000_3bb2ecc8bcc6cc59.txt")  # under the shared fixtures
EXAMPLES = ["sysdeps", "blas", "core", "developer-tools"]
PIN = re.compile(r" \((?:=|>=|<=|<<|>>) 8\.2\.0-1\)")
CONNECTOR = re.compile(r"^(?P<lead>[│ ]*)(?P<glyph>[├└])─► (?P<name>\S+)(?: \((?P<label>.*)\))?$")


def golden(name: str) -> str:
    """A golden text in processor order: the seed's gfx1100 and gfx942 exchanged."""
    text = SEED_GOLDEN.read(f"seed000/{name}")
    return re.sub(r"gfx1100|gfx942", lambda m: SWAPPED[m[0]], text)


SWAPPED = {"gfx1100": "gfx942", "gfx942": "gfx1100"}


def _words(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "name", sorted(p.name for p in GOLDEN.iterdir() if p.name.endswith((".tree", ".table.md")))
)
def test_golden_text_is_the_seeds(name):
    text = shared_path(*SEED).read_text(encoding="utf-8")
    seed = [line for line in _words(text) if line != "|"]
    expected = _words(SEED_GOLDEN.read(f"seed000/{name}"))
    assert any(seed[i : i + len(expected)] == expected for i in range(len(seed))), (
        f"{name} is no longer a verbatim part of the seed"
    )


def unpinned(text: str) -> str:
    """gfxpack's rendering without the pins the seed does not print."""
    return PIN.sub("", text)


def normalize_tree(text: str) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    # Drop the seed's "..." elision, making the sibling before it the last one.
    kept: list[str] = []
    for line in lines:
        match = CONNECTOR.match(line)
        if match and match["name"] == "...":
            for i in range(len(kept) - 1, -1, -1):
                previous = CONNECTOR.match(kept[i])
                if previous and previous["lead"] == match["lead"]:
                    kept[i] = kept[i].replace("├─►", "└─►", 1)
                    break
            continue
        kept.append(line)
    out: list[str] = []
    in_files = False
    for i, line in enumerate(kept):
        body = line.rstrip()
        if "[Files: " in body:
            in_files = True
            out.append(body)
            continue
        if in_files:
            if body.endswith("│") and body.strip(" │") == "":
                in_files = False
            else:
                continue  # an illustrative path under [Files: ...]
        match = CONNECTOR.match(body)
        if match:
            following = kept[i + 1] if i + 1 < len(kept) else ""
            child_lead = match["lead"] + ("    " if match["glyph"] == "└" else "│   ")
            expanded = following.startswith(child_lead) and following.strip(" ") in ("│", "")
            if not expanded:
                body = f"{match['lead']}{match['glyph']}─► {match['name']}"
        out.append(body)
    return out


@pytest.mark.parametrize("example", EXAMPLES)
def test_tree(seed_plan, example):
    ours = unpinned(views.tree(seed_plan, f"amdrocm-{example}"))
    assert normalize_tree(ours) == normalize_tree(golden(f"{example}.tree"))


def test_tree_normalization_still_sees_differences(seed_plan):
    """The normalization must not hide a wrong package or a wrong kind."""
    expected = normalize_tree(golden("blas.tree"))
    ours = unpinned(views.tree(seed_plan, "amdrocm-blas"))
    assert normalize_tree(ours.replace("solver8.2-gfx942", "solver8.2-gfx1100")) != expected
    assert normalize_tree(ours.replace("(device)", "(host)")) != expected
    assert normalize_tree(ours.replace("[No files - aggregator only]", "[No files]")) != expected


def test_targets_are_drawn_in_processor_order_unlike_the_seed(seed_plan):
    """Decision 16: gfx942 before gfx1100 in trees and tables (the seed, and the
    targets as given, have gfx1100 first), so the exchange in ``golden`` is needed."""
    seed = SEED_GOLDEN.read("seed000/blas.tree")
    assert seed.index("amdrocm-blas8.2-gfx1100") < seed.index("amdrocm-blas8.2-gfx942")
    assert seed_plan.targets == ("gfx942", "gfx1100")
    for ours in (views.tree(seed_plan, "amdrocm-blas"), views.table(seed_plan, "amdrocm-core")):
        assert ours.index("8.2-gfx942") < ours.index("8.2-gfx1100")


def _rows(markdown: str) -> list[list[str]]:
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        for line in markdown.splitlines()
        if line.startswith("|")
    ]
    return rows[2:]  # header and separator


def _seed_tree_children() -> dict[str, list[str]]:
    """Each expanded package of the seed's trees, with the packages drawn under it."""
    children: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    for example in EXAMPLES:
        for line in golden(f"{example}.tree").splitlines():
            match = CONNECTOR.match(line)
            if not match:
                continue
            depth = len(match["lead"]) // 4
            while stack and stack[-1][0] >= depth:
                stack.pop()
            if stack and match["name"] != "...":
                children.setdefault(stack[-1][1], []).append(match["name"])
            stack.append((depth, match["name"]))
    return children


SUMMARIES = {
    "host + all devices",
    "All arch-specific meta variants",
    "Actual packages with gfx1100",
    "Actual packages with gfx942",
    "All deps versioned (no arch suffix)",
}


@pytest.mark.parametrize("example", EXAMPLES)
def test_package_generation_table(seed_plan, example):
    expected = _rows(golden(f"{example}.table.md"))
    ours = _rows(unpinned(views.table(seed_plan, f"amdrocm-{example}")))
    drawn = _seed_tree_children()
    assert [row[:3] for row in ours] == [row[:3] for row in expected]
    for our_row, golden_row in zip(ours, expected, strict=True):
        name = golden_row[0].strip("`")
        expected = drawn[name] if golden_row[3] in SUMMARIES else golden_row[3].split(", ")
        assert our_row[3].split(", ") == expected, name


def test_sysdeps_table_is_the_seeds_with_pins(seed_plan):
    """Where the seed lists every dependency, the cells are the seed's; only pins are added."""
    expected = golden("sysdeps.table.md")
    ours = views.table(seed_plan, "amdrocm-sysdeps")
    assert _rows(unpinned(ours)) == _rows(expected)
    assert ours.splitlines()[0].split() == expected.splitlines()[0].split()
    assert "| amdrocm-sysdeps8.2 (= 8.2.0-1) |" in ours


def test_trees_and_tables_show_pins(seed_plan):
    tree = views.tree(seed_plan, "amdrocm-blas")
    assert "└─► amdrocm-blas8.2 (= 8.2.0-1) (meta)" in tree
    assert "├─► amdrocm-runtime8.2 (>= 8.2.0-1) (non-gfxarch)" in tree
    assert "└─► amdrocm-solver8.2-gfx942 (>= 8.2.0-1) (gfxarch → same arch)" in tree
    rpm_tree = views.tree(seed_plan, "amdrocm-blas", RPM)
    assert "amdrocm-runtime8.2 >= 8.2.0-1 (non-gfxarch)" in rpm_tree
    table = views.table(seed_plan, "amdrocm-blas")
    assert "amdrocm-blas-host8.2 (= 8.2.0-1), amdrocm-solver8.2-gfx942 (>= 8.2.0-1)" in table


def test_summary_expansions_come_from_the_seed():
    drawn = _seed_tree_children()
    assert drawn["amdrocm-blas8.2"] == [
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
        "amdrocm-blas8.2-gfx1100",
    ]
    assert drawn["amdrocm-core8.2"] == ["amdrocm-core8.2-gfx942", "amdrocm-core8.2-gfx1100"]
    assert len(drawn["amdrocm-core8.2-gfx942"]) == 7


@pytest.mark.parametrize(
    ("base", "count"),
    [
        ("amdrocm-sysdeps", 2),
        ("amdrocm-blas", 5),
        ("amdrocm-core", 4),
        ("amdrocm-developer-tools", 2),
    ],
)
def test_package_counts(seed_plan, base, count):
    """Summary table: 2 non-gfxarch; N+3 gfxarch; N+2 Gfxarch=True meta; 2 Gfxarch=False meta."""
    assert len(seed_plan.family(base)) == count
