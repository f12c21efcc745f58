"""Parsing: robustness, every violation, extension keys, the L1 inline version gate."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gfxpack.descriptors import Level
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.types import SUFFIXES
from tests.descriptors.helpers import (
    CANONICAL,
    KDP,
    edited,
    found,
    load,
    make_set_documents,
    problems,
    summary,
    uid,
    write_tree,
)

# --- JSONC -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('\ufeff{"a": 1}', {"a": 1}),
        ('// top\n{"a": /* inline */ 1} // end', {"a": 1}),
        (
            '{"a": "// not a comment", "b": "/* nor this */"}',
            {"a": "// not a comment", "b": "/* nor this */"},
        ),
        ('{"a": 1, "a": 2}', {"a": 2}),
        ('{"a": "quote \\" // inside"}', {"a": 'quote " // inside'}),
    ],
)
def test_jsonc_reads(text, value):
    assert loads(text.encode()) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,}', "Expecting property name enclosed in double quotes at line 1 column 9"),
        ("[1, 2,]", "Expecting value at line 1 column 7"),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": 1 /* open', "unterminated /* comment at line 1 column 9"),
        ("", "Expecting value at line 1 column 1"),
    ],
)
def test_jsonc_rejects(text, message):
    with pytest.raises(JsoncError, match="^" + re.escape(message)):
        loads(text.encode())


def test_jsonc_rejects_bytes_that_are_not_utf8():
    with pytest.raises(JsoncError, match="not UTF-8 at byte 1"):
        loads(b"{\xff}")


# --- robustness --------------------------------------------------------------------------------


def two_engines(tmp_path, change=None, **files):
    """Engines A and B side by side; A's documents bent by ``change``."""
    a = make_set_documents("a")
    if change:
        a = change(a)
    return write_tree(tmp_path, {**a, **make_set_documents("b"), **files})


def test_malformed_json_does_not_cost_the_other_engine(tmp_path):
    root = two_engines(tmp_path, lambda a: {**a, "a.kdp.json": '{"version": "1.0",'})
    result = load(root)
    assert list(summary(result)) == ["test:EngineB"]
    assert found(result, "D202") == [
        f'failed to parse "{root}/a.kdp.json": Expecting property name enclosed in double '
        "quotes at line 1 column 19"
    ]


def test_ignores_a_non_json_file(tmp_path):
    result = load(two_engines(tmp_path, **{"README.md": "# notes", "model.bin": "\0\1"}))
    assert len(result.sets) == 2 and problems(result) == []


def test_rejects_a_descriptor_whose_root_is_not_an_object(tmp_path):
    result = load(two_engines(tmp_path, lambda a: {**a, "a.kmd.json": "[1, 2]"}))
    assert found(result, "D203") == [
        f'"{tmp_path}/a.kmd.json" is not a valid descriptor: the document root must be a JSON '
        "object"
    ]
    assert list(summary(result)) == ["test:EngineB"]


def test_rejects_a_trailing_comma(tmp_path):
    text = json.dumps(make_set_documents("a")["a.udd.json"])[:-1] + ",}"
    result = load(two_engines(tmp_path, lambda a: {**a, "a.udd.json": text}))
    assert len(found(result, "D202")) == 1 and list(summary(result)) == ["test:EngineB"]


@pytest.mark.parametrize(
    "name", ["notes.json", ".ued.json", "x.KDP.JSON", "pack.kdp.jsonc", "a.ued.json.bak.json"]
)
def test_json_files_naming_no_descriptor_type_are_skipped(tmp_path, name):
    result = load(two_engines(tmp_path, **{f"extra/{name}": "{}"}))
    assert found(result, "D106") == [
        f'"{tmp_path}/extra/{name}" is not a descriptor filename (expected '
        "<name>.{kmd,uhd,ued,umd,udd,kdp,ukd}.json); skipping"
    ]
    assert len(result.sets) == 2


# --- violations: each drops the offender and keeps its sibling -----------------------------------

