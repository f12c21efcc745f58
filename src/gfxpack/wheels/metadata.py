"""Names, tags and core metadata of split wheels, by PyPA's ``packaging``.

A host wheel keeps its name, version, tags and METADATA, plus one extra per arch
(``device-<arch>``, and ``device-all``) requiring that arch's device wheel at the
same version. A device wheel is ``<name>-device-<arch>`` (PEP 503 normalized),
data only: tagged ``py3-none-<the host's platforms>`` so one file serves every
Python, ``Root-Is-Purelib: false``, ``Requires-Dist: <name>==<version>``.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import re
from dataclasses import dataclass

from packaging.metadata import InvalidMetadata, Metadata, parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, parse_tag
from packaging.utils import (
    BuildTag,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from gfxpack import __version__
from gfxpack.regular_files import printable
from gfxpack.wheels.archive import WheelError

DEVICE_ALL = "device-all"
# The binary distribution format escapes every run of other characters in a file name
# component to "_"; packaging parses tags without checking them, and a "%", "#", "+"
# or quote in a tag would be one more thing every index URL and page must escape.
TAG = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")
BUILD_TAG = re.compile(r"[0-9][A-Za-z0-9_]*")
# A header or continuation line to the email parser (email.feedparser.headerRE, which
# typeshed does not declare; a test keeps the two equal).
EMAIL_HEADER = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")


class WheelName:
    """What a wheel's file name says, parsed by ``packaging``."""

    def __init__(self, filename: str) -> None:
        try:
            name, version, build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename as e:
            raise WheelError(f"{printable(filename)}: not a wheel file name: {e}") from None
        parts = filename.removesuffix(".whl").split("-")
        for part in parts[-3:]:
            if not TAG.fullmatch(part):
                raise WheelError(
                    f"{printable(filename)}: the tag {printable(part)!r} holds characters "
                    "outside the wheel spec's (letters, digits and '_'; '.' between tags)"
                )
        if build and not BUILD_TAG.fullmatch(parts[2]):
            raise WheelError(
                f"{printable(filename)}: the build tag {printable(parts[2])!r} holds characters "
                "outside the wheel spec's (a digit, then letters, digits and '_')"
            )
        self.filename = filename
        self.name: NormalizedName = name
        self.version: Version = version
        self.build: BuildTag = build
        self.tags: frozenset[Tag] = tags

    @property
    def platforms(self) -> list[str]:
        return sorted({tag.platform for tag in self.tags})


def file_component(name: str) -> str:
    """A distribution name as a wheel file name spells it (binary distribution format:
    normalized, ``-`` as ``_``)."""
    return canonicalize_name(name).replace("-", "_")


def device_name(host: str, arch: str) -> NormalizedName:
    return canonicalize_name(f"{host}-device-{arch}")


def extra_name(arch: str) -> str:
    return f"device-{arch}"


def device_filename(host: WheelName, arch: str) -> str:
    build = f"-{host.build[0]}{host.build[1]}" if host.build else ""
    return (
        f"{file_component(device_name(host.name, arch))}-{host.version}{build}"
        f"-py3-none-{'.'.join(host.platforms)}.whl"
    )


def dist_info_name(name: str, version: Version) -> str:
    return f"{file_component(name)}-{version}.dist-info"


def read_metadata(where: str, data: bytes) -> Metadata:
    """METADATA, parsed and validated by ``packaging`` (one error naming the wheel)."""
    try:
        return Metadata.from_email(data, validate=True)
    except (InvalidMetadata, ExceptionGroup, ValueError) as e:
        problems = e.exceptions if isinstance(e, ExceptionGroup) else [e]
        raise WheelError(f"{where}: METADATA: {'; '.join(map(str, problems))}") from None


def wheel_file(where: str, data: bytes) -> dict[str, str]:
    """The fields of a WHEEL file (an email header block)."""
    try:
        headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise WheelError(f"{where}: WHEEL unreadable: {e}") from None
    fields = {key: str(value).strip() for key, value in headers.items()}
    if not fields.get("Wheel-Version", "").startswith("1."):
        raise WheelError(f"{where}: WHEEL: expected Wheel-Version 1.x")
    if fields.get("Root-Is-Purelib", "").lower() not in ("true", "false"):
        raise WheelError(f"{where}: WHEEL: expected Root-Is-Purelib true or false")
    return fields


def check_identity(where: str, data: bytes, wheel: WheelName) -> None:
    """METADATA's Name and Version must be the file name's (pip refuses the wheel
    otherwise, and extras built from either would name wheels never written).
    Read by ``packaging``'s raw parser, which never refuses lax metadata."""
    raw, _unparsed = parse_email(data)
    name, version = raw.get("name", ""), raw.get("version", "")
    try:
        same_version = Version(version) == wheel.version
    except InvalidVersion:
        same_version = False
    if canonicalize_name(name) != wheel.name or not same_version:
        raise WheelError(
            f"{where}: METADATA says {printable(name or '(no Name)')} "
            f"{printable(version or '(no Version)')}, the file name {wheel.name} "
            f"{wheel.version}; they must agree"
        )


