"""Registries the validation step asks: native symbols, and engine names in the process.

gfxpack runs without the provider process that owns the real registries, so
the symbol registry is supplied by the caller (spec Decision 2): a mapping, a
JSON file ``{"graph_match": [...], "kernel_match": [...], "dispatch": [...],
"score": [...]}``, or a text file of ``<kind> <symbol>`` lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gfxpack.errors import GfxpackError
from gfxpack.regular_files import UnreadableFile, read_small_text

KINDS = ("graph_match", "kernel_match", "dispatch", "score")
# A registry lists a provider's native symbols, a few thousand lines at most.
MAX_REGISTRY_BYTES = 16 << 20


class InvalidRegistry(GfxpackError, ValueError):
    pass


class SymbolRegistry:
    def __init__(self, symbols: Mapping[str, Iterable[str]]):
        unknown = set(symbols) - set(KINDS)
        if unknown:
            raise InvalidRegistry(
                f"unknown symbol kind(s) {', '.join(sorted(unknown))}; expected {', '.join(KINDS)}"
            )
        self._symbols = {kind: frozenset(symbols.get(kind, ())) for kind in KINDS}

    def has(self, kind: str, symbol: str) -> bool:
        return symbol in self._symbols[kind]

    @classmethod
    def from_file(cls, path: str | Path) -> SymbolRegistry:
        path = Path(path)
        try:
            text = read_small_text(path, MAX_REGISTRY_BYTES, "symbol registry")
        except UnreadableFile as e:
            raise InvalidRegistry(f"{path}: {e.problem}") from None
        if path.suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as e:
                raise InvalidRegistry(f"{path}: not valid JSON: {e}") from None
            except RecursionError:
                raise InvalidRegistry(
                    f"{path}: not a symbol registry: arrays or objects nested too deeply "
                    "(expected an object of kind -> list of symbols)"
                ) from None
            if not isinstance(data, dict) or not all(
                isinstance(v, list) and all(isinstance(s, str) for s in v) for v in data.values()
            ):
                raise InvalidRegistry(f"{path}: expected an object of kind -> list of symbols")
            try:
                return cls(data)
            except InvalidRegistry as e:  # the kinds are checked there: name the file
                raise InvalidRegistry(f"{path}: {e}") from None
        symbols: dict[str, list[str]] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or parts[0] not in KINDS:
                raise InvalidRegistry(
                    f"{path}:{number}: expected '<kind> <symbol>' with kind one "
                    f"of {', '.join(KINDS)}"
                )
            symbols.setdefault(parts[0], []).append(parts[1])
        return cls(symbols)


@dataclass(frozen=True)
class Holder:
    name: str
    owner: str


class EngineNames:
    """Engine id -> name, as the provider's process-wide engine-name registry holds them."""

    def __init__(self) -> None:
        self._names: dict[int, Holder] = {}

    def holder(self, ident: int) -> Holder | None:
        return self._names.get(ident)

    def register(self, ident: int, name: str, owner: str) -> None:
        current = self._names.get(ident)
        if current is not None and current.owner != owner:
            raise ValueError(f"engine id already registered to '{current.name}'")
        self._names[ident] = Holder(name, owner)
