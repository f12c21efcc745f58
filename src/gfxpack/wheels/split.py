"""Split fat wheels: one host wheel, one data-only device wheel per GPU arch.

Each wheel is unpacked into a scratch directory (checked member by member, see
:mod:`gfxpack.wheels.archive`) and split as an install tree by
:func:`gfxpack.fatbin.split.split`, the splitter of every other input, into a
:class:`~gfxpack.wheels.destination.WheelDestination`: the wheels' members, not a
tree walked back (files the split leaves as they are go into the wheels from where
they were unpacked). Fat libraries keep their host code and a reference to
``<their directory>/.kpack/<name>_lib_@GFXARCH@.kpack`` (the common directory of
the wheel's fat libraries), files named for one arch move to that arch. The host
wheel gets the rewritten tree; each device wheel installs its archives and files
into the same place of the same scheme (``platlib`` at its root, any other under
``.data/<scheme>/``), so the installed library finds them beside it.

A host wheel requiring another distribution split in the same run (split first) or
published in ``--index`` passes each ``device-<arch>`` extra on to it
(``<it>[device-<arch>]``), so one install brings that arch's device code of both.

The host wheel's dist-info also holds ``gfxpack-split.msgpack``: what
:mod:`gfxpack.wheels.join` needs to give back the original files. When that needs
long literal bytes (compressed bundles: their zstd bytes cannot be made again from
the code objects), they go to ``<host wheel>.gfxpack-join`` beside the wheels, not
into any wheel: no installer reads it, and the host wheel stays small.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, file_digests, replace_directory
from gfxpack.amdgpu import owner_of
from gfxpack.artifact_layout import GENERIC, artifact_name
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.source import check_source, read_source
from gfxpack.fatbin.split import split as split_parts
from gfxpack.plan.targets import target_order
from gfxpack.regular_files import printable, same_bytes
from gfxpack.wheels.archive import (
    DEFAULT_MAX_WHEEL_SIZE,
    INFO_LIMIT,
    Unpacked,
    WheelError,
    check_out,
    output_refused,
    read_wheel,
    temporary_beside,
    wheel_inputs,
    wheel_sizes,
    write_wheel,
)
from gfxpack.wheels.destination import WheelDestination
from gfxpack.wheels.metadata import (
    DEVICE_ALL,
    Dependency,
    WheelName,
    check_host_metadata,
    check_identity,
    core_fields,
    device_filename,
    device_metadata,
    device_name,
    device_wheel_file,
    dist_info_name,
    extra_name,
    host_metadata,
    wheel_file,
    wheel_tags_note,
)

RECORD_NAME = "gfxpack-split.msgpack"  # in the host's dist-info
JOIN_DATA = ".gfxpack-join"  # beside the host wheel: <its file name>.gfxpack-join
RECORD_FORMAT = 1
TREE = "tree"  # the unpacked wheel in the scratch directory
SPOOL = "spool"  # the files the split makes, there (see WheelDestination)
ELF_MAGIC = b"\x7fELF"


# Told what a split is doing: (what, steps done, steps in all) for the wheel at hand.
OnStep = Callable[[str, int, int], None]


@dataclass
class WheelSplit:
    """What one wheel became (or, joining, was made of), and what each costs: see
    :func:`measure`."""

    source: str
    host: str
    devices: dict[str, str] = field(default_factory=dict)  # arch -> device wheel
    notes: list[str] = field(default_factory=list)
    sizes: dict[str, Any] = field(default_factory=dict)


def measure(fat: Path, host: Path, devices: dict[str, Path]) -> dict[str, Any]:
    """Download and installed bytes (:func:`wheel_sizes`) of the fat wheel, the host
    wheel, each device wheel, and of the host with the largest arch's wheel: what one
    GPU's install costs against the fat wheel, at worst."""
    sizes: dict[str, Any] = {
        "fat": wheel_sizes(fat),
        "host": wheel_sizes(host),
        "devices": {arch: wheel_sizes(path) for arch, path in devices.items()},
    }
    if devices:
        arch = max(devices, key=lambda a: sizes["devices"][a]["download"])
        sizes["host_and_one_arch"] = {
            "arch": arch,
            **{k: sizes["host"][k] + sizes["devices"][arch][k] for k in ("download", "installed")},
        }
    return sizes


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
    on_step: OnStep | None = None,
    published: Path | None = None,
) -> list[WheelSplit]:
    """Split every wheel of ``source`` into the new directory ``out`` (written under a
    temporary name, renamed when complete). A wheel requiring another split in the same
    run is split after it, so that its extras pass each arch on to it, as to those split
    earlier and ``published`` (:func:`split_published`); the results are in input order."""
    source, out = Path(source), Path(out)
    wheels = wheel_inputs(source)
    check_out(out, force, wheels)
    split_before = split_published(published) if published is not None else {}
    temporary = temporary_beside(out)
    results: dict[Path, WheelSplit] = {}
    try:
        for number, wheel in enumerate(_dependencies_first(wheels)):
            scratch = temporary / f".scratch-{number}"
            scratch.mkdir()
            try:
                result = _split_one(
                    wheel,
                    temporary,
                    scratch,
                    (jobs, max_object_size, max_wheel_size),
                    (split_before, on_step),
                )
                results[wheel] = result
                name = WheelName(wheel.name)
                split_before.setdefault(name.name, []).append((name.version, list(result.devices)))
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
    for wheel, result in results.items():
        devices = {arch: out / name for arch, name in result.devices.items()}
        result.sizes = measure(wheel, out / result.host, devices)
    return [results[wheel] for wheel in wheels]


