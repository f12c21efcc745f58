"""Parsing one descriptor file (spec descriptors.md sections 2-6). One module, past 600
lines, because :class:`_FileParser` reads the seven descriptor types with one set of
field readers, in the spec's order, one method per section.

In order: open, parse JSONC, check the root is an object, gate the version
(before any shape check, so a newer file only warns), check keys against the
type's allow-list (extension keys warn), then read the fields in the spec's
order; the first violation fails the file with one ERROR. The result is a
:class:`Descriptor` or None, never an exception.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, overload

from gfxpack import amdgpu
from gfxpack.descriptors.diagnostics import Diagnostics
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.types import (
    MISSING,
    SUPPORTED,
    Descriptor,
    Dispatch,
    Engine,
    Field,
    Heuristic,
    KernelDescriptor,
    KernelSource,
    Matcher,
    MetadataSchema,
    Pack,
    SignatureArg,
    arch_covers,
    arch_text,
)
from gfxpack.regular_files import read_regular

_UUID = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
_VERSION = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})$")
_SCOPED = re.compile(r"^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$")
_ARCH = re.compile(r"^gfx[a-z0-9_-]+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# C scanf("%d.%d.%d"): leading whitespace and a sign before each number, trailing text ignored.
_SDK_VERSION = re.compile(r"^\s*([+-]?\d+)\.\s*([+-]?\d+)\.\s*([+-]?\d+)")
INT64 = (-(2**63), 2**63 - 1)
FIELD_TYPES = ("bool", "int", "float", "string", "int_list")
BEHAVIOR_NOTES = ("runtime_compilation",)
NOT_IMPLEMENTED_KINDS = ("hsaco_file", "rocke_builder", "hiprtc_file")
UNKNOWN_ARCH = "D217"  # WARN: an arch entry that is no AMDGPU processor or generic target

ALLOWED = {
    ".kmd.json": {"version", "id", "name", "fields"},
    ".uhd.json": {"version", "id", "name", "kind", "payload"},
    ".ued.json": {
        "version",
        "id",
        "name",
        "metadata",
        "heuristic",
        "sdk_version",
        "knobs",
        "behavior_notes",
        "numerical_notes",
        "graph_match",
    },
    ".umd.json": {"version", "id", "name", "scope", "match_symbol"},
    ".udd.json": {"version", "id", "name", "dispatch_symbol"},
    ".kdp.json": {
        "version",
        "id",
        "name",
        "engine",
        "dispatch",
        "matchers",
        "kernelDescriptors",
        "arch",
    },
    ".ukd.json": {"version", "id", "name", "kernel_source", "metadata", "priority", "arch"},
}
KERNEL_KEYS = ALLOWED[".ukd.json"]
FIELD_KEYS = {"name", "type", "default_value"}
SOURCE_KEYS = {
    "kind",
    "source_file",
    "entry_point",
    "library",
    "toc_key",
    "symbol",
    "sha256",
    "signature",
    "bundle",
    "defines",
}
SIGNATURE_KEYS = {"kind", "size", "offset", "name"}
GRAPH_MATCH_KEYS = {"native"}


_ABSENT = object()


def _first_repeat(values: list[str]) -> str:
    """The first element that appeared earlier in the list (one pass, a set)."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    raise ValueError("no repeated element")


# A message fragment, or a function making it: labels are only built when they are shown.
Label = str | Callable[[], str]


def _text(label: Label) -> str:
    return label() if callable(label) else label


class Invalid(Exception):
    """Fails the file being parsed: one ERROR with this code and message."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message


class Skip(Exception):
    """The file (or entry) is skipped with a warning already reported."""


@dataclass(frozen=True)
class Rejected:
    """A descriptor file that was not loaded, kept by what it claimed to define, so that a
    reference to it says the file was rejected, not "which no descriptor defines"."""

    path: str
    code: str  # the diagnostic that rejected it (an ERROR) or skipped it (D206)

    @property
    def outcome(self) -> str:
        """``rejected (D208)``, or ``skipped (D206)`` for a version this loader does not read."""
        return f"{'skipped' if self.code == SKIPPED_VERSION else 'rejected'} ({self.code})"

    def reason(self) -> str:
        """Why a reference to what the file defines finds nothing."""
        return f'which no loaded descriptor defines: "{self.path}" does, but it was {self.outcome}'


SKIPPED_VERSION = "D206"  # WARN: a version this loader does not read; the file is skipped
# The key under which a rejected pack is kept by the engine it names (beside its own id).
PACK_ENGINE = "engine of a .kdp.json"
# (suffix, id) -> the first rejected file claiming that id; (PACK_ENGINE, engine id) -> the
# first rejected pack naming that engine.
Rejections = dict[tuple[str, str], Rejected]


def is_extension_key(key: str) -> bool:
    return key.startswith(("x-", "_")) or key == "provenance"


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """``; did you mean 'matchers'?`` for a misspelt key, or nothing."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return f"; did you mean '{close[0]}'?" if close else ""


