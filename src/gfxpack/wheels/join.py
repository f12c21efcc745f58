"""Join split wheels back into the wheels they came from.

For each host wheel (one whose dist-info holds ``gfxpack-split.msgpack``), its
device wheels are read from the same directory, their files put back where
:func:`gfxpack.fatbin.split.split_tree` wrote them, and
:func:`gfxpack.fatbin.join.join_tree` rebuilds the original tree (each fat library
checked against its original's digest). The original METADATA and RECORD come back
from the record, and every file is checked against the original RECORD's sha256
and size before the wheel is written.

What is identical: every file the wheel installs, RECORD included, byte for
byte, with its mode. What may differ: the zip container (member order,
timestamps, compression, extra fields), so the .whl file's own sha256 may not
match the original's. ``<host wheel>.gfxpack-join``, when the split wrote one, must
be beside the host wheel. Wheels that are neither a host wheel nor one of its device
wheels (they had no device code) are copied as they are.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, replace_directory
from gfxpack.amdgpu import MACH, OWNERS
from gfxpack.artifact_layout import GENERIC
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.record import LITERALS, SPLIT_INDEX
from gfxpack.fatbin.split import tree_part
from gfxpack.regular_files import open_regular, printable
from gfxpack.wheels.archive import (
    CHUNK,
    DEFAULT_MAX_WHEEL_SIZE,
    WheelError,
    check_out,
    output_refused,
    read_wheel,
    temporary_beside,
    wheel_inputs,
    write_wheel,
)
from gfxpack.wheels.metadata import WheelName, device_filename, device_name, read_metadata
from gfxpack.wheels.split import (
    JOIN_DATA,
    RECORD_NAME,
    OnStep,
    WheelSplit,
    measure,
    read_split_record,
    scheme_of,
)


def _is_host(wheel: Path) -> bool:
    try:
        with zipfile.ZipFile(wheel) as archive:
            return any(
                n.count("/") == 1
                and n.split("/")[0].endswith(".dist-info")
                and n.endswith(f"/{RECORD_NAME}")
                for n in archive.namelist()
            )
    except (OSError, zipfile.BadZipFile, ValueError) as e:
        raise WheelError(f"{printable(str(wheel))}: not a wheel (a zip archive): {e}") from None


def join_wheels(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
    max_wheel_size: int = DEFAULT_MAX_WHEEL_SIZE,
    on_step: OnStep | None = None,
) -> list[WheelSplit]:
    """Join the split wheels of ``source`` into the new directory ``out``; each wheel
    written (``source``: its name) with the wheels it was made of and the sizes of all
    (measured in ``out`` and ``source``), in file name order."""
    source, out = Path(source), Path(out)
    wheels = {w.name: w for w in wheel_inputs(source)}
    check_out(out, force, list(wheels.values()))
    hosts = [name for name, path in wheels.items() if _is_host(path)]
    temporary = temporary_beside(out)
    written: list[WheelSplit] = []
    used: set[str] = set()
    try:
        for number, host in enumerate(hosts):
            if on_step is not None:
                on_step(f"joining {host}", number, len(hosts))
            scratch = temporary / f".scratch-{number}"
            scratch.mkdir()
            try:
                name, devices = _join_one(
                    wheels, host, temporary, scratch, (max_object_size, max_wheel_size)
                )
            except GfxpackError as e:
                refused = output_refused(str(e), scratch, out)
                raise WheelError(refused or str(e)) from None
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            used.update(devices.values(), [host])
            written.append(WheelSplit(name, host, devices))
        for name, path in sorted(wheels.items()):
            if name not in used:  # had no device code: split copied it
                shutil.copyfile(path, temporary / name)
                written.append(WheelSplit(name, name))
        if on_step is not None:
            on_step("joined", len(hosts), len(hosts))
        os.chmod(temporary, DIRECTORY_MODE)
        replace_directory(temporary, out, force)
    except OSError as e:
        raise WheelError(f"{printable(str(out))}: cannot write: {e.strerror or e}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    for result in written:
        made_of = {arch: wheels[name] for arch, name in result.devices.items()}
        result.sizes = measure(out / result.source, wheels[result.host], made_of)
    return sorted(written, key=lambda r: r.source)


def _join_one(
    wheels: dict[str, Path], host: str, out: Path, scratch: Path, limits: tuple[int, int]
) -> tuple[str, dict[str, str]]:
    max_object_size, max_wheel_size = limits
    shown = printable(str(wheels[host]))
    unpacked = read_wheel(wheels[host], scratch / "host", max_wheel_size)
    record = read_split_record(shown, unpacked.info_files[RECORD_NAME])
    original = WheelName(record["wheel"])
    if (original.name, original.version) != (WheelName(host).name, WheelName(host).version):
        raise WheelError(
            f"{host}: {RECORD_NAME} is the record of another wheel, {original.filename}"
        )
    group, root_scheme, data_dir = record["group"], record["root_scheme"], record["data_dir"]
    # Every name the record gives becomes a path here: each must be the one split writes.
    expected = {
        "group": f"{original.name}_lib",
        "data_dir": unpacked.dist_info.removesuffix(".dist-info") + ".data",
    }
    for key, value in expected.items():
        if record[key] != value:
            raise WheelError(f"{shown}: {RECORD_NAME}: {key!r} is not {value!r}")
    if root_scheme not in ("purelib", "platlib"):
        raise WheelError(f"{shown}: {RECORD_NAME}: 'root_scheme' is not purelib or platlib")
    for arch, filename in record["devices"].items():
        if arch not in MACH or filename != device_filename(original, arch):
            raise WheelError(
                f"{shown}: {RECORD_NAME}: 'devices': {printable(arch)!r} is not a GPU arch "
                "with its device wheel's name"
            )
    split = scratch / "split"
    split.mkdir()
    (split / SPLIT_INDEX).write_bytes(record["index"])
    info = unpacked.dist_info
    if record["data"] is not None:
        _copy_join_data(wheels[host], record["data"], split / LITERALS)
    dist_info = scratch / "dist-info"
    os.rename(unpacked.root / info, dist_info)
    host_tree = tree_part(split, group, GENERIC)
    host_tree.parent.mkdir()
    os.rename(unpacked.root, host_tree)
    owned = _owned(shown, record)
    for arch, filename in sorted(record["devices"].items()):
        if filename not in wheels:
            raise WheelError(f"{shown}: its {arch} device wheel {filename} is not beside it")
        _place_device(
            wheels[filename],
            original,
            arch,
            scratch,
            split,
            (group, root_scheme, data_dir),
            max_wheel_size,
            owned.get(arch),
        )
    joined = scratch / "joined"
    join_tree(split, joined, False, max_object_size)
    files: list[tuple[str, int, Path | bytes]] = []
    for directory, _dirs, names in os.walk(joined):
        for file_name in names:
            path = Path(directory) / file_name
            files.append((path.relative_to(joined).as_posix(), path.stat().st_mode & 0o777, path))
    for inside in sorted(unpacked.info_files):
        if inside in (RECORD_NAME, "RECORD"):
            continue
        content: Path | bytes = dist_info / inside
        if inside == "METADATA":
            content = record["metadata"]
        files.append((f"{info}/{inside}", unpacked.info_modes[inside], content))
    write_wheel(out / original.filename, files, info, record["record"])
    return original.filename, dict(record["devices"])


def _copy_join_data(host: Path, expected: dict[str, Any], destination: Path) -> None:
    """Copy ``<host wheel>.gfxpack-join`` (the literal bytes of the split) to the split
    being rebuilt: a regular file, never read past the size the record gives, whose
    sha256 must be the record's."""
    path = host.with_name(host.name + JOIN_DATA)
    shown = printable(str(path))
    try:
        fd = open_regular(path, follow_symlinks=False)
    except FileNotFoundError:
        raise WheelError(f"{shown}: missing; {host.name} needs it beside it to be joined") from None
    except OSError as e:
        raise WheelError(f"{shown}: {e.strerror or e}") from None
    sha256 = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as source, open(destination, "xb") as out:
        while chunk := source.read(min(CHUNK, expected["size"] + 1 - size)):
            size += len(chunk)
            if size > expected["size"]:
                break
            sha256.update(chunk)
            out.write(chunk)
    if size != expected["size"] or sha256.hexdigest() != expected["sha256"]:
        raise WheelError(f"{shown}: not the data {host.name} was split with (size or sha256)")