VIOLATIONS = {
    "missing_required_key": (
        "a.ued.json",
        {"metadata": None},
        "D209",
        "missing required key 'metadata' in \"{p}\"",
    ),
    "unknown_key": (
        "a.ued.json",
        {"heuristik": "x"},
        "D208",
        "unknown key 'heuristik' in \"{p}\"; extension keys must start with 'x-' or '_'; "
        "did you mean 'heuristic'?",
    ),
    "schema_key_is_not_a_member": (
        "a.ued.json",
        {"schema": "hipdnn.ued/v1"},
        "D208",
        "unknown key 'schema' in \"{p}\"; extension keys must start with 'x-' or '_'",
    ),
    "unknown_behavior_note": (
        "a.ued.json",
        {"behavior_notes": ["fast"]},
        "D209",
        "'behavior_notes' in \"{p}\" holds unknown note 'fast' (known: runtime_compilation)",
    ),
    "default_value_contradicts_type": (
        "a.kmd.json",
        {
            "fields": [
                {"name": "block_size", "type": "int", "default_value": "64"},
                {"name": "dtype", "type": "string"},
            ]
        },
        "D209",
        "'default_value' in fields[0] in \"{p}\" is a string, but the field is declared int",
    ),
    "unparsable_id": (
        "a.udd.json",
        {"id": "a6-not-a-uuid"},
        "D209",
        '\'id\' in "{p}" must be a UUID (8-4-4-4-12 hex digits), got "a6-not-a-uuid"',
    ),
    "ued_missing_version": (
        "a.ued.json",
        {"version": None},
        "D204",
        "missing required key 'version' in .ued.json",
    ),
    "udd_missing_version": (
        "a.udd.json",
        {"version": None},
        "D204",
        "missing required key 'version' in .udd.json",
    ),
    "version_three_components": (
        "a.ued.json",
        {"version": "1.0.0"},
        "D205",
        "'version' in .ued.json must be a string \"<major>.<minor>\"",
    ),
    "version_not_numeric": (
        "a.ued.json",
        {"version": "1.x"},
        "D205",
        "'version' in .ued.json must be a string \"<major>.<minor>\"",
    ),
    "version_is_a_number": (
        "a.ued.json",
        {"version": 1.0},
        "D205",
        "'version' in .ued.json must be a string \"<major>.<minor>\"",
    ),
    "arch_is_not_an_array": (
        "a.kdp.json",
        {"arch": "gfx942"},
        "D209",
        '\'arch\' in "{p}" must be an array of gfx ids, got "gfx942"',
    ),
    "arch_holds_a_non_string": (
        "a.kdp.json",
        {"arch": [942]},
        "D209",
        "'arch' in \"{p}\" holds 942, which is not a string",
    ),
    "arch_holds_an_empty_string": (
        "a.kdp.json",
        {"arch": [""]},
        "D209",
        "'arch' in \"{p}\" holds an empty string",
    ),
    "arch_holds_a_malformed_id": (
        "a.kdp.json",
        {"arch": ["x86_64"]},
        "D209",
        "'arch' in \"{p}\" holds 'x86_64', which is not a gfx id (gfx "
        "followed by a-z, 0-9, '_' or '-')",
    ),
    "arch_holds_an_uppercase_id": (
        "a.kdp.json",
        {"arch": ["GFX942"]},
        "D209",
        "'arch' in \"{p}\" holds 'GFX942', which is not a gfx id (gfx "
        "followed by a-z, 0-9, '_' or '-') (did you mean gfx942?)",
    ),
    "arch_holds_a_padded_id": (
        "a.kdp.json",
        {"arch": [" gfx942"]},
        "D209",
        "'arch' in \"{p}\" holds ' gfx942', which is not a gfx id (gfx "
        "followed by a-z, 0-9, '_' or '-') (did you mean gfx942?)",
    ),
    "arch_holds_a_feature_suffix": (
        "a.kdp.json",
        {"arch": ["gfx942:xnack-"]},
        "D209",
        "'arch' in \"{p}\" holds 'gfx942:xnack-': feature suffixes "
        "are not matched; write the base target 'gfx942'",
    ),
    "arch_has_duplicate_entries": (
        "a.kdp.json",
        {"arch": ["gfx942", "gfx942"]},
        "D209",
        "'arch' in \"{p}\" repeats 'gfx942'",
    ),
    "name_is_not_scoped": (
        "a.ued.json",
        {"name": "EngineA"},
        "D209",
        "'name' in \"{p}\" must be scoped as <namespace>:<name> (letters, "
        "digits, '_', '.', '-'), got 'EngineA'",
    ),
    "numerical_note_repeated": (
        "a.ued.json",
        {"numerical_notes": ["x", "x"]},
        "D209",
        "'numerical_notes' in \"{p}\" repeats 'x'",
    ),
    "knob_repeated": (
        "a.ued.json",
        {"knobs": ["block_size", "block_size"]},
        "D209",
        "'knobs' in \"{p}\" repeats 'block_size'",
    ),
    "sdk_version_malformed": (
        "a.ued.json",
        {"sdk_version": "1.2"},
        "D209",
        '\'sdk_version\' in "{p}" must be "<major>.<minor>.<patch>", got "1.2"',
    ),
    "heuristic_kind_unknown": (
        "a.uhd.json",
        {"kind": "oracle"},
        "D209",
        "'kind' in \"{p}\" must be 'native' or 'model', got 'oracle'",
    ),
    "matcher_scope_unknown": (
        "a_graph.umd.json",
        {"scope": "node"},
        "D209",
        "'scope' in \"{p}\" must be 'graph' or 'kernel', got 'node'",
    ),
    "empty_name": (
        "a.uhd.json",
        {"name": ""},
        "D209",
        '\'name\' in "{p}" must be a non-empty string, got ""',
    ),
    "priority_is_a_float": ("a.kdp.json", None, "D209", None),
}