def describe(value: Any) -> str:
    """A value as JSON, shortened for messages."""
    text = json.dumps(value)
    return text if len(text) <= 72 else text[:69] + "..."


class _FileParser:
    def __init__(
        self,
        path: str,
        root: str,
        suffix: str,
        diags: Diagnostics,
        rejected: Rejections | None = None,
    ):
        self.path = path
        self.quoted = f'"{path}"'
        self.root = root
        self.suffix = suffix
        self.diags = diags
        self.rejected = rejected
        self._origin: str | None = None

    @property
    def origin(self) -> str:
        """The directory of this file: where its kernels come from (L4)."""
        if self._origin is None:
            self._origin = os.path.dirname(self.path)
        return self._origin

    def invalid(self, message: str, code: str = "D209") -> Invalid:
        return Invalid(code, f"{self.quoted} is not a valid descriptor: {message}")

    # -- the steps -------------------------------------------------------------

    def run(self) -> Descriptor | None:
        try:
            data = read_bytes(self.path)
        except OSError as e:
            self.diags.error("D201", self.path, f"failed to open {self.quoted}: {e.strerror or e}")
            return None
        try:
            document = loads(data)
        except JsoncError as e:
            self.diags.error("D202", self.path, f"failed to parse {self.quoted}: {e}")
            return None
        try:
            if not isinstance(document, dict):
                raise self.invalid("the document root must be a JSON object", "D203")
            self.gate_version(document)
            self.check_keys(document, ALLOWED[self.suffix], self.quoted)
            return self.build(document)
        except Invalid as e:
            self.diags.error(e.code, self.path, e.message)
            self.note_rejected(document, e.code)
        except Skip:
            self.note_rejected(document, SKIPPED_VERSION)
        return None

    def note_rejected(self, document: Any, code: str) -> None:
        """Remember what a file that was not loaded claimed to define (its id; a pack's
        engine), when it claimed it with a well-formed UUID."""
        if self.rejected is None or not isinstance(document, dict):
            return
        rejected = Rejected(self.path, code)
        claims = [(self.suffix, document.get("id"))]
        if self.suffix == ".kdp.json":
            claims.append((PACK_ENGINE, document.get("engine")))
        for kind, value in claims:
            if type(value) is str and _UUID.match(value):
                self.rejected.setdefault((kind, value.lower()), rejected)

    def gate_version(self, document: dict[str, Any], entry: str | None = None) -> None:
        """Missing or malformed is an ERROR; well formed but unsupported skips with a WARN."""
        label = self.suffix if entry is None else "a 'kernelDescriptors' entry"
        if "version" not in document:
            if entry is not None:
                raise self.invalid(
                    f"missing required key 'version' in a 'kernelDescriptors' entry in "
                    f"{self.quoted}",
                    "D213",
                )
            raise self.invalid(f"missing required key 'version' in {label}", "D204")
        version = document["version"]
        match = _VERSION.match(version) if isinstance(version, str) else None
        if match is None:
            raise self.invalid(f"'version' in {label} must be a string \"<major>.<minor>\"", "D205")
        major, minor = int(match[1]), int(match[2])
        wanted = SUPPORTED[".ukd.json" if entry is not None else self.suffix]
        if major != wanted[0] or minor > wanted[1]:
            if entry is not None:
                self.diags.warn(
                    "D214",
                    self.path,
                    f"{self.quoted} declares .ukd.json version {version} in a "
                    "'kernelDescriptors' entry; this build reads 1.0 and earlier minors; "
                    "skipping the entry",
                )
            else:
                self.diags.warn(
                    "D206",
                    self.path,
                    f"{self.quoted} declares {self.suffix} version {version}; this build reads "
                    "1.0 and earlier minors; skipping",
                )
            raise Skip

    def check_keys(self, obj: dict[str, Any], allowed: set[str], where: str) -> None:
        if allowed.issuperset(obj):
            return  # the common case, decided in C
        for key in sorted(obj):
            if key in allowed:
                continue
            if is_extension_key(key):
                self.diags.warn("D207", self.path, f"extension key '{key}' in {where}; ignoring it")
                continue
            raise Invalid(
                "D208",
                f"unknown key '{key}' in {where}; extension keys must start with 'x-' or '_'"
                f"{did_you_mean(key, allowed)}",
            )

    # -- values ----------------------------------------------------------------------

    def require(self, obj: dict[str, Any], key: str, where: str) -> Any:
        if key not in obj:
            raise self.invalid(f"missing required key '{key}' in {where}")
        return obj[key]

    # string() and uuid() run for nearly every key of every file: the valid case is
    # decided first, with the fewest calls; messages are built only on failure.

    @overload
    def string(
        self, obj: dict[str, Any], key: str, where: str, required: Literal[True] = True
    ) -> str: ...
    @overload
    def string(
        self, obj: dict[str, Any], key: str, where: str, required: Literal[False]
    ) -> str | None: ...
    def string(
        self, obj: dict[str, Any], key: str, where: str, required: bool = True
    ) -> str | None:
        value = obj.get(key, _ABSENT)
        if type(value) is str and value:
            return value
        if value is _ABSENT:
            if not required:
                return None
            raise self.invalid(f"missing required key '{key}' in {where}")
        raise self.invalid(f"'{key}' in {where} must be a non-empty string, got {describe(value)}")

    @overload
    def uuid(
        self, obj: dict[str, Any], key: str, where: str, required: Literal[True] = True
    ) -> str: ...
    @overload
    def uuid(
        self, obj: dict[str, Any], key: str, where: str, required: Literal[False]
    ) -> str | None: ...
    def uuid(self, obj: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
        value = obj.get(key, _ABSENT)
        if value is _ABSENT:
            if not required:
                return None
            raise self.invalid(f"missing required key '{key}' in {where}")
        return self.uuid_value(value, lambda: f"'{key}' in {where}")

    def uuid_value(self, value: Any, label: Label) -> str:
        if type(value) is not str or not _UUID.match(value):
            raise self.invalid(
                f"{_text(label)} must be a UUID (8-4-4-4-12 hex digits), got {describe(value)}"
            )
        return value.lower()

    def string_list(self, obj: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.invalid(f"'{key}' in {where} must be an array of strings")
        if len(set(value)) != len(value):
            raise self.invalid(f"'{key}' in {where} repeats '{_first_repeat(value)}'")
        return tuple(value)

    def arch(self, obj: dict[str, Any], where: str) -> tuple[str, ...]:
        value = obj.get("arch", [])
        if not isinstance(value, list):
            raise self.invalid(
                f"'arch' in {where} must be an array of gfx ids, got {describe(value)}"
            )
        for item in value:
            if not isinstance(item, str):
                raise self.invalid(
                    f"'arch' in {where} holds {describe(item)}, which is not a string"
                )
            if not item:
                raise self.invalid(f"'arch' in {where} holds an empty string")
            if ":" in item and _ARCH.match(item.split(":", 1)[0]):
                raise self.invalid(
                    f"'arch' in {where} holds '{item}': feature suffixes are not matched; "
                    f"write the base target '{item.split(':', 1)[0]}'"
                )
            if not _ARCH.match(item):
                close = amdgpu.closest(item)
                hint = f" (did you mean {close}?)" if close else ""
                raise self.invalid(
                    f"'arch' in {where} holds '{item}', which is not a gfx id "
                    f"(gfx followed by a-z, 0-9, '_' or '-'){hint}"
                )
            if item not in amdgpu.PROCESSORS and item not in amdgpu.GENERIC_PROCESSORS:
                # The provider loads it (an arch is any gfx id to it), but no device is
                # ever that arch: what it names is dead, so say so (lint fails on it).
                self.diags.warn(
                    UNKNOWN_ARCH,
                    self.path,
                    f"'arch' in {where}: {amdgpu.processor_problem(item, generic=True)}; "
                    "no device loads it",
                )
        if len(set(value)) != len(value):
            raise self.invalid(f"'arch' in {where} repeats '{_first_repeat(value)}'")
        return tuple(value)

    def integer(self, value: Any, label: Label) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.invalid(f"{_text(label)} must be an integer, got {describe(value)}")
        if not INT64[0] <= value <= INT64[1]:
            raise self.invalid(f"{_text(label)} {value} is too large")
        return value

    def metadata_value(self, value: Any, label: Label) -> tuple[str, Any]:
        """(type, value) of a metadata or default value, by JSON kind."""
        if isinstance(value, bool):
            return "bool", value
        if isinstance(value, int):
            return "int", self.integer(value, label)
        if isinstance(value, float):
            return "float", value
        if isinstance(value, str):
            return "string", value
        if isinstance(value, list):
            return "int_list", [
                self.integer(v, lambda: f"an element of {_text(label)}") for v in value
            ]
        raise self.invalid(f"{_text(label)} has a value of unsupported kind: {describe(value)}")

    # -- the seven types -----------------------------------------------------------------

    def build(self, doc: dict[str, Any]) -> Descriptor:
        where = self.quoted
        ident = self.uuid(doc, "id", where)
        name = self.string(doc, "name", where)
        arch: tuple[str, ...] = ()
        builder = {
            ".kmd.json": self.kmd,
            ".uhd.json": self.uhd,
            ".ued.json": self.ued,
            ".umd.json": self.umd,
            ".udd.json": self.udd,
        }.get(self.suffix)
        if builder is not None:
            body = builder(doc, name)
        elif self.suffix == ".kdp.json":
            body, arch = self.kdp(doc, name)
        else:
            body = self.kernel_body(doc, ident, name)
            arch = body.arch
        return Descriptor(self.suffix, ident, name, self.path, self.root, body, arch)

    def kmd(self, doc: dict[str, Any], name: str) -> MetadataSchema:
        entries = self.require(doc, "fields", self.quoted)
        if not isinstance(entries, list):
            raise self.invalid(f"'fields' in {self.quoted} must be an array")
        fields: list[Field] = []
        names: set[str] = set()  # a set: a schema of 10^5 fields is checked in linear time
        for i, entry in enumerate(entries):
            where = f"fields[{i}] in {self.quoted}"
            if not isinstance(entry, dict):
                raise self.invalid(f"{where} must be a JSON object")
            self.check_keys(entry, FIELD_KEYS, where)
            field_name = self.string(entry, "name", where)
            kind = self.string(entry, "type", where)
            if kind not in FIELD_TYPES:
                raise self.invalid(
                    f"'type' in {where} must be one of {', '.join(FIELD_TYPES)}, got '{kind}'"
                )
            default = MISSING
            if "default_value" in entry:
                got, default = self.metadata_value(
                    entry["default_value"], f"'default_value' in {where}"
                )
                if got != kind and not (got == "int" and kind == "float"):
                    raise self.invalid(
                        f"'default_value' in {where} is a {got}, but the field is declared {kind}"
                    )
                if kind == "float":
                    default = float(default)
            if field_name in names:
                raise self.invalid(f"{where} repeats field '{field_name}'")
            names.add(field_name)
            fields.append(Field(field_name, kind, default))
        return MetadataSchema(tuple(fields))

    def uhd(self, doc: dict[str, Any], name: str) -> Heuristic:
        kind = self.string(doc, "kind", self.quoted)
        if kind not in ("native", "model"):
            raise self.invalid(f"'kind' in {self.quoted} must be 'native' or 'model', got '{kind}'")
        return Heuristic(kind, self.string(doc, "payload", self.quoted))

    def ued(self, doc: dict[str, Any], name: str) -> Engine:
        where = self.quoted
        if not _SCOPED.match(name):
            raise self.invalid(
                f"'name' in {where} must be scoped as <namespace>:<name> "
                f"(letters, digits, '_', '.', '-'), got '{name}'"
            )
        heuristic = self.uuid(doc, "heuristic", where, required=False)
        metadata = self.uuid(doc, "metadata", where)
        knobs = self.string_list(doc, "knobs", where)
        notes = self.string_list(doc, "behavior_notes", where)
        for note in notes:
            if note not in BEHAVIOR_NOTES:
                raise self.invalid(
                    f"'behavior_notes' in {where} holds unknown note '{note}' "
                    f"(known: {', '.join(BEHAVIOR_NOTES)})"
                )
        numerical = self.string_list(doc, "numerical_notes", where)
        sdk_version = (1, 0, 0)
        if "sdk_version" in doc:
            value = doc["sdk_version"]
            match = _SDK_VERSION.match(value) if isinstance(value, str) else None
            if match is None:
                raise self.invalid(
                    f"'sdk_version' in {where} must be \"<major>.<minor>.<patch>\", "
                    f"got {describe(value)}"
                )
            major, minor, patch = (int(part) for part in match.groups())
            sdk_version = (major, minor, patch)
        graph_match = None
        if "graph_match" in doc:
            block = doc["graph_match"]
            label = f"'graph_match' in {where}"
            if not isinstance(block, dict):
                raise self.invalid(f"{label} must be a JSON object")
            self.check_keys(block, GRAPH_MATCH_KEYS, label)
            graph_match = self.string(block, "native", label)
        return Engine(metadata, heuristic, knobs, notes, numerical, sdk_version, graph_match)

    def umd(self, doc: dict[str, Any], name: str) -> Matcher:
        scope = self.string(doc, "scope", self.quoted)
        if scope not in ("graph", "kernel"):
            raise self.invalid(
                f"'scope' in {self.quoted} must be 'graph' or 'kernel', got '{scope}'"
            )
        return Matcher(scope, self.string(doc, "match_symbol", self.quoted))

    def udd(self, doc: dict[str, Any], name: str) -> Dispatch:
        return Dispatch(self.string(doc, "dispatch_symbol", self.quoted))

    def kdp(self, doc: dict[str, Any], name: str) -> tuple[Pack, tuple[str, ...]]:
        where = self.quoted
        engine = self.uuid(doc, "engine", where)
        dispatch = self.uuid(doc, "dispatch", where)
        arch = self.arch(doc, where)
        matchers = self.require(doc, "matchers", where)
        if not isinstance(matchers, list):
            raise self.invalid(f"'matchers' in {where} must be an array of UUID strings")
        matcher_ids = tuple(
            self.uuid_value(m, f"'matchers'[{i}] in {where}") for i, m in enumerate(matchers)
        )
        entries = self.require(doc, "kernelDescriptors", where)
        if not isinstance(entries, list):
            raise self.invalid(f"'kernelDescriptors' in {where} must be an array")
        kernels: list[KernelDescriptor] = []
        references: list[str] = []
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                references.append(self.uuid_value(entry, f"'kernelDescriptors'[{i}] in {where}"))
                continue
            if not isinstance(entry, dict):
                raise self.invalid(f"'kernelDescriptors'[{i}] in {where} must be a JSON object")
            try:
                self.gate_version(entry, entry="inline")
            except Skip:
                continue  # a newer inline kernel: only this entry is skipped
            self.check_keys(entry, KERNEL_KEYS, f"a 'kernelDescriptors' entry in {where}")
            label = f"a 'kernelDescriptors' entry in {where}"
            ident = self.uuid(entry, "id", label)
            kernel_name = self.string(entry, "name", label)
            kernel = self.kernel_body(entry, ident, kernel_name)
            if not arch_covers(arch, kernel.arch):
                raise self.invalid(
                    f"kernel '{kernel.name}' in {where} declares arch {arch_text(kernel.arch)}, "
                    f"which reaches past the pack's {arch_text(arch)}",
                    "D210",
                )
            kernels.append(kernel)
        return Pack(engine, dispatch, matcher_ids, tuple(kernels), tuple(references)), arch

    def kernel_body(self, doc: dict[str, Any], ident: str, name: str) -> KernelDescriptor:
        where = f"kernel '{name}' in {self.quoted}"
        if "kernel_source" not in doc:
            raise self.invalid(f"missing required key 'kernel_source' in {where}")
        source = self.kernel_source(doc["kernel_source"], name)
        raw = doc.get("metadata", {})
        if not isinstance(raw, dict):
            raise self.invalid(f"'metadata' of {where} must be a JSON object")
        if all(
            isinstance(v, str) or (type(v) is int and INT64[0] <= v <= INT64[1])
            for v in raw.values()
        ):
            metadata = raw  # the common case: nothing to convert, keep the parsed dict
        else:
            metadata = {}
            for key in sorted(raw):  # sorted: the first bad value reported is deterministic
                metadata[key] = self.metadata_value(
                    raw[key], functools.partial("metadata '{}' of {}".format, key, where)
                )[1]
        priority = doc.get("priority", 0)
        if type(priority) is not int or not INT64[0] <= priority <= INT64[1]:
            self.integer(priority, f"'priority' of {where}")
        arch = self.arch(doc, where) if "arch" in doc else ()
        if source.kind == "kpack":
            self.check_library(source.archive[0], self.origin, name)
        return KernelDescriptor(
            ident, name, source, metadata, priority, arch, self.origin, self.root, self.path
        )

    def kernel_source(self, value: Any, kernel: str) -> KernelSource:
        where = f"'kernel_source' of kernel '{kernel}' in {self.quoted}"
        if not isinstance(value, dict):
            raise self.invalid(f"{where} must be a JSON object")
        self.check_keys(value, SOURCE_KEYS, where)
        kind = self.string(value, "kind", where)
        if kind == "embedded_source":
            return KernelSource(
                kind,
                source_file=self.string(value, "source_file", where),
                entry_point=self.string(value, "entry_point", where),
            )
        if kind == "kpack":
            return self.kpack_source(value, kernel, where)
        if kind in NOT_IMPLEMENTED_KINDS:
            raise self.invalid(
                f"kernel source kind '{kind}' in {where} has no implementation yet; "
                "only 'embedded_source' and 'kpack' can be dispatched",
                "D212",
            )
        raise self.invalid(f"unknown kernel source kind '{kind}' in {where}", "D211")

    def kpack_source(self, value: dict[str, Any], kernel: str, where: str) -> KernelSource:
        def malformed(key: str, why: str) -> Invalid:
            return self.invalid(f"kernel '{kernel}' has a malformed kpack '{key}': {why}", "D215")

        strings = {}
        for key in ("library", "toc_key", "symbol"):
            item = value.get(key)
            if not isinstance(item, str) or not item:
                raise malformed(key, "expected a non-empty string" if key in value else "missing")
            strings[key] = item
        sha = value.get("sha256")
        if not isinstance(sha, str) or not _SHA256.match(sha):
            why = (
                "missing"
                if "sha256" not in value
                else f"expected 64 lowercase hex digits, got {json.dumps(sha)}"
            )
            raise malformed("sha256", why)
        if "signature" not in value:
            raise malformed("signature", "missing")
        signature = value["signature"]
        if not isinstance(signature, list):
            raise malformed("signature", f"expected an array, got {describe(signature)}")
        args = []
        for i, entry in enumerate(signature):
            label = f"signature[{i}] of kernel '{kernel}' in {self.quoted}"
            if not isinstance(entry, dict):
                raise malformed("signature", f"entry {i} is not an object")
            self.check_keys(entry, SIGNATURE_KEYS, label)
            kind = entry.get("kind")
            if not isinstance(kind, str) or not kind:
                raise malformed("signature", f"entry {i} needs a non-empty 'kind'")
            numbers = []
            for key in ("size", "offset"):
                number = entry.get(key)
                if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                    raise malformed(
                        "signature",
                        f"entry {i} needs a non-negative integer '{key}', got {describe(number)}",
                    )
                numbers.append(number)
            arg_name = entry.get("name")
            if "name" in entry and (not isinstance(arg_name, str) or not arg_name):
                raise malformed("signature", f"entry {i} has an empty or non-string 'name'")
            args.append(SignatureArg(kind, numbers[0], numbers[1], arg_name))
        return KernelSource(
            "kpack",
            library=strings["library"],
            toc_key=strings["toc_key"],
            symbol=strings["symbol"],
            sha256=sha,
            signature=tuple(args),
        )

    def check_library(self, library: str, origin: str, kernel: str) -> None:
        """A kpack library resolves against the defining file's directory, lexically, and
        must stay inside the tree it was found under (L4)."""
        resolved = os.path.abspath(os.path.join(origin, library))  # lexical: no symlinks
        root = os.path.abspath(self.root)
        if os.path.commonpath([resolved, root]) != root:
            raise self.invalid(
                f"kernel '{kernel}' names library \"{library}\", which resolves "
                f'outside the descriptor tree "{self.root}"',
                "D216",
            )


def read_bytes(path: str) -> bytes:
    """A descriptor file's bytes. The walk only yields regular files; the open is
    non-blocking and re-checked, so a file swapped for a FIFO cannot hang the loader."""
    return read_regular(path, checked=True)


def parse_file(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    suffix: str,
    diags: Diagnostics,
    rejected: Rejections | None = None,
) -> Descriptor | None:
    """Parse one descriptor file; problems become diagnostics, never exceptions. A file
    that is not loaded is noted in ``rejected`` by what it claimed to define."""
    return _FileParser(os.fspath(path), os.fspath(root), suffix, diags, rejected).run()


def resolved_library(kernel: KernelDescriptor) -> str:
    """The archive a kpack kernel names: its library joined to its origin, lexically."""
    library, _ = kernel.source.archive
    return os.path.normpath(os.path.join(kernel.origin_directory, library))