def _owned(shown: str, record: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    """The record's ``owned``: for an owner's wheel holding several targets' trees
    (gfx1250 and gfx1250-strict), each target's paths; every target must be one
    :data:`gfxpack.amdgpu.OWNERS` gives that owner."""
    owned = record.get("owned", {})
    problem = f"{shown}: {RECORD_NAME}: 'owned': expected each owner's targets and their paths"
    if not isinstance(owned, dict):
        raise WheelError(problem)
    found: dict[str, dict[str, set[str]]] = {}
    for owner, targets in owned.items():
        if owner not in record["devices"] or not isinstance(targets, dict):
            raise WheelError(problem)
        for target, paths in targets.items():
            if target not in OWNERS.get(owner, ()) or not isinstance(paths, list):
                raise WheelError(problem)
            if not all(isinstance(path, str) for path in paths):
                raise WheelError(problem)
            found.setdefault(owner, {})[target] = set(paths)
    return found


def _place_device(
    wheel: Path,
    host: WheelName,
    arch: str,
    scratch: Path,
    split: Path,
    layout: tuple[str, str, str],
    max_wheel_size: int,
    owned: dict[str, set[str]] | None = None,
) -> None:
    """Put a device wheel's files back where the split of the tree wrote them: an
    owner's wheel (``owned``: each target's paths) into each of its targets' trees."""
    group, root_scheme, data_dir = layout
    unpacked = read_wheel(wheel, scratch / f"device-{arch}", max_wheel_size)
    metadata = read_metadata(printable(str(wheel)), unpacked.info_files.get("METADATA", b""))
    if (metadata.name, metadata.version) != (device_name(host.name, arch), host.version):
        raise WheelError(
            f"{wheel.name}: is {metadata.name} {metadata.version}, expected "
            f"{device_name(host.name, arch)} {host.version}"
        )
    device_data = unpacked.dist_info.removesuffix(".dist-info") + ".data"
    targets = owned if owned is not None else {arch: None}
    for member in unpacked.members:
        scheme, inside = scheme_of(member.path, device_data, "platlib")
        tree_path = inside if scheme == root_scheme else f"{data_dir}/{scheme}/{inside}"
        # Its target's trees (one, or each of an owner's that gave this path).
        places = [t for t, paths in targets.items() if paths is None or tree_path in paths]
        if not places:
            raise WheelError(
                f"{printable(str(wheel))}: {printable(member.path)}: "
                f"the split record gives it to none of {', '.join(targets)}"
            )
        for number, target in enumerate(places):
            destination = tree_part(split, group, target) / tree_path
            if os.path.lexists(destination):
                raise WheelError(
                    f"{printable(str(wheel))}: {printable(member.path)}: "
                    "the host wheel has this file too"
                )
            destination.parent.mkdir(parents=True, exist_ok=True)
            if number + 1 < len(places):
                shutil.copy2(unpacked.root / member.path, destination)
            else:
                os.rename(unpacked.root / member.path, destination)