@pytest.mark.parametrize("case", VIOLATIONS, ids=list(VIOLATIONS))
def test_violation_drops_the_offender_and_keeps_its_sibling(tmp_path, case):
    name, changes, code, message = VIOLATIONS[case]
    if changes is None:  # an inline kernel with a float priority

        def change(a):
            a["a.kdp.json"]["kernelDescriptors"][0]["priority"] = 1.5
            return a

        message = "'priority' of kernel 'a.f32_64' in \"{p}\" must be an integer, got 1.5"
    else:

        def change(a):
            return edited(a, name, **changes)

    result = load(two_engines(tmp_path, change))
    path = tmp_path / name
    expected = message.format(p=path)
    if code != "D208":  # every other violation carries the D209-style prefix
        expected = f'"{path}" is not a valid descriptor: {expected}'
    assert found(result, code) == [expected]
    assert list(summary(result)) == ["test:EngineB"]


@pytest.mark.parametrize("version", ["1.1", "2.0", "0.9"])
def test_an_unsupported_version_warns_and_skips(tmp_path, version):
    result = load(two_engines(tmp_path, lambda a: edited(a, "a.ued.json", version=version)))
    assert found(result, "D206") == [
        f'"{tmp_path}/a.ued.json" declares .ued.json version {version}; this build reads 1.0 and '
        "earlier minors; skipping"
    ]
    assert problems(result, Level.ERROR) == ["D409"]  # its pack now names no engine
    assert list(summary(result)) == ["test:EngineB"]


def test_a_non_ued_newer_minor_is_skipped(tmp_path):
    result = load(two_engines(tmp_path, lambda a: edited(a, "a.kmd.json", version="1.1")))
    assert problems(result) == ["D206", "D405"]


def test_an_unsupported_version_is_skipped_before_its_unknown_keys_are_seen(tmp_path):
    result = load(
        two_engines(
            tmp_path,
            lambda a: edited(a, "a.ued.json", version="1.5", sort_kernel_catalog={"default": 1}),
        )
    )
    assert "D208" not in problems(result) and "D206" in problems(result)


def test_version_01_00_is_1_0(tmp_path):
    result = load(write_tree(tmp_path, edited(make_set_documents(), "a.ued.json", version="01.00")))
    assert summary(result) == CANONICAL


def test_kernel_source_kind_not_dispatchable(tmp_path):
    def change(a):
        a["a.kdp.json"]["kernelDescriptors"][0]["kernel_source"] = {
            "kind": "hsaco_file",
            "source_file": "k.hsaco",
        }
        return a

    result = load(two_engines(tmp_path, change))
    assert found(result, "D212") == [
        f"\"{tmp_path}/a.kdp.json\" is not a valid descriptor: kernel source kind 'hsaco_file' in "
        f"'kernel_source' of kernel 'a.f32_64' in \"{tmp_path}/a.kdp.json\" has no implementation "
        "yet; only 'embedded_source' and 'kpack' can be dispatched"
    ]


def test_an_unknown_kernel_source_kind(tmp_path):
    def change(a):
        a["a.kdp.json"]["kernelDescriptors"][0]["kernel_source"] = {"kind": "hip"}
        return a

    assert problems(load(two_engines(tmp_path, change))) == ["D211", "D408"]


def test_the_first_unknown_key_reported_is_alphabetically_first(tmp_path):
    result = load(two_engines(tmp_path, lambda a: edited(a, "a.udd.json", zeta=1, alpha=2)))
    (message,) = found(result, "D208")
    assert message.startswith("unknown key 'alpha'")


# --- extension keys ------------------------------------------------------------------------------