# Split distributions by name: each version's (version, arches).
Split = dict[NormalizedName, list[tuple[Version, list[str]]]]


def _metadata_of(wheel: Path) -> bytes:
    """A wheel's METADATA, read leniently (empty when it cannot be read: the split
    itself reports that, and a published wheel was checked when published)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            info = [
                i
                for i in archive.infolist()
                if i.filename.count("/") == 1
                and i.filename.split("/")[0].endswith(".dist-info")
                and i.filename.endswith("/METADATA")
                and i.file_size <= INFO_LIMIT
            ]
            return archive.read(info[0]) if len(info) == 1 else b""
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, NotImplementedError):
        return b""


def split_published(directory: Path) -> Split:
    """The split distributions (those offering device extras) of an index gfxpack index
    wrote (its ``files/``) or of a directory of wheels; symlinks are not followed."""
    files = directory / "files"
    if files.is_symlink() or not files.is_dir():  # never followed out of DIR
        files = directory
    try:
        paths = sorted(p for p in files.iterdir() if p.suffix == ".whl")
    except OSError as e:
        raise WheelError(f"{printable(str(directory))}: cannot read: {e.strerror or e}") from None
    found: Split = {}
    for path in paths:
        if path.is_symlink() or not path.is_file():
            continue
        try:
            name = WheelName(path.name)
        except WheelError:
            continue
        extras = core_fields(_metadata_of(path)).provides_extra
        arches = [e.removeprefix("device-") for e in extras if e.startswith("device-")]
        arches = [a for a in arches if a != DEVICE_ALL.removeprefix("device-")]
        if arches:
            found.setdefault(name.name, []).append((name.version, arches))
    return found


def _requires(wheel: Path) -> set[NormalizedName]:
    """The distributions a wheel's METADATA requires (read leniently)."""
    raw, _unparsed = parse_email(_metadata_of(wheel))
    names = set()
    for line in raw.get("requires_dist", []):
        with contextlib.suppress(InvalidRequirement):
            names.add(canonicalize_name(Requirement(line).name))
    return names


def _dependencies_first(wheels: list[Path]) -> list[Path]:
    """``wheels`` ordered so that a wheel comes after those it requires (input order
    otherwise; a cycle is broken at the first wheel of it met)."""
    named = {}
    for wheel in wheels:
        with contextlib.suppress(WheelError):  # the split names a bad file name
            named[wheel] = WheelName(wheel.name).name
    ordered: list[Path] = []
    visiting: set[Path] = set()

    def visit(wheel: Path) -> None:
        if wheel in ordered or wheel in visiting:
            return
        visiting.add(wheel)
        needed = _requires(wheel) if wheel in named else set()
        for other in wheels:
            if other is not wheel and named.get(other) in needed:
                visit(other)
        ordered.append(wheel)

    for wheel in wheels:
        visit(wheel)
    return ordered


