"""The packager's kernel list: which kernel goes into which authored pack, for which arches.

A provider's build lists its kernels in a small JSON or TOML file (see
:func:`read_kernel_list`); every problem in it is reported at once, each naming
the file and the JSON pointer it is at. :class:`PackError`, the packager's one
error, lives here, with its first input.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack import amdgpu
from gfxpack.descriptors.jsonc import MAX_DEPTH, deeper_than
from gfxpack.descriptors.parse import did_you_mean
from gfxpack.errors import GfxpackError
from gfxpack.regular_files import UnreadableFile, read_small_text

DEFAULT_GROUP = "hip_kernel_provider"
DEFAULT_CODE_OBJECT = "{arch}/{toc_key}.hsaco"
MAX_LIST_BYTES = 16 << 20  # a kernel list or descriptor file larger than this is refused
_UUID = re.compile(r"^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")
_GROUP = re.compile(r"^[A-Za-z0-9_.-]+$")
_LIST_KEYS = {"group", "kernels"}
KERNEL_KEYS = {
    "name",
    "pack",
    "symbol",
    "arch",
    "metadata",
    "priority",
    "id",
    "toc_key",
    "signature",
    "code_object",
}
_REQUIRED = ("name", "pack", "symbol", "arch")


class PackError(GfxpackError, ValueError):
    """Inputs the packager cannot turn into a loadable tree; one line per problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class ListedKernel:
    """One kernel of the list: built for ``arch``, placed in the authored pack ``pack``."""

    name: str
    pack: str  # an authored pack's name or id
    symbol: str
    arch: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    id: str | None = None
    toc_key: str = ""
    signature: tuple[dict[str, Any], ...] = ()
    code_object: str = DEFAULT_CODE_OBJECT
    where: str = ""  # "<file>: /kernels/<i>", for messages


@dataclass(frozen=True)
class KernelList:
    path: Path
    group: str
    kernels: tuple[ListedKernel, ...]


def read_kernel_list(path: str | os.PathLike[str]) -> KernelList:
    """Read a kernel list (``.json``, or ``.toml``), every problem reported at once.

    JSON form (TOML: ``group = ...`` and one ``[[kernels]]`` table per kernel)::

        {"group": "hip_kernel_provider",            optional: the archives' group name
         "kernels": [
           {"name": "add.f32_b64",                  required, unique within its pack
            "pack": "dnn:pointwise_add",            required: an authored pack's name or id
            "symbol": "PointwiseAdd",               required: the code object's entry symbol
            "arch": ["gfx1100", "gfx942"],          required: the arches it is built for
            "metadata": {"block_size": 64},         optional, default {}
            "priority": 0,                          optional, default 0
            "id": "<uuid>",                         optional, default derived from pack + name
            "toc_key": "add.f32_b64",               optional, default the name
            "signature": [{"kind": "global_buffer", "size": 8, "offset": 0}],  default []
            "code_object": "{arch}/{toc_key}.hsaco" optional: file under the code directory
           }]}
    """
    path = Path(path)
    try:
        # A FIFO is refused, never opened: reading one would wait for a writer forever.
        text = read_small_text(path, MAX_LIST_BYTES, "kernel list")
    except UnreadableFile as e:
        raise PackError([str(e)]) from None
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    too_deep = f"{path}: not a kernel list: {kind} nested more than {MAX_DEPTH} levels deep"
    try:
        document = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except ValueError as e:
        raise PackError([f"{path}: not valid {kind}: {e}"]) from None
    except RecursionError:  # both parsers recurse per level
        raise PackError([too_deep]) from None
    # What the parsers accept below their recursion limit is still refused past the
    # descriptors' depth, so every later step (checks, JSON writing) may recurse.
    if deeper_than(document, MAX_DEPTH):
        raise PackError([too_deep])
    problems: list[str] = []
    if not isinstance(document, dict):
        raise PackError([f"{path}: expected an object with a 'kernels' list"])
    for key in sorted(set(document) - _LIST_KEYS):
        problems.append(
            f"{path}: /{key}: unknown key (expected 'group' and 'kernels')"
            f"{did_you_mean(key, _LIST_KEYS)}"
        )
    group = document.get("group", DEFAULT_GROUP)
    if not isinstance(group, str) or not _GROUP.match(group):
        problems.append(f"{path}: /group: expected a name of letters, digits, '_', '.', '-'")
        group = DEFAULT_GROUP
    raw = document.get("kernels")
    if not isinstance(raw, list) or not raw:
        problems.append(f"{path}: /kernels: expected a non-empty list of kernels")
        raw = []
    kernels = []
    seen: dict[tuple[str, str], str] = {}
    for index, item in enumerate(raw):
        kernel = _kernel(item, f"{path}: /kernels/{index}", problems)
        if kernel is None:
            continue
        first = seen.setdefault((kernel.pack, kernel.name), kernel.where)
        if first != kernel.where:
            problems.append(
                f"{kernel.where}: kernel '{kernel.name}' is listed twice for pack "
                f"'{kernel.pack}' (first at {first.split(': ', 1)[1]})"
            )
        kernels.append(kernel)
    if problems:
        raise PackError(problems)
    return KernelList(path, group, tuple(kernels))