def header_end(data: bytes) -> tuple[int, bytes]:
    """Where the header block of an email-format file ends (just past its last header
    line) and that line's ending, as the email parser pip and ``packaging`` use ends
    it: at the first empty line whatever the line endings (``\\n``, ``\\r\\n`` or a lone
    ``\\r``, mixed or not: ``bytes.splitlines`` splits on exactly those three), or
    at the first line that is neither a header nor a continuation (the body starts
    there, without the empty line)."""
    at, ending = 0, b""
    for line in data.splitlines(keepends=True):
        text = line.rstrip(b"\r\n")
        if not text or not EMAIL_HEADER.match(text.decode("latin-1")):
            break
        at, ending = at + len(line), line[len(text) :]
    return at, ending


def strict_problems(data: bytes) -> list[str]:
    """What ``packaging``'s strict validation says of a METADATA (nothing: valid).

    Real wheels fail it and install all the same (a field newer than the declared
    Metadata-Version, a legacy field): pip and uv read METADATA with the email parser
    and take what they need, so gfxpack reports these and goes on."""
    try:
        Metadata.from_email(data, validate=True)
    except (InvalidMetadata, ExceptionGroup, ValueError) as e:
        return [str(p) for p in (e.exceptions if isinstance(e, ExceptionGroup) else [e])]
    return []


@dataclass
class CoreFields:
    """The fields of a METADATA that installers read, as they read it (lax): a
    requirement ``packaging`` cannot parse is left out and named in ``problems``."""

    requires_dist: list[Requirement]
    provides_extra: list[str]
    requires_python: SpecifierSet | None
    problems: list[str]


def core_fields(data: bytes) -> CoreFields:
    raw, _unparsed = parse_email(data)
    problems = strict_problems(data)
    requirements = []
    for line in raw.get("requires_dist", []):
        try:
            requirements.append(Requirement(line))
        except InvalidRequirement:
            continue  # in problems already: strict validation parses every requirement
    requires_python = None
    if (python := raw.get("requires_python")) is not None:
        with contextlib.suppress(InvalidSpecifier):  # in problems already
            requires_python = SpecifierSet(python)
    extras: list[str] = [canonicalize_name(e) for e in raw.get("provides_extra", [])]
    return CoreFields(requirements, extras, requires_python, problems)


@dataclass
class Dependency:
    """Another distribution split in the same run that a host wheel requires: its
    ``device-<arch>`` extras are passed on (``<name>[device-<arch>]``), so installing
    the host for one arch installs the dependency's device code for it too."""

    requirement: Requirement  # the host's own requirement of it
    arches: list[str]


def dependency_lines(dependency: Dependency, arches: list[str]) -> list[tuple[str, str]]:
    """(extra, Requires-Dist value) passing each shared arch (and device-all) on."""
    requirement = dependency.requirement
    name = canonicalize_name(requirement.name)
    marker = f"({requirement.marker}) and " if requirement.marker is not None else ""
    lines = []
    for extra in [extra_name(a) for a in arches if a in dependency.arches] + [DEVICE_ALL]:
        lines.append((extra, f'{name}[{extra}]{requirement.specifier}; {marker}extra == "{extra}"'))
    return lines


# The Metadata-Version that introduced Provides-Extra (core metadata, PEP 566).
EXTRAS_VERSION = "2.1"
_METADATA_VERSION = re.compile(rb"^Metadata-Version:[ \t]*([^\r\n]*)", re.MULTILINE | re.IGNORECASE)


def _raise_version(where: str, data: bytes, notes: list[str]) -> bytes:
    """``data`` declaring at least 2.1, the version the added Provides-Extra needs
    (said in a note); unchanged when it declares 2.1 or later already."""
    found = _METADATA_VERSION.search(data, 0, header_end(data)[0])  # the header's only
    declared = found.group(1).decode("latin-1").strip() if found else ""
    try:
        if Version(declared) >= Version(EXTRAS_VERSION):
            return data
    except InvalidVersion:
        pass
    notes.append(
        f"{where}: METADATA: Metadata-Version raised from {printable(declared or '(none)')} "
        f"to {EXTRAS_VERSION}: the Provides-Extra lines added need it"
    )
    if found is None:
        return f"Metadata-Version: {EXTRAS_VERSION}\n".encode() + data
    return data[: found.start(1)] + EXTRAS_VERSION.encode() + data[found.end(1) :]


