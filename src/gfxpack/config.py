"""package.json: TheRock's package list, loaded into validated PackageSpec values.

The file is a flat JSON array with one object per base package (spec
packaging.md section 2). Upstream's quirks are kept where packagers rely on
them: booleans are strings ("True"/"False" and the synonyms upstream accepts),
and flag keys match case-insensitively (upstream reads ``Disablepackaging``).
gfxpack also accepts JSON ``true``/``false`` and reports every bad value with a
JSON pointer instead of crashing on it. Every text (names, relations, descriptions,
architectures) is checked here, once, against the kind of text it is
(:mod:`gfxpack.text_fields`): nothing later meets a NUL or a line break it must not
carry.

Every problem in a file is gathered and reported at once; unknown keys are
warnings, returned with the config for the caller to print.

One module, past 500 lines, because it is the one reader of one file format: the
values, the validator and its messages change together, key by key.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack import text_fields
from gfxpack.errors import GfxpackError
from gfxpack.formats.package_format import FORMATS, PackageFormat
from gfxpack.formats.triggers import deb_trigger_problem, rpm_trigger_problem
from gfxpack.regular_files import UnreadableFile, read_small_text
from gfxpack.relations import InvalidRelation, Relation
from gfxpack.text_fields import (
    ARTIFACT_NAME,
    DEB_ARCHITECTURE,
    LINE,
    MAINTAINER,
    PACKAGE_NAME,
    RPM_ARCHITECTURE,
    SUBDIR_NAME,
    TEXT,
    TextKind,
)

COMPONENTS = ("lib", "run", "dev", "doc", "test", "dbg")

# Upstream's truthy strings (is_key_defined); anything else is false there.
# gfxpack names the false spellings too, so a typo is an error, not a silent False.
TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y", "on", "enable", "enabled", "found"})
FALSE_WORDS = frozenset(
    {"", "0", "false", "f", "no", "n", "off", "disable", "disabled", "notfound", "none", "ignore"}
)

# TheRock's own file is about 115 KB; a file this size is no package list.
MAX_SIZE = 16 << 20


class InvalidConfig(GfxpackError, ValueError):
    """package.json problems, each with the file, a JSON pointer and what was expected."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = problems
        shown = text_fields.escaped(path)  # a file name may hold a newline too
        # A problem of the file itself (missing, unreadable) has no pointer: where is "".
        super().__init__(
            "\n".join(
                f"{shown}: {where}: {what}" if where else f"{shown}: {what}"
                for where, what in problems
            )
        )


@dataclass(frozen=True, slots=True)
class ArtifactSubdir:
    """A subproject of an artifact (``rocBLAS``) and the components it ships."""

    name: str
    components: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ArtifactSource:
    """One ``Artifactory`` entry: where a base package's content comes from."""

    artifact: str
    subdirs: tuple[ArtifactSubdir, ...]
    # False: always read from the generic directory, never routed to devices.
    gfxarch: bool = True


@dataclass(frozen=True, slots=True)
class Relations:
    """One format's relation lists, as package.json declares them."""

    depends: tuple[Relation, ...] = ()
    recommends: tuple[Relation, ...] = ()
    suggests: tuple[Relation, ...] = ()
    provides: tuple[Relation, ...] = ()
    conflicts: tuple[Relation, ...] = ()
    # DEB Replaces; RPM Obsoletes.
    replaces: tuple[Relation, ...] = ()

    def dependency_lists(self) -> Iterator[tuple[str, tuple[Relation, ...]]]:
        """The lists resolved per variant (Provides/Conflicts/Replaces are not)."""
        yield "depends", self.depends
        yield "recommends", self.recommends
        yield "suggests", self.suggests


