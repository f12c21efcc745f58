"""Debian binary packages (format 2.0), written natively.

A .deb is an ar archive of ``debian-binary``, ``control.tar.<ext>`` and
``data.tar.<ext>`` (deb(5)). The data tar is written first, to a temporary
file, because ``md5sums`` in the control tar needs every file's digest: each
file is read once, hashed while it is compressed.
"""

from __future__ import annotations

import math
import shutil
import textwrap
from typing import IO

from gfxpack._io import Writable, spool
from gfxpack.formats.compress import DEB_SUFFIX, compressing
from gfxpack.formats.info import PackageInfo
from gfxpack.formats.payload import (
    Entry,
    EntryKind,
    archive_size_hint,
    installed_size,
    with_parents,
    write_tar,
)

AR_MAGIC = b"!<arch>\n"
AR_MAX_SIZE = 9_999_999_999
SCRIPTS = ("preinst", "postinst", "prerm", "postrm")


def filename(info: PackageInfo) -> str:
    # dpkg's convention: name_version_arch.deb (no epoch here).
    return f"{info.name}_{info.full_version}_{info.arch}.deb"


def control_text(info: PackageInfo) -> str:
    """The control file: fields in dpkg's customary order, empty ones left out."""
    fields = [
        ("Package", info.name),
        ("Version", info.full_version),
        ("Architecture", info.arch),
        ("Maintainer", info.maintainer),
        ("Installed-Size", str(math.ceil(installed_size(info.entries) / 1024))),
        ("Depends", ", ".join(info.depends)),
        ("Recommends", ", ".join(info.recommends)),
        ("Suggests", ", ".join(info.suggests)),
        ("Conflicts", ", ".join(info.conflicts)),
        ("Replaces", ", ".join(info.replaces)),
        ("Provides", ", ".join(info.provides)),
        ("Section", info.section),
        ("Priority", info.priority),
        ("Homepage", info.homepage),
        *info.control_fields,
    ]
    lines = [f"{name}: {_one_line(value)}" for name, value in fields if value]
    lines.append(f"Description: {_one_line(info.summary or info.name)}")
    lines.extend(description_lines(info.description))
    return "\n".join(lines) + "\n"


def description_lines(text: str, width: int = 79) -> list[str]:
    """The extended description: folded at ``width``, blank lines as ' .'.

    >>> description_lines("First paragraph.\\n\\n  verbatim line")
    [' First paragraph.', ' .', '   verbatim line']
    """
    lines: list[str] = []
    for paragraph in text.strip("\n").split("\n\n") if text.strip() else []:
        if lines:
            lines.append(" .")
        for line in paragraph.split("\n"):
            if line.startswith((" ", "\t")):
                lines.append(" " + line.rstrip())  # preformatted: dpkg shows it as is
            elif line.strip():
                lines.extend(
                    textwrap.wrap(
                        line,
                        width,
                        initial_indent=" ",
                        subsequent_indent=" ",
                        break_long_words=False,
                        break_on_hyphens=False,
                    )
                )
    return lines


def _one_line(value: str) -> str:
    return " ".join(value.split())


def write(info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
    suffix = DEB_SUFFIX[info.compression.codec]
    entries = with_parents(info.entries, info.mtime)
    with spool(scratch) as data:
        with compressing(data, info.compression, archive_size_hint(entries)) as stream:
            digests = write_tar(stream, entries, info.mtime)
        data_size = data.tell()
        md5sums = "".join(
            f"{digests[e.path]}  {e.path.lstrip('/')}\n" for e in entries if e.is_file
        )
        members = [("/control", 0o644, control_text(info))]
        if md5sums:
            members.append(("/md5sums", 0o644, md5sums))
        members += [
            (f"/{name}", 0o755, info.scripts[name]) for name in SCRIPTS if name in info.scripts
        ]
        if info.triggers:  # deb-triggers(5); dpkg runs postinst "triggered"
            members.append(("/triggers", 0o644, "".join(f"{t}\n" for t in info.triggers)))
        control = tuple(_inline(path, mode, text, info.mtime) for path, mode, text in members)
        with spool(scratch) as control_tar:
            with compressing(control_tar, info.compression, archive_size_hint(control)) as stream:
                write_tar(stream, control, info.mtime)
            out.write(AR_MAGIC)
            _ar_member(out, "debian-binary", b"2.0\n", info.mtime)
            _ar_copy(out, f"control.tar{suffix}", control_tar, info.mtime)
            data.seek(0)
            _ar_header(out, f"data.tar{suffix}", data_size, info.mtime)
            shutil.copyfileobj(data, out, 1 << 20)
            out.write(b"\n" * (data_size % 2))


def _inline(path: str, mode: int, text: str, mtime: int) -> Entry:
    """A control.tar member: a file of ``text``."""
    data = text.encode()
    return Entry(path, EntryKind.FILE, mode, len(data), data=data, mtime=mtime)


def _ar_header(out: Writable, name: str, size: int, mtime: int) -> None:
    if size > AR_MAX_SIZE:
        # ar's size field has ten decimal digits; a longer number would shift the header.
        raise OSError(f"{name} is {size:,} bytes; a .deb member holds at most {AR_MAX_SIZE:,}")
    header = f"{name:<16}{mtime:<12}{0:<6}{0:<6}{0o100644:<8o}{size:<10}`\n"
    out.write(header.encode("ascii"))


def _ar_member(out: Writable, name: str, data: bytes, mtime: int) -> None:
    _ar_header(out, name, len(data), mtime)
    out.write(data + b"\n" * (len(data) % 2))


def _ar_copy(out: Writable, name: str, file: IO[bytes], mtime: int) -> None:
    size = file.tell()
    file.seek(0)
    _ar_header(out, name, size, mtime)
    shutil.copyfileobj(file, out, 1 << 20)
    out.write(b"\n" * (size % 2))