def test_loads_a_descriptor_carrying_tracking_fields(tmp_path):
    documents = edited(
        make_set_documents(),
        "a.ued.json",
        **{"x-origin": {"commit": "abc"}, "_comment": "hand written", "provenance": [1, 2]},
    )
    result = load(write_tree(tmp_path, documents))
    assert summary(result) == CANONICAL
    where = f'"{tmp_path}/a.ued.json"'
    assert found(result, "D207") == [
        f"extension key '_comment' in {where}; ignoring it",
        f"extension key 'provenance' in {where}; ignoring it",
        f"extension key 'x-origin' in {where}; ignoring it",
    ]


def test_extension_keys_at_nested_levels(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"][0]["x-note"] = 1
    documents["a.kdp.json"]["kernelDescriptors"][0]["kernel_source"]["_why"] = "test"
    result = load(write_tree(tmp_path, documents))
    assert summary(result) == CANONICAL and len(found(result, "D207")) == 2


# --- L1: inline kernels carry their own version ---------------------------------------------------


def _inline_version(tmp_path, *versions, **extra):
    documents = make_set_documents()
    for entry, version in zip(documents["a.kdp.json"]["kernelDescriptors"], versions, strict=False):
        if version is None:
            del entry["version"]
        else:
            entry["version"] = version
        entry.update(extra)
    return load(write_tree(tmp_path, documents))


def test_rejects_an_inline_kernel_with_no_version(tmp_path):
    result = _inline_version(tmp_path, None)
    path = f'"{tmp_path}/a.kdp.json"'
    assert found(result, "D213") == [
        f"{path} is not a valid descriptor: missing required key 'version' in a "
        f"'kernelDescriptors' entry in {path}"
    ]
    assert result.sets == []


def test_a_malformed_inline_version_fails_the_pack(tmp_path):
    result = _inline_version(tmp_path, "one")
    assert found(result, "D205") == [
        f"\"{tmp_path}/a.kdp.json\" is not a valid descriptor: 'version' in a "
        "'kernelDescriptors' entry must be a string \"<major>.<minor>\""
    ]


def test_skips_an_inline_kernel_declaring_a_newer_ukd_version(tmp_path):
    result = _inline_version(tmp_path, "1.1")
    assert summary(result) == {"test:EngineA": {"a:pack": ["a.f32_256", "a.f16_64"]}}
    assert found(result, "D214") == [
        f"\"{tmp_path}/a.kdp.json\" declares .ukd.json version 1.1 in a 'kernelDescriptors' entry; "
        "this build reads 1.0 and earlier minors; skipping the entry"
    ]


def test_skew_on_an_inline_kernel_supersedes_its_other_violations(tmp_path):
    result = _inline_version(tmp_path, "2.0", **{"arch": ["gfx1100"], "tuning": 1})
    assert problems(result) == ["D214"]


def test_drops_a_pack_whose_inline_kernels_all_declare_a_newer_ukd_version(tmp_path):
    result = _inline_version(tmp_path, "1.1", "1.1", "1.1")
    assert problems(result) == ["D214", "D214", "D214", "D424", "D408"]
    assert found(result, "D424") == [
        f"pack 'a:pack' id={uid('a', KDP)} declares no kernels; dropping the pack"
    ]


def test_a_kernel_descriptors_entry_must_be_an_object_or_uuid(tmp_path):
    documents = make_set_documents()
    documents["a.kdp.json"]["kernelDescriptors"].append(7)
    result = load(write_tree(tmp_path, documents))
    assert found(result, "D209") == [
        f"\"{tmp_path}/a.kdp.json\" is not a valid descriptor: 'kernelDescriptors'[3] in "
        f'"{tmp_path}/a.kdp.json" must be a JSON object'
    ]


# --- totality -------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
documents = st.dictionaries(
    st.sampled_from(
        [
            "version",
            "id",
            "name",
            "kind",
            "payload",
            "fields",
            "engine",
            "dispatch",
            "matchers",
            "kernelDescriptors",
            "arch",
            "kernel_source",
            "metadata",
            "priority",
            "heuristic",
            "knobs",
            "scope",
            "match_symbol",
            "dispatch_symbol",
            "graph_match",
            "sdk_version",
            "x-k",
        ]
    ),
    json_values | st.just("1.0") | st.just(uid("a", 1)),
    max_size=10,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(SUFFIXES)),
            st.binary(max_size=64) | documents.map(lambda d: json.dumps(d).encode()),
        ),
        max_size=8,
    )
)
def test_loading_never_raises(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("random")
    for i, (suffix, data) in enumerate(files):
        (root / f"f{i}{suffix}").write_bytes(data)
    result = load(root)
    assert result.diagnostics.items[-1].code == "D509"
