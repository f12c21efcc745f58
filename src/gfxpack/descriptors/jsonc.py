"""JSONC as the descriptor loader reads it (spec descriptors.md section 5).

``//`` and ``/* */`` comments are allowed anywhere outside strings, a UTF-8 BOM
is skipped, a repeated key keeps its last value, and a trailing comma is an
error, as are NaN and Infinity. Comments become spaces before the JSON parser
runs, so its line and column numbers still point into the original text.
Documents nested deeper than :data:`MAX_DEPTH` arrays and objects are refused:
no descriptor needs a tenth of it, and every later step may then recurse freely.

>>> loads('// hi\\n{"a": 1, /* c */ "a": 2}')
{'a': 2}
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64


class JsoncError(ValueError):
    """Text that is not JSONC; the message says where and why."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


# A string (kept), a line comment, a block comment, or an unterminated block comment.
_TOKENS = re.compile(r'("(?:\\.|[^"\\])*")|(//[^\n]*)|(/\*.*?\*/)|(/\*.*)', re.DOTALL)


def strip_comments(text: str) -> str:
    """The text with every comment replaced by spaces (newlines kept)."""
    if "/" not in text:
        return text  # the common case: plain JSON

    def blank(match: re.Match[str]) -> str:
        kept: str | None = match.group(1)
        if kept is not None:
            return kept
        if match.group(4) is not None:
            raise JsoncError(f"unterminated /* comment at {_position(text, match.start())}")
        return "".join(c if c == "\n" else " " for c in match.group(0))

    return _TOKENS.sub(blank, text)


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line} column {column}"


def loads(data: bytes | str) -> Any:
    """Parse JSONC bytes or text; raise JsoncError with a position on failure."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsoncError(f"not UTF-8 at byte {e.start}") from None
    if data.startswith("\ufeff"):
        data = data[1:]
    text = strip_comments(data)
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise JsoncError(f"{e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise JsoncError(_TOO_DEEP) from None
    except ValueError as e:
        raise JsoncError(str(e) or type(e).__name__) from None
    # Fewer brackets than the limit cannot nest past it: decided in C for most files.
    if text.count("[") + text.count("{") > MAX_DEPTH and deeper_than(value, MAX_DEPTH):
        raise JsoncError(_TOO_DEEP)
    return value


_TOO_DEEP = f"arrays and objects nested more than {MAX_DEPTH} levels deep"


def deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest past ``limit`` levels (iterative: no recursion)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
