"""JSON Schema violations as lines an author can act on (``descriptors lint``).

jsonschema's own messages quote the failing value whole: a kernel entry that
misses one key comes out as the entire entry followed by "is not valid under
any of the given schemas". Here each line is ``<pointer>: <what>``, where the
pointer leads to the key, an alternative (``oneOf``) is explained by the branch
the value's type selects, an unknown key is named (with a suggestion), and any
value quoted is shortened.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from gfxpack.descriptors.parse import describe, did_you_mean

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

_SHORT = 72  # longer values are shortened (parse.describe's limit)
_UUID_PATTERN = "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
_JSON_KIND = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def violation_lines(errors: Iterable[ValidationError]) -> list[str]:
    """One sorted line per violation, each naming the key it is about."""
    return sorted({line for error in errors for line in _lines(error)})


def _lines(error: ValidationError) -> Iterator[str]:
    if error.validator in ("oneOf", "anyOf") and error.context:
        branch = _branch_of_its_type(error)
        if branch is not None:
            for inner in branch:
                yield from _lines(inner)
            return
    pointer = "/".join(str(p) for p in error.absolute_path) or "(root)"
    for message in _messages(error):
        yield f"{pointer}: {message}"


def _branch_of_its_type(error: ValidationError) -> list[ValidationError] | None:
    """The errors of the one alternative whose type the value has (a kernel entry that is
    an object is judged as an inline kernel, a string as a reference), if exactly one."""
    branches: dict[int, list[ValidationError]] = {}
    for inner in error.context or ():
        branches.setdefault(int(inner.relative_schema_path[0]), []).append(inner)
    fitting = [
        errors
        for errors in branches.values()
        if not any(e.validator == "type" and not e.relative_path for e in errors)
    ]
    return fitting[0] if len(fitting) == 1 else None


def _messages(error: ValidationError) -> list[str]:
    instance = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        return [
            f"unknown key '{key}'; extension keys must start with 'x-' or '_'"
            f"{did_you_mean(key, schema.get('properties', {}))}"
            for key in _unknown_keys(instance, schema)
        ]
    if error.validator in ("oneOf", "anyOf") and isinstance(error.validator_value, list):
        kinds = sorted({str(s.get("type")) for s in error.validator_value if "type" in s})
        return [f"expected {' or '.join(kinds) or 'another value'}, got {_kind(instance)}"]
    if error.validator == "pattern" and error.validator_value == _UUID_PATTERN:
        return [f"must be a UUID (8-4-4-4-12 hex digits), got {describe(instance)}"]
    if error.validator == "uniqueItems" and isinstance(instance, list):
        return [f"repeats {describe(_first_repeat(instance))}"]
    text = repr(instance)
    if len(text) > _SHORT and text in error.message:
        return [error.message.replace(text, describe(instance), 1)]
    return [error.message]


def _unknown_keys(instance: dict[str, Any], schema: Mapping[str, Any]) -> list[str]:
    known = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return sorted(
        key for key in instance if key not in known and not any(p.search(key) for p in patterns)
    )


def _kind(value: Any) -> str:
    kind = _JSON_KIND.get(type(value))
    if kind is None:
        return describe(value)  # a number or null: short already
    return f"{kind} {describe(value)}" if isinstance(value, str) else kind


def _first_repeat(values: list[Any]) -> Any:
    seen: set[str] = set()
    for value in values:
        key = json.dumps(value, sort_keys=True)
        if key in seen:
            return value
        seen.add(key)
    return values[0]  # unreachable while jsonschema reports it: uniqueItems held
