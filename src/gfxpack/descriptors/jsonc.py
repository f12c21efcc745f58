"""JSONC as the descriptor loader reads it (spec descriptors.md section 5).

``//`` and ``/* */`` comments are allowed anywhere outside strings, a UTF-8 BOM
is skipped, a repeated key keeps its last value, and a trailing comma is an
error, as are NaN and Infinity. Comments become spaces before the JSON parser
runs, so its line and column numbers still point into the original text.

>>> loads('// hi\\n{"a": 1, /* c */ "a": 2}')
{'a': 2}
"""

from __future__ import annotations

import json
from typing import Any


class JsoncError(ValueError):
    """Text that is not JSONC; the message says where and why."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def strip_comments(text: str) -> str:
    """The text with every comment replaced by spaces (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise JsoncError(f"unterminated /* comment at {_position(text, i)}")
            comment = text[i : j + 2]
            out.append("".join(c if c == "\n" else " " for c in comment))
            i = j + 2
        else:
            j = i
            while j < n and text[j] not in '"/':
                j += 1
            if j == i:  # a lone '/': not a comment, let the JSON parser reject it
                j = i + 1
            out.append(text[i:j])
            i = j
    return "".join(out)


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
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise JsoncError(f"{e.msg} at line {e.lineno} column {e.colno}") from None
    except (ValueError, RecursionError) as e:
        raise JsoncError(str(e) or type(e).__name__) from None