def _kernel(item: object, where: str, problems: list[str]) -> ListedKernel | None:
    if not isinstance(item, dict):
        problems.append(f"{where}: expected an object")
        return None
    before = len(problems)
    for key in sorted(set(item) - KERNEL_KEYS):
        problems.append(
            f"{where}/{key}: unknown key (expected {', '.join(sorted(KERNEL_KEYS))})"
            f"{did_you_mean(key, KERNEL_KEYS)}"
        )
    for key in _REQUIRED:
        if key not in item:
            problems.append(f"{where}: missing required key '{key}'")
    strings = {}
    for key in ("name", "pack", "symbol", "toc_key", "code_object", "id"):
        value = item.get(key)
        if key in item and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{where}/{key}: expected a non-empty string, got {value!r}")
        elif isinstance(value, str):
            strings[key] = value
    if "id" in strings and not _UUID.match(strings["id"]):
        problems.append(f"{where}/id: expected a UUID, got {strings['id']!r}")
    arch = item.get("arch", [])
    if not isinstance(arch, list) or not arch:
        problems.append(f"{where}/arch: expected a non-empty list of processors, got {arch!r}")
        arch = []
    for i, name in enumerate(arch):
        # A processor of the table: its shard is what a device of that processor loads
        # (a family, a generic target or a typo would make a shard no device loads).
        problem = amdgpu.processor_problem(name) if isinstance(name, str) else None
        if not isinstance(name, str):
            problems.append(f"{where}/arch/{i}: expected a processor such as gfx942, got {name!r}")
        elif problem:
            problems.append(f"{where}/arch/{i}: {problem}")
        elif arch.index(name) != i:
            problems.append(f"{where}/arch/{i}: {name!r} is listed twice")
    metadata = item.get("metadata", {})
    if not isinstance(metadata, dict):
        problems.append(f"{where}/metadata: expected an object, got {metadata!r}")
    elif not _plain_json(metadata):
        problems.append(
            f"{where}/metadata: values must be booleans, numbers, strings or lists of "
            "integers (no dates, no NaN)"
        )
    priority = item.get("priority", 0)
    if type(priority) is not int:
        problems.append(f"{where}/priority: expected an integer, got {priority!r}")
    signature = item.get("signature", [])
    if (
        not isinstance(signature, list)
        or not all(isinstance(a, dict) for a in signature)
        or not _plain_json(signature)
    ):
        problems.append(f"{where}/signature: expected a list of argument objects")
    if len(problems) > before:
        return None
    return ListedKernel(
        name=strings["name"],
        pack=strings["pack"],
        symbol=strings["symbol"],
        arch=tuple(arch),
        metadata=dict(metadata),
        priority=priority,
        id=strings["id"].lower() if "id" in strings else None,
        toc_key=strings.get("toc_key", strings["name"]),
        signature=tuple(signature),
        code_object=strings.get("code_object", DEFAULT_CODE_OBJECT),
        where=where,
    )


def _plain_json(value: object) -> bool:
    """Whether a value (read from TOML, say) is plain JSON: no dates, no NaN or infinity."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_json(v) for k, v in value.items())
    return False