Before = tuple[Split, OnStep | None]


def _split_one(
    wheel: Path, out: Path, scratch: Path, limits: tuple[int, int, int], before: Before
) -> WheelSplit:
    """Split one wheel; what the splitter of trees says names the wheel's members,
    not the scratch directory they were unpacked to."""
    shown = printable(str(wheel))
    unpacked_at = f"{scratch / TREE}/"
    try:
        result = _split_unpacked(wheel, out, scratch, limits, before)
    except GfxpackError as e:
        raise WheelError(str(e).replace(unpacked_at, f"{shown}: member ")) from None
    result.notes = [note.replace(unpacked_at, f"{shown}: member ") for note in result.notes]
    return result


def _split_unpacked(
    wheel: Path, out: Path, scratch: Path, limits: tuple[int, int, int], before: Before
) -> WheelSplit:
    jobs, max_object_size, max_wheel_size = limits
    split_before, on_step = before

    def step(what: str, done: int, total: int) -> None:
        if on_step is not None:
            on_step(f"{wheel.name}: {what}", done, total)

    name = WheelName(wheel.name)
    shown = printable(str(wheel))
    if (out / wheel.name).exists():
        raise WheelError(f"{wheel}: two input wheels have the file name {wheel.name}")
    step("unpacking", 0, 3)
    unpacked = read_wheel(wheel, scratch / TREE, max_wheel_size)
    expected = dist_info_name(name.name, name.version)
    if unpacked.dist_info.lower() != expected.lower():
        raise WheelError(f"{shown}: its dist-info is {unpacked.dist_info}, expected {expected}")
    for needed in ("METADATA", "WHEEL"):
        if needed not in unpacked.info_files:
            raise WheelError(f"{shown}: no {unpacked.dist_info}/{needed}")
    check_identity(shown, unpacked.info_files["METADATA"], name)
    fields = wheel_file(shown, unpacked.info_files["WHEEL"])
    input_notes = (
        [note] if (note := wheel_tags_note(shown, unpacked.info_files["WHEEL"], name)) else []
    )
    root_scheme = "purelib" if fields["Root-Is-Purelib"].lower() == "true" else "platlib"
    data_dir = unpacked.dist_info.removesuffix(".dist-info") + ".data"
    fat = _fat_libraries(unpacked, max_object_size)
    if not fat:
        shutil.copyfile(wheel, out / wheel.name)
        notes = [*input_notes, f"{shown}: no device code; copied"]
        return WheelSplit(wheel.name, wheel.name, notes=notes)
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
    step("splitting the device code", 1, 3)
    read = read_source(scratch / TREE, group, check_source(scratch / TREE, kpack_dir))
    (scratch / SPOOL).mkdir()
    split = WheelDestination(scratch / SPOOL, group, shown)
    report = split_parts(read, split, jobs, max_object_size)
    arches = sorted(report.arches, key=target_order)
    if not arches:  # every fat library kept whole (see the notes)
        shutil.copyfile(wheel, out / wheel.name)
        notes = [*input_notes, *report.notes, f"{shown}: copied"]
        return WheelSplit(wheel.name, wheel.name, notes=notes)
    assert split.index is not None  # the split record is the last thing split writes
    literals = split.literals()
    join_data = None
    if literals.stat().st_size:
        size, (sha256,) = file_digests(literals, "sha256")
        join_data = {"size": size, "sha256": sha256}
    # One device wheel per owner: gfx1250-strict's archives go into device-gfx1250.
    owned = owners(arches)
    devices = {arch: device_filename(name, arch) for arch in owned}
    record = {
        "format": RECORD_FORMAT,
        "wheel": wheel.name,
        "group": group,
        "root_scheme": root_scheme,
        "data_dir": data_dir,
        "index": split.index,
        "metadata": unpacked.info_files["METADATA"],
        "record": unpacked.info_files["RECORD"],
        "devices": devices,
        "data": join_data,
        # An owner's wheel holding several targets' trees: which paths are whose, so
        # that join puts each back in its own target's directory.
        "owned": {
            arch: {t: [p for p, _, _ in split.files(t)] for t in targets}
            for arch, targets in owned.items()
            if len(targets) > 1
        },
    }
    info = unpacked.dist_info
    notes = [*input_notes, *report.notes]
    dependencies = _dependencies(
        shown, unpacked.info_files["METADATA"], list(owned), split_before, notes
    )
    host_files = split.files(GENERIC)
    for inside, data in sorted(unpacked.info_files.items()):
        if inside == "RECORD":
            continue
        if inside == "METADATA":
            data = host_metadata(shown, data, name, list(owned), dependencies, notes)
        host_files.append((f"{info}/{inside}", unpacked.info_modes[inside], data))
    host_files.append((f"{info}/{RECORD_NAME}", 0o644, msgpack.packb(record, use_bin_type=True)))
    if join_data is not None:
        os.rename(literals, out / f"{wheel.name}{JOIN_DATA}")
    total = 3 + len(owned)
    step("writing the host wheel", 2, total)
    write_wheel(out / wheel.name, host_files, info)
    result = WheelSplit(wheel.name, wheel.name, notes=notes)
    summary = _summary(unpacked)
    for number, (arch, targets) in enumerate(owned.items()):
        step(f"writing the {arch} device wheel", 3 + number, total)
        device = devices[arch]
        device_info = dist_info_name(device_name(name.name, arch), name.version)
        files: list[tuple[str, int, Path | bytes]] = []
        for tree_path, mode, path in _owner_files(shown, split, group, targets):
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
    step("done", total, total)
    return result