@dataclass(frozen=True, slots=True)
class PackageSpec:
    """One base package from package.json."""

    name: str
    index: int = 0
    deb: Relations = field(default_factory=Relations)
    rpm: Relations = field(default_factory=Relations)
    gfxarch: bool = False
    metapackage: bool = False
    disabled: bool = False
    postinstall: bool = False
    artifactory: tuple[ArtifactSource, ...] = ()
    architecture: str = "amd64"
    build_arch: str = "x86_64"
    maintainer: str = ""
    description_short: str = ""
    description_long: str = ""
    section: str = ""
    priority: str = ""
    group: str = ""
    license: str = ""
    vendor: str = ""
    homepage: str = ""
    comments: str = ""
    # Ship setuid, setgid, sticky and world-writable entries (refused otherwise).
    allow_special_modes: bool = False
    # No debug-symbol package (-dbgsym / -debuginfo) from the dbg component.
    disable_debug_package: bool = False
    # File triggers re-running the alternatives registration (gfxpack.formats.triggers):
    # DEB triggers-member lines, RPM %transfiletriggerin paths; {prefix} unexpanded.
    deb_triggers: tuple[str, ...] = ()
    rpm_triggers: tuple[str, ...] = ()

    @property
    def registers_alternatives(self) -> bool:
        """Whether the base's packages register the release with update-alternatives:
        ``Postinstall``, or a file trigger, which exists to register again."""
        return self.postinstall or bool(self.deb_triggers or self.rpm_triggers)

    @property
    def is_devel(self) -> bool:
        return self.name.endswith("-devel")

    @property
    def pointer(self) -> str:
        return f"/{self.index}"

    def relations(self, fmt: PackageFormat) -> Relations:
        """The relation lists of ``fmt``: the attribute named after the format."""
        found: Relations = getattr(self, fmt.name)
        return found

    def triggers(self, fmt: PackageFormat) -> tuple[str, ...]:
        """The file triggers of ``fmt``: the attribute named after the format."""
        found: tuple[str, ...] = getattr(self, f"{fmt.name}_triggers")
        return found


@dataclass(frozen=True, slots=True)
class Config:
    path: str
    packages: tuple[PackageSpec, ...]
    warnings: tuple[str, ...] = ()

    def get(self, name: str) -> PackageSpec | None:
        return next((spec for spec in self.packages if spec.name == name), None)


# --- the schema -------------------------------------------------------------

# Every text of an entry, checked once here against the kind of text it is (what the
# writers can carry; gfxpack.text_fields), so nothing later sees a NUL, a line break
# in a one-line field or a '/' in an architecture. A key: the PackageSpec attribute it
# fills (None: checked, not kept) and its kind.
_STRING_FIELDS: dict[str, tuple[str | None, TextKind]] = {
    "Version": (None, LINE),  # always "" upstream; the version is a CLI argument
    "Architecture": ("architecture", DEB_ARCHITECTURE),
    "BuildArch": ("build_arch", RPM_ARCHITECTURE),
    "Maintainer": ("maintainer", MAINTAINER),
    "Description_Short": ("description_short", LINE),
    "Description_Long": ("description_long", TEXT),
    "Section": ("section", LINE),
    "Priority": ("priority", LINE),
    "Group": ("group", LINE),
    "License": ("license", LINE),
    "Vendor": ("vendor", LINE),
    "Homepage": ("homepage", LINE),
    "Comments": ("comments", TEXT),
}
# The texts inside an entry: its name, each string of a list (relations, components)
# and the names in Artifactory.
_PACKAGE_TEXT = PACKAGE_NAME
_LIST_ITEM_TEXT = LINE
_ARTIFACT_TEXT = ARTIFACT_NAME
_SUBDIR_TEXT = SUBDIR_NAME
# key -> ((format, relation list), ...); Provides and Conflicts serve both formats and
# are parsed once, in the syntax of the first format reading them.
_RELATION_KEYS: dict[str, list[tuple[PackageFormat, str]]] = {}
for _fmt in FORMATS:
    for _key, _list_name in _fmt.relation_keys.items():
        _RELATION_KEYS.setdefault(_key, []).append((_fmt, _list_name))
# The flags as package.json spells them -> the attribute each sets. They are matched
# case-insensitively, as upstream's is_key_defined does.
FLAG_KEYS = {
    "Gfxarch": "gfxarch",
    "Metapackage": "metapackage",
    "DisablePackaging": "disabled",
    "Postinstall": "postinstall",
    "Disable_DWZ": "disable_dwz",
    "Disable_DEB_STRIP": "disable_deb_strip",
    "Disable_RPM_STRIP": "disable_rpm_strip",
    "Disable_Debug_Package": "disable_debug_package",
    "Allow_Special_Modes": "allow_special_modes",
}
_FLAGS = {key.lower(): attribute for key, attribute in FLAG_KEYS.items()}
# Upstream's strip / dwz switches: gfxpack never strips or runs dwz on a payload, so
# each already holds. Validated, not stored. (Disable_Debug_Package is stored: it turns
# off the debug-symbol package the dbg component makes, plan/debug.py.)
_ALWAYS_HOLDING_FLAGS = frozenset({"disable_dwz", "disable_deb_strip", "disable_rpm_strip"})
# Keys upstream documents but its code ignores.
_DOCUMENTED_BUT_IGNORED = {
    "Composite": "upstream documents it but never reads it",
    "Includes": "upstream documents it but never reads it",
    "Disable_DH_STRIP": "upstream documents it but reads Disable_DEB_STRIP",
}
# File-trigger keys -> (the PackageSpec attribute, what is wrong with one item).
_TRIGGER_KEYS: dict[str, tuple[str, Callable[[str], str | None]]] = {
    "DEBTriggers": ("deb_triggers", deb_trigger_problem),
    "RPMTransFileTriggerIn": ("rpm_triggers", rpm_trigger_problem),
}
# The legacy top-level shape, left only in a disabled upstream entry.
_LEGACY_KEYS = ("Components", "Artifact")
_KNOWN_KEYS = (
    {"Package", "Artifactory"}
    | set(_STRING_FIELDS)
    | set(_RELATION_KEYS)
    | set(_TRIGGER_KEYS)
    | set(_LEGACY_KEYS)
)
_KNOWN_BY_LOWER = {key.lower(): key for key in _KNOWN_KEYS}
# The keys of an Artifactory entry and of one of its Artifact_Subdir entries.
ARTIFACT_KEYS = ("Artifact", "Artifact_Gfxarch", "Artifact_Subdir")
SUBDIR_KEYS = ("Name", "Components")