def host_metadata(
    where: str,
    original: bytes,
    host: WheelName,
    arches: list[str],
    dependencies: list[Dependency] | None = None,
    notes: list[str] | None = None,
) -> bytes:
    """The host's METADATA: the original, byte for byte, with the device extras added
    at the end of its header (the body, a long description, stays where it was) in the
    line ending of its last header line; its Metadata-Version raised to 2.1 only when
    it declares less (Provides-Extra needs 2.1). Names and versions are the file name's
    (``check_identity``). What strict validation finds in the original, installers
    accept: each is a note (appended to ``notes``), not an error; a valid original
    must stay valid."""
    notes = [] if notes is None else notes
    fields = core_fields(original)
    notes += [f"{where}: METADATA: {p} (installers accept it; kept)" for p in fields.problems]
    name, version = host.name, host.version
    offered = set(fields.provides_extra)
    taken = sorted(offered & ({extra_name(a) for a in arches} | {DEVICE_ALL}))
    if taken:
        raise WheelError(f"{where}: METADATA already offers the extra {taken[0]!r}")
    added: list[tuple[str, str]] = []
    for arch in arches:
        added.append(
            (
                extra_name(arch),
                f'{device_name(name, arch)}=={version}; extra == "{extra_name(arch)}"',
            )
        )
    for arch in arches:
        added.append((DEVICE_ALL, f'{device_name(name, arch)}=={version}; extra == "{DEVICE_ALL}"'))
    for dependency in dependencies or []:
        added += dependency_lines(dependency, arches)
    lines = []
    for extra in [extra_name(a) for a in arches] + [DEVICE_ALL]:
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {value}" for of, value in added if of == extra]
    end, newline = header_end(original)
    head = original[:end]
    if not newline:  # a header ending the file without a line ending: it gets one
        newline = b"\n"
        head += newline
    result = head + b"".join(line.encode() + newline for line in lines) + original[end:]
    result = _raise_version(where, result, notes)
    if not fields.problems:
        read_metadata(f"{where} (with the device extras)", result)
    return result


def check_host_metadata(where: str, written: bytes, devices: dict[str, str]) -> None:
    """The host METADATA as written, read back as installers read it (``packaging``'s
    raw parser: the email parser pip uses), must offer ``device-<arch>`` and
    ``device-all`` requiring each device wheel (arch: its file name) by the name and
    exact version in that file name."""
    raw, _unparsed = parse_email(written)
    extras = {canonicalize_name(e) for e in raw.get("provides_extra", [])}
    requirements = []
    for line in raw.get("requires_dist", []):
        try:
            requirements.append(Requirement(line))
        except InvalidRequirement:
            continue  # validated before it was written; not one of ours
    for arch, filename in devices.items():  # in the order split made them (target order)
        device = WheelName(filename)
        for extra in (extra_name(arch), DEVICE_ALL):
            offered = extra in extras and any(
                canonicalize_name(r.name) == device.name
                and r.specifier == SpecifierSet(f"=={device.version}")
                and r.marker is not None
                and r.marker.evaluate({"extra": extra})
                and not r.marker.evaluate({"extra": ""})
                for r in requirements
            )
            if not offered:
                raise WheelError(
                    f"{where}: the host METADATA, read back, does not offer the extra {extra} "
                    f"requiring {device.name}=={device.version} ({filename}); "
                    "an installer would install no device code"
                )


def device_metadata(host: WheelName, arch: str, summary_of: str) -> bytes:
    """METADATA 2.4 of a device wheel, validated by ``packaging``."""
    name = device_name(host.name, arch)
    text = (
        "Metadata-Version: 2.4\n"
        f"Name: {name}\n"
        f"Version: {host.version}\n"
        f"Summary: {arch} device code of {summary_of} (split by gfxpack)\n"
        f"Requires-Dist: {host.name}=={host.version}\n"
    ).encode()
    read_metadata(f"{device_filename(host, arch)}", text)
    return text


def device_wheel_file(host: WheelName) -> bytes:
    """WHEEL of a device wheel: data only, one tag per host platform."""
    tags = "".join(f"Tag: py3-none-{platform}\n" for platform in host.platforms)
    build = f"Build: {host.build[0]}{host.build[1]}\n" if host.build else ""
    return (
        "Wheel-Version: 1.0\n"
        f"Generator: gfxpack {__version__}\n"
        "Root-Is-Purelib: false\n"
        f"{tags}{build}"
    ).encode()


def wheel_tags_note(where: str, data: bytes, wheel: WheelName) -> str | None:
    """A note when the WHEEL file's ``Tag`` lines are not the file name's tags: pip,
    uv and ``installer`` go by the file name and install such a wheel, so it is a
    defect to report, not to refuse."""
    headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(data)
    declared = set()
    for value in headers.get_all("Tag") or []:
        with contextlib.suppress(ValueError):
            declared |= set(parse_tag(str(value).strip()))
    if declared == set(wheel.tags):
        return None
    shown = ", ".join(sorted(map(str, declared))) or "none"
    return (
        f"{where}: WHEEL: its Tag lines ({printable(shown)}) are not the file name's "
        f"({', '.join(sorted(map(str, wheel.tags)))}); installers go by the file name"
    )
