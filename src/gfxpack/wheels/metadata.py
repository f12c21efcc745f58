"""Names, tags and core metadata of split wheels, by PyPA's ``packaging``.

A host wheel keeps its name, version, tags and METADATA, plus one extra per arch
(``device-<arch>``, and ``device-all``) requiring that arch's device wheel at the
same version. A device wheel is ``<name>-device-<arch>`` (PEP 503 normalized),
data only: tagged ``py3-none-<the host's platforms>`` so one file serves every
Python, ``Root-Is-Purelib: false``, ``Requires-Dist: <name>==<version>``.
"""

from __future__ import annotations

import email.parser
import email.policy

from packaging.metadata import InvalidMetadata, Metadata
from packaging.tags import Tag
from packaging.utils import (
    BuildTag,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from gfxpack import __version__
from gfxpack.wheels.archive import WheelError

DEVICE_ALL = "device-all"


class WheelName:
    """What a wheel's file name says, parsed by ``packaging``."""

    def __init__(self, filename: str) -> None:
        try:
            name, version, build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename as e:
            raise WheelError(f"{filename}: not a wheel file name: {e}") from None
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


def host_metadata(where: str, original: bytes, arches: list[str]) -> bytes:
    """The host's METADATA: the original with the device extras added at the end of
    its header (the body, a long description, stays where it was); nothing else
    changes. Validated by ``packaging`` before and after."""
    metadata = read_metadata(where, original)
    name, version = metadata.name, metadata.version
    taken = set(metadata.provides_extra or []) & {extra_name(a) for a in arches} | (
        {DEVICE_ALL} & set(metadata.provides_extra or [])
    )
    if taken:
        raise WheelError(f"{where}: METADATA already offers the extra {sorted(taken)[0]!r}")
    lines = []
    for arch in arches:
        extra = extra_name(arch)
        lines.append(f"Provides-Extra: {extra}")
        lines.append(f'Requires-Dist: {device_name(name, arch)}=={version}; extra == "{extra}"')
    lines.append(f"Provides-Extra: {DEVICE_ALL}")
    for arch in arches:
        lines.append(
            f'Requires-Dist: {device_name(name, arch)}=={version}; extra == "{DEVICE_ALL}"'
        )
    added = "".join(f"{line}\n" for line in lines).encode()
    # The header ends at the first empty line (or the end of a METADATA with no body).
    newline = b"\r\n" if b"\r\n" in original.split(b"\n", 1)[0] + b"\n" else b"\n"
    end = original.find(newline * 2)
    if end < 0:
        head, tail = original.rstrip(b"\r\n") + newline, b""
    else:
        head, tail = original[: end + len(newline)], original[end + len(newline) :]
    result = head + added.replace(b"\n", newline) + tail
    read_metadata(f"{where} (with the device extras)", result)
    return result


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