def known_keys() -> dict[str, tuple[str, ...]]:
    """Every key gfxpack knows, by where it goes: ``package`` (a package object, flags
    in their usual spelling; the keys it warns are ignored too), ``artifact`` (an
    Artifactory entry) and ``subdir`` (an Artifact_Subdir entry). The reference,
    docs/reference/package-json.md, documents exactly these (a test holds them equal)."""
    package = {*_KNOWN_KEYS, *FLAG_KEYS, *_DOCUMENTED_BUT_IGNORED}
    return {
        "package": tuple(sorted(package)),
        "artifact": ARTIFACT_KEYS,
        "subdir": SUBDIR_KEYS,
    }


def _suggestion(key: str, keys: Iterable[str] = (*_KNOWN_KEYS, *FLAG_KEYS)) -> str:
    """`` (did you mean 'DEBDepends'?)`` when one of ``keys`` (a package object's, by
    default) is close to ``key``, else ""."""
    known = {k.lower(): k for k in keys}
    close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.75)
    return f" (did you mean {known[close[0]]!r}?)" if close else ""


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a package.json file."""
    path = Path(path)
    try:
        text = read_small_text(path, MAX_SIZE, "package list")
    except UnreadableFile as e:
        raise InvalidConfig(str(path), [("", e.problem)]) from None
    return parse_config(text, str(path))


def parse_config(text: str, path: str = "package.json") -> Config:
    """Validate package.json text; raise InvalidConfig listing every problem."""
    try:
        document = json.loads(text, object_pairs_hook=_KeyRecordingDict)
    except json.JSONDecodeError as e:
        raise InvalidConfig(
            path, [(f"line {e.lineno} column {e.colno}", f"not valid JSON: {e.msg}")]
        ) from None
    except RecursionError:
        raise InvalidConfig(path, [("/", "not a package list: JSON nested too deeply")]) from None
    return _Validator(path).config(document)


class _KeyRecordingDict(dict[str, Any]):
    """A JSON object that remembers keys given more than once (json keeps the last)."""

    repeated: tuple[str, ...] = ()

    def __init__(self, pairs: list[tuple[str, Any]]):
        super().__init__(pairs)
        if len(self) != len(pairs):
            seen: set[str] = set()
            repeated = []
            for key, _ in pairs:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
            self.repeated = tuple(repeated)


def _pointer(*parts: object) -> str:
    """A JSON pointer, shown on one line: a key may hold a newline or a NUL."""
    pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return text_fields.escaped(pointer) or "/"


def _describe(value: Any) -> str:
    kind = {
        dict: "an object",
        _KeyRecordingDict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }[type(value)]
    return f"{kind} ({json.dumps(value)[:40]})" if isinstance(value, (str, int, float)) else kind


class _Validator:
    def __init__(self, path: str):
        self.path = path
        self.problems: list[tuple[str, str]] = []
        self.warnings: list[str] = []

    def fail(self, pointer: str, message: str) -> None:
        self.problems.append((pointer, message))

    def warn(self, pointer: str, package: str, message: str) -> None:
        self.warnings.append(f"{self.path}: {pointer} ({package}): {message}")

    def config(self, document: Any) -> Config:
        if not isinstance(document, list):
            self.fail("/", f"expected an array of package objects, got {_describe(document)}")
            raise InvalidConfig(self.path, self.problems)
        specs: list[PackageSpec] = []
        first_index: dict[str, int] = {}
        for index, entry in enumerate(document):
            spec = self.package(index, entry)
            if spec is None:
                continue
            if spec.name in first_index:
                self.fail(
                    _pointer(index, "Package"),
                    f"duplicate package {spec.name!r} (first defined at /{first_index[spec.name]})",
                )
                continue
            first_index[spec.name] = index
            specs.append(spec)
        if self.problems:
            raise InvalidConfig(self.path, self.problems)
        return Config(self.path, tuple(specs), tuple(self.warnings))

    def package(self, index: int, entry: Any) -> PackageSpec | None:
        where = _pointer(index)
        if not isinstance(entry, dict):
            self.fail(where, f"expected a package object, got {_describe(entry)}")
            return None
        before = len(self.problems)
        if "Package" not in entry:
            self.fail(where, "missing required key 'Package'")
            return None
        name = entry["Package"]
        valid_name = self.text(_pointer(index, "Package"), name, _PACKAGE_TEXT)
        if not isinstance(name, str):
            return None
        # A name that is not one is quoted wherever a message names the package.
        label = valid_name or text_fields.shown(name)
        for key in getattr(entry, "repeated", ()):
            self.fail(_pointer(index, key), f"key {key!r} appears more than once in {label}")

        values: dict[str, Any] = {"name": name, "index": index}
        relations: dict[PackageFormat, dict[str, tuple[Relation, ...]]] = {
            fmt: {} for fmt in FORMATS
        }
        flag_keys: dict[str, str] = {}
        legacy: list[str] = []
        for key, value in entry.items():
            here = _pointer(index, key)
            if key == "Package":
                continue
            if key.lower() in _FLAGS:
                attribute = _FLAGS[key.lower()]
                if attribute in flag_keys:
                    self.fail(
                        here,
                        f"{key!r} and {flag_keys[attribute]!r} both set the same flag; keep one",
                    )
                    continue
                flag_keys[attribute] = key
                flag = self.boolean(here, value)
                if flag is not None and attribute not in _ALWAYS_HOLDING_FLAGS:
                    values[attribute] = flag
            elif key in _STRING_FIELDS:
                field_name, kind = _STRING_FIELDS[key]
                text = self.text(here, value, kind)
                if text is not None and field_name is not None:
                    values[field_name] = text
            elif key in _RELATION_KEYS:
                parsed = self.relation_list(here, value, _RELATION_KEYS[key][0][0].parse)
                for target_fmt, list_name in _RELATION_KEYS[key]:
                    relations[target_fmt][list_name] = parsed
            elif key == "Artifactory":
                values["artifactory"] = self.artifactory(here, value, label)
            elif key in _TRIGGER_KEYS:
                attribute, problem_of = _TRIGGER_KEYS[key]
                values[attribute] = self.checked_list(here, value, problem_of)
            elif key in _LEGACY_KEYS:
                legacy.append(here)
            elif key in _DOCUMENTED_BUT_IGNORED:
                self.warn(here, label, f"key {key!r} is ignored ({_DOCUMENTED_BUT_IGNORED[key]})")
            elif key.lower() in _KNOWN_BY_LOWER:
                self.warn(
                    here,
                    label,
                    f"unknown key {key!r} ignored (did you mean "
                    f"{_KNOWN_BY_LOWER[key.lower()]!r}? non-flag keys are case-sensitive)",
                )
            else:
                self.warn(here, label, f"unknown key {key!r} ignored{_suggestion(key)}")
        if not values.get("disabled"):
            # A disabled entry's content is never read: its legacy shape is harmless there.
            for here in legacy:
                key = here.rsplit("/", 1)[1]
                self.warn(
                    here, label, f"legacy key {key!r} is ignored; list content in Artifactory"
                )

        if values.get("metapackage") and values.get("artifactory"):
            self.fail(
                _pointer(index, "Artifactory"),
                f"{label} is a metapackage, which has no payload: remove Artifactory "
                'or set Metapackage to "False"',
            )
        if len(self.problems) > before:
            return None
        for fmt, lists in relations.items():
            values[fmt.name] = Relations(**lists)
        return PackageSpec(**values)

    def text(self, where: str, value: Any, kind: TextKind) -> str | None:
        """``value`` when it is a string of ``kind``; else None, and the problem noted."""
        if not isinstance(value, str):
            expected = "a string" if kind.grammar is None else kind.allowed
            self.fail(where, f"expected {expected}, got {_describe(value)}")
            return None
        problem = kind.problem(value)
        if problem is not None:
            self.fail(where, problem)
            return None
        return value

    def boolean(
        self, where: str, value: Any, words: tuple[frozenset[str], frozenset[str]] | None = None
    ) -> bool | None:
        true_words, false_words = words or (TRUE_WORDS, FALSE_WORDS)
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = value.strip().lower()
            if word in true_words:
                return True
            if word in false_words:
                return False
        self.fail(where, f'expected a boolean ("True" or "False"), got {_describe(value)}')
        return None

    def string_list(self, where: str, value: Any) -> list[tuple[str, str]] | None:
        if not isinstance(value, list):
            self.fail(where, f"expected an array of strings, got {_describe(value)}")
            return None
        items = []
        for i, item in enumerate(value):
            if (text := self.text(f"{where}/{i}", item, _LIST_ITEM_TEXT)) is not None:
                items.append((f"{where}/{i}", text))
        return items

    def checked_list(
        self, where: str, value: Any, problem_of: Callable[[str], str | None]
    ) -> tuple[str, ...]:
        """The strings of ``value`` that ``problem_of`` finds nothing wrong with."""
        items = []
        for here, text in self.string_list(where, value) or ():
            if (problem := problem_of(text)) is not None:
                self.fail(here, problem)
            else:
                items.append(text)
        return tuple(items)

    def relation_list(
        self, where: str, value: Any, parse: Callable[[str], Relation]
    ) -> tuple[Relation, ...]:
        parsed = []
        for here, text in self.string_list(where, value) or ():
            try:
                parsed.append(parse(text))
            except InvalidRelation as e:
                self.fail(here, str(e))
        return tuple(parsed)

    def artifactory(self, where: str, value: Any, package: str) -> tuple[ArtifactSource, ...]:
        if not isinstance(value, list):
            self.fail(where, f"expected an array of artifact objects, got {_describe(value)}")
            return ()
        sources = []
        for i, item in enumerate(value):
            here = f"{where}/{i}"
            if not isinstance(item, dict):
                self.fail(here, f"expected an artifact object, got {_describe(item)}")
                continue
            for key in item:
                if key not in ARTIFACT_KEYS:
                    self.warn(
                        here + _pointer(key),
                        package,
                        f"unknown artifact key {key!r} ignored{_suggestion(key, ARTIFACT_KEYS)}",
                    )
            if "Artifact" not in item:
                self.fail(f"{here}/Artifact", f"expected {_ARTIFACT_TEXT.allowed}, got nothing")
                continue
            artifact = self.text(f"{here}/Artifact", item["Artifact"], _ARTIFACT_TEXT)
            if artifact is None:
                continue
            gfxarch: bool | None = True
            if "Artifact_Gfxarch" in item:
                # Upstream: true only when str(value).lower() == "true"; any other
                # spelling there is silently false, so gfxpack rejects it.
                gfxarch = self.boolean(
                    f"{here}/Artifact_Gfxarch",
                    item["Artifact_Gfxarch"],
                    (frozenset({"true"}), frozenset({"false"})),
                )
            subdirs = self.subdirs(
                f"{here}/Artifact_Subdir", item.get("Artifact_Subdir", []), package
            )
            sources.append(ArtifactSource(artifact, tuple(subdirs), gfxarch is not False))
        return tuple(sources)

    def subdirs(self, where: str, value: Any, package: str) -> list[ArtifactSubdir]:
        if not isinstance(value, list):
            self.fail(where, f"expected an array of subdir objects, got {_describe(value)}")
            return []
        subdirs = []
        for i, item in enumerate(value):
            here = f"{where}/{i}"
            if not isinstance(item, dict):
                self.fail(here, f"expected a subdir object, got {_describe(item)}")
                continue
            for key in item:
                if key not in SUBDIR_KEYS:
                    # A misspelt Components would otherwise package nothing, silently.
                    self.warn(
                        here + _pointer(key),
                        package,
                        f"unknown subdir key {key!r} ignored{_suggestion(key, SUBDIR_KEYS)}",
                    )
            name = self.text(f"{here}/Name", item.get("Name"), _SUBDIR_TEXT)
            if name is None:
                continue
            components = []
            for comp_where, comp in (
                self.string_list(f"{here}/Components", item.get("Components", [])) or ()
            ):
                if comp in COMPONENTS:
                    components.append(comp)
                else:
                    self.fail(comp_where, f"expected one of {', '.join(COMPONENTS)}, got {comp!r}")
            subdirs.append(ArtifactSubdir(name, tuple(components)))
        return subdirs