def owners(arches: list[str]) -> dict[str, list[str]]:
    """The split's arches by owner (:data:`gfxpack.amdgpu.OWNERS`), in target order:
    each owner's device wheel carries the code of every target it owns."""
    by_owner: dict[str, list[str]] = {}
    for arch in sorted(arches, key=target_order):
        by_owner.setdefault(owner_of(arch), []).append(arch)
    return by_owner


def _owner_files(
    shown: str, split: WheelDestination, group: str, targets: list[str]
) -> list[tuple[str, int, Path | bytes]]:
    """The files of an owner's device wheel: every one of its targets' trees, each
    keeping its own names (``..._gfx1250-strict.kpack``). A path two targets both
    give is one file when the two are the same (mode and bytes); otherwise an error
    naming both directories and the path."""
    found: dict[str, tuple[int, Path | bytes, str]] = {}
    for target in targets:
        directory = artifact_name(group, target)
        for tree_path, mode, path in split.files(target):
            first = found.setdefault(tree_path, (mode, path, directory))
            if first[2] == directory:
                continue
            same = (
                first[0] == mode
                and isinstance(first[1], Path)
                and isinstance(path, Path)
                and same_bytes(first[1], path)
            )
            if not same:
                raise WheelError(
                    f"{shown}: {printable(tree_path)} comes from both {first[2]} and "
                    f"{directory}, with different contents; both go into one device "
                    f"wheel ({extra_name(owner_of(target))})"
                )
    return sorted(((p, mode, path) for p, (mode, path, _) in found.items()), key=lambda f: f[0])


def _dependencies(
    shown: str,
    metadata: bytes,
    arches: list[str],
    split_before: Split,
    notes: list[str],
) -> list[Dependency]:
    """The split distributions (earlier in this run, or published) that every install of
    the host requires, at the newest version its requirement admits: its extras pass each
    arch on to them. An arch of the host one of them lacks is a note: installing the host
    for it leaves that one without."""
    raw, _unparsed = parse_email(metadata)
    found = []
    for line in raw.get("requires_dist", []):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue  # a note of the METADATA already
        if requirement.extras or (
            requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})
        ):
            continue  # behind an extra (the host's own, or asked of it): not every install's
        admitted = [
            (version, its_arches)
            for version, its_arches in split_before.get(canonicalize_name(requirement.name), [])
            if requirement.specifier.contains(version, prereleases=True)
        ]
        if not admitted:
            continue
        version, its_arches = max(admitted, key=lambda split: split[0])
        found.append(Dependency(requirement, its_arches))
        if missing := [a for a in arches if a not in its_arches]:
            notes.append(
                f"{shown}: requires {requirement.name}, split ({version}) without device code "
                f"for {', '.join(missing)}: its extras for those arches cannot pass them on"
            )
    return found


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
