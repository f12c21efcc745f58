"""Split fat wheels: one host wheel, one data-only device wheel per GPU arch.

Each wheel is unpacked into a scratch directory (checked member by member, see
:mod:`gfxpack.wheels.archive`) and split there as an install tree by
:func:`gfxpack.fatbin.split.split_tree`, the splitter of every other input: fat
libraries keep their host code and a reference to
``<their directory>/.kpack/<name>_lib_@GFXARCH@.kpack`` (the common directory of
the wheel's fat libraries), files named for one arch move to that arch. The host
wheel gets the rewritten tree; each device wheel installs its archives and files
into the same place of the same scheme (``platlib`` at its root, any other under
``.data/<scheme>/``), so the installed library finds them beside it.

The host wheel's dist-info also holds ``gfxpack-split.msgpack``: what
:mod:`gfxpack.wheels.join` needs to give back the original files. When that needs
long literal bytes (compressed bundles: their zstd bytes cannot be made again from
the code objects), they go to ``<host wheel>.gfxpack-join`` beside the wheels, not
into any wheel: no installer reads it, and the host wheel stays small.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, file_digests, replace_directory
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.split import INDEX, LITERALS, split_tree
from gfxpack.plan.targets import target_order
from gfxpack.regular_files import printable
from gfxpack.wheels.archive import (
    DEFAULT_MAX_WHEEL_SIZE,
    Unpacked,
    WheelError,
    check_out,
    output_refused,
    read_wheel,
    temporary_beside,
    wheel_inputs,
    write_wheel,
)
from gfxpack.wheels.metadata import (
    WheelName,
    check_host_metadata,
    check_identity,
    device_filename,
    device_metadata,
    device_name,
    device_wheel_file,
    dist_info_name,
    host_metadata,
    wheel_file,
)

RECORD_NAME = "gfxpack-split.msgpack"  # in the host's dist-info
JOIN_DATA = ".gfxpack-join"  # beside the host wheel: <its file name>.gfxpack-join
RECORD_FORMAT = 1
TREE = "tree"  # the unpacked wheel in the scratch directory
SPLIT = "split"  # split_tree's output there
ELF_MAGIC = b"\x7fELF"


@dataclass
class WheelSplit:
    """What one wheel became."""

    source: str
    host: str
    devices: dict[str, str] = field(default_factory=dict)  # arch -> device wheel
    notes: list[str] = field(default_factory=list)


def scheme_of(path: str, data_dir: str, root_scheme: str) -> tuple[str, str]:
    """(scheme, path inside it) of a wheel member."""
    if path.startswith(f"{data_dir}/"):
        scheme, _, inside = path[len(data_dir) + 1 :].partition("/")
        return scheme, inside
    return root_scheme, path


def member_path(scheme: str, inside: str, data_dir: str) -> str:
    """Where a device wheel (root: platlib) puts a file of ``scheme``."""
    return inside if scheme == "platlib" else f"{data_dir}/{scheme}/{inside}"


def split_wheels(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    jobs: int = 1,
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
    max_wheel_size: int = DEFAULT_MAX_WHEEL_SIZE,
) -> list[WheelSplit]:
    """Split every wheel of ``source`` into the new directory ``out`` (written under a
    temporary name, renamed when complete)."""
    source, out = Path(source), Path(out)
    wheels = wheel_inputs(source)
    check_out(out, force, wheels)
    temporary = temporary_beside(out)
    results = []
    try:
        for number, wheel in enumerate(wheels):
            scratch = temporary / f".scratch-{number}"
            scratch.mkdir()
            try:
                results.append(
                    _split_one(wheel, temporary, scratch, (jobs, max_object_size, max_wheel_size))
                )
            except GfxpackError as e:
                refused = output_refused(str(e), scratch, out)
                raise WheelError(refused or str(e)) from None
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        os.chmod(temporary, DIRECTORY_MODE)
        replace_directory(temporary, out, force)
    except OSError as e:
        raise WheelError(f"{printable(str(out))}: cannot write: {e.strerror or e}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return results


def _split_one(wheel: Path, out: Path, scratch: Path, limits: tuple[int, int, int]) -> WheelSplit:
    """Split one wheel; what the splitter of trees says names the wheel's members,
    not the scratch directory they were unpacked to."""
    shown = printable(str(wheel))
    unpacked_at = f"{scratch / TREE}/"
    try:
        result = _split_unpacked(wheel, out, scratch, limits)
    except GfxpackError as e:
        raise WheelError(str(e).replace(unpacked_at, f"{shown}: member ")) from None
    result.notes = [note.replace(unpacked_at, f"{shown}: member ") for note in result.notes]
    return result


def _split_unpacked(
    wheel: Path, out: Path, scratch: Path, limits: tuple[int, int, int]
) -> WheelSplit:
    jobs, max_object_size, max_wheel_size = limits
    name = WheelName(wheel.name)
    shown = printable(str(wheel))
    if (out / wheel.name).exists():
        raise WheelError(f"{wheel}: two input wheels have the file name {wheel.name}")
    unpacked = read_wheel(wheel, scratch / TREE, max_wheel_size)
    expected = dist_info_name(name.name, name.version)
    if unpacked.dist_info.lower() != expected.lower():
        raise WheelError(f"{shown}: its dist-info is {unpacked.dist_info}, expected {expected}")
    for needed in ("METADATA", "WHEEL"):
        if needed not in unpacked.info_files:
            raise WheelError(f"{shown}: no {unpacked.dist_info}/{needed}")
    check_identity(shown, unpacked.info_files["METADATA"], name)
    fields = wheel_file(shown, unpacked.info_files["WHEEL"])
    root_scheme = "purelib" if fields["Root-Is-Purelib"].lower() == "true" else "platlib"
    data_dir = unpacked.dist_info.removesuffix(".dist-info") + ".data"
    fat = _fat_libraries(unpacked, max_object_size)
    if not fat:
        shutil.copyfile(wheel, out / wheel.name)
        return WheelSplit(wheel.name, wheel.name, notes=[f"{shown}: no device code; copied"])
    places = {scheme_of(p, data_dir, root_scheme)[0] for p in fat}
    if len(places) > 1:
        raise WheelError(
            f"{shown}: fat libraries install into {' and '.join(sorted(places))}; "
            "gfxpack splits a wheel whose fat libraries share one scheme"
        )
    kpack_dir = posixpath.join(
        posixpath.commonpath([posixpath.dirname(p) for p in fat])
        if len(fat) > 1
        else posixpath.dirname(fat[0]),
        ".kpack",
    )
    # The dist-info is the wheel's, not the tree's: it stays out of the split.
    shutil.rmtree(scratch / TREE / unpacked.dist_info)
    group = f"{name.name}_lib"
    report = split_tree(
        scratch / TREE, scratch / SPLIT, group, kpack_dir, jobs, False, max_object_size
    )
    arches = sorted(report.arches, key=target_order)
    if not arches:  # every fat library kept whole (see the notes)
        shutil.copyfile(wheel, out / wheel.name)
        return WheelSplit(wheel.name, wheel.name, notes=[*report.notes, f"{shown}: copied"])
    split = scratch / SPLIT
    literals = split / LITERALS
    join_data = None
    if literals.stat().st_size:
        size, (sha256,) = file_digests(literals, "sha256")
        join_data = {"size": size, "sha256": sha256}
    devices = {arch: device_filename(name, arch) for arch in arches}
    record = {
        "format": RECORD_FORMAT,
        "wheel": wheel.name,
        "group": group,
        "root_scheme": root_scheme,
        "data_dir": data_dir,
        "index": (split / INDEX).read_bytes(),
        "metadata": unpacked.info_files["METADATA"],
        "record": unpacked.info_files["RECORD"],
        "devices": devices,
        "data": join_data,
    }
    info = unpacked.dist_info
    host_files: list[tuple[str, int, Path | bytes]] = _tree_files(
        split / f"{group}_generic" / "stage", ""
    )
    for inside, data in sorted(unpacked.info_files.items()):
        if inside == "RECORD":
            continue
        if inside == "METADATA":
            data = host_metadata(shown, data, name, arches)
        host_files.append((f"{info}/{inside}", unpacked.info_modes[inside], data))
    host_files.append((f"{info}/{RECORD_NAME}", 0o644, msgpack.packb(record, use_bin_type=True)))
    if join_data is not None:
        os.rename(literals, out / f"{wheel.name}{JOIN_DATA}")
    write_wheel(out / wheel.name, host_files, info)
    result = WheelSplit(wheel.name, wheel.name, notes=report.notes)
    summary = _summary(unpacked)
    for arch in arches:
        device = devices[arch]
        device_info = dist_info_name(device_name(name.name, arch), name.version)
        files: list[tuple[str, int, Path | bytes]] = []
        for tree_path, mode, path in _tree_files(split / f"{group}_{arch}" / "stage", ""):
            scheme, inside = scheme_of(tree_path, data_dir, root_scheme)
            device_data = device_info.removesuffix(".dist-info") + ".data"
            files.append((member_path(scheme, inside, device_data), mode, path))
        files.append((f"{device_info}/METADATA", 0o644, device_metadata(name, arch, summary)))
        files.append((f"{device_info}/WHEEL", 0o644, device_wheel_file(name)))
        if (out / device).exists():
            raise WheelError(f"{shown}: another input wheel also gives {device}")
        write_wheel(out / device, files, device_info)
        result.devices[arch] = device
    _check_written(shown, out, result, info)
    return result


def _check_written(shown: str, out: Path, result: WheelSplit, host_info: str) -> None:
    """What the installers will read, read back from the wheels written: checked, not
    assumed from how it was made (a header ended early once hid the extras in the
    body). The host offers each device wheel by the name and version it was written
    under, and each wheel's METADATA names the wheel its file name does."""
    for filename in [result.host, *result.devices.values()]:
        wheel = WheelName(filename)
        is_host = filename == result.host
        # The host keeps the input's dist-info spelling; device wheels are named here.
        info = host_info if is_host else dist_info_name(wheel.name, wheel.version)
        with zipfile.ZipFile(out / filename) as written:
            metadata = written.read(f"{info}/METADATA")
        check_identity(f"{shown}: {filename} as written", metadata, wheel)
        if is_host:
            check_host_metadata(shown, metadata, result.devices)


