"""Installed roots built file by file for probe's tests, and probe run as users run it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgpack
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.fatbin.reader import HIPK
from gfxpack.kpack import KpackWriter
from tests.code_objects import code_object
from tests.fatbin.fat_elf import fat_elf

KERNEL = "math-libs/x/stage/lib/libx.so"  # the binary's TOC key, without #<index>
SEARCH = "../.kpack/x_lib_@GFXARCH@.kpack"  # as TheRock's splitter embeds it in lib/


@dataclass
class Probed:
    exit_code: int
    lines: list[str]  # stdout: one line per library, then the summary
    stderr: str


def probe(root: Path, *devices: str, env: dict[str, str] | None = None) -> Probed:
    args = ["probe", "--root", str(root)]
    for device in devices:
        args += ["--device", device]
    result = CliRunner().invoke(cli, args, env=env)
    return Probed(result.exit_code, result.stdout.splitlines(), result.stderr)


def touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(b"data")


def split_binary(path: Path, search: tuple[str, ...] = (SEARCH,), kernel: str = KERNEL) -> None:
    """A split shared library: one HIPK wrapper (co_index 0) pointing at its reference."""
    reference = msgpack.packb({"kernel_name": kernel, "kpack_search_paths": list(search)})
    data, _ = fat_elf(reference, [(HIPK, 0, 0)], ".rocm_kpack_ref", relocate=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def archive(path: Path, entries: dict[str, list[str]]) -> None:
    """A .kpack holding, for each target id, the code objects of the given TOC keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    first = next(iter(entries))
    with path.open("wb") as out, KpackWriter(out, "x_lib", first, arches=entries) as writer:
        for target, keys in entries.items():
            for key in keys:
                writer.add(key, code_object(target.split(":")[0], key.encode()), arch=target)