def _summary(unpacked: Unpacked) -> str:
    return unpacked.dist_info.removesuffix(".dist-info").replace("-", " ", 1)


def _tree_files(top: Path, base: str) -> list[tuple[str, int, Path | bytes]]:
    """Every regular file under ``top`` (split writes only files and directories
    here: a wheel has no symlinks), as (path, mode, file)."""
    files: list[tuple[str, int, Path | bytes]] = []
    if not top.is_dir():
        return files
    for directory, _dirs, names in os.walk(top):
        for file_name in names:
            path = Path(directory) / file_name
            relative = path.relative_to(top).as_posix()
            files.append(
                (
                    posixpath.join(base, relative) if base else relative,
                    path.stat().st_mode & 0o777,
                    path,
                )
            )
    return sorted(files, key=lambda f: f[0])


def _fat_libraries(unpacked: Unpacked, max_object_size: int) -> list[str]:
    """The members outside the dist-info that are ELF files with device code. Only
    their wrappers are read here: the split reads (and checks) their bundles, and
    decompressing them twice was a third of a split's time."""
    fat = []
    for member in unpacked.members:
        path = unpacked.root / member.path
        with open(path, "rb") as file:
            if file.read(4) != ELF_MAGIC:
                continue
        with FatBinary(path, max_object_size=max_object_size, bundles=False) as binary:
            if binary.wrappers:
                fat.append(member.path)
    return fat


def read_split_record(where: str, data: bytes) -> dict[str, Any]:
    """The host wheel's split record, checked for the fields join reads."""
    try:
        record = msgpack.unpackb(data, raw=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise WheelError(f"{where}: {RECORD_NAME}: unreadable: {e}") from None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise WheelError(f"{where}: {RECORD_NAME}: unknown format")
    kinds = {
        "wheel": str, "group": str, "root_scheme": str, "data_dir": str,
        "index": bytes, "metadata": bytes, "record": bytes, "devices": dict,
    }  # fmt: skip
    for key, kind in kinds.items():
        if not isinstance(record.get(key), kind):
            raise WheelError(f"{where}: {RECORD_NAME}: {key!r}: expected {kind.__name__}")
    join_data = record.get("data")
    if join_data is not None and not (
        isinstance(join_data, dict)
        and isinstance(join_data.get("size"), int)
        and join_data["size"] >= 0
        and isinstance(join_data.get("sha256"), str)
    ):
        raise WheelError(f"{where}: {RECORD_NAME}: 'data': expected its size and sha256")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in record["devices"].items()):
        raise WheelError(f"{where}: {RECORD_NAME}: 'devices': expected file names by arch")
    return record
