"""Debug-symbol packages: what Debian and Fedora call them and where their files go.

A host or versioned package ``X`` whose artifacts carry a ``dbg`` component gets one
more package holding that component's separate debug files (``objcopy
--only-keep-debug``), named as each distribution names the packages its own tools
make: DEB ``X-dbgsym`` (dh_strip: ``Section: debug``, ``Auto-Built-Package:
debug-symbols``, ``Build-Ids:``), RPM ``X-debuginfo`` (find-debuginfo). Each depends
on exactly its ``X``: symbols describe one build only.

The files are TheRock's ``dbg`` layout, ``.build-id/xx/yyyy.debug`` (the GNU build ID
of the stripped binary, in hex, split after two digits), and are installed under
:data:`DEBUG_ROOT`, not the install prefix: gdb, lldb, elfutils and debuginfod look for
``<debug-file-directory>/.build-id/xx/yyyy.debug``, and ``/usr/lib/debug`` is their
default directory, so a stripped binary anywhere (``/opt/rocm/core-8.2/lib``) finds its
symbols with no setting. Nothing else may be in a ``dbg`` component: any other path
would be installed into a directory that debuggers search for every binary.

>>> debug_name("amdrocm-blas-host8.2", "deb"), debug_name("amdrocm-blas-host8.2", "rpm")
('amdrocm-blas-host8.2-dbgsym', 'amdrocm-blas-host8.2-debuginfo')
>>> debug_path_problem(".build-id/ab/cdef0123456789.debug") is None
True
>>> print(debug_path_problem("lib/libx.so.debug"))
expected only .build-id/xx/yyyy.debug files (a GNU build ID in lowercase hex)
>>> build_ids(["/usr/lib/debug/.build-id/ab/cdef012345.debug", "/usr/lib/debug/.build-id/ab"])
('abcdef012345',)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from gfxpack.formats.info import PackageInfo

# The component of an artifacts tree that holds debug files.
DEBUG_COMPONENT = "dbg"
# Where debuggers look for separate debug files by default (gdb's debug-file-directory).
DEBUG_ROOT = "/usr/lib/debug"
BUILD_ID_DIR = ".build-id"
# format name -> what is appended to the name of the package whose symbols it holds
SUFFIXES = {"deb": "-dbgsym", "rpm": "-debuginfo"}
# Debian's archive sorts dbgsym packages into Section debug; Fedora's groups them here.
DEB_SECTION = "debug"
RPM_GROUP = "Development/Debug"
PRIORITY = "optional"
# dh_strip's marker of an automatically built debug package (what archive tools such
# as dak and reprepro sort into the debug archive), and the field listing the build IDs.
AUTO_BUILT = ("Auto-Built-Package", "debug-symbols")
BUILD_IDS_FIELD = "Build-Ids"
# What an RPM debuginfo package provides once per build ID it holds (rpm's
# fileattrs/debuginfo.attr).
RPM_BUILD_ID = "debuginfo(build-id)"

# format name -> the summary of the debug package of a package, as each distribution's
# own tools write it
SUMMARIES = {"deb": "debug symbols for {name}", "rpm": "Debug information for package {name}"}

# A build ID is at least 8 bytes (the shortest ld's --build-id makes: xxhash 16 hex digits
# on lld, md5 32, sha1 40); 2 digits name the directory, the rest the file.
_BUILD_ID_FILE = re.compile(r"\.build-id/([0-9a-f]{2})/([0-9a-f]{6,126})\.debug")
_BUILD_ID_DIRS = re.compile(r"\.build-id(/[0-9a-f]{2})?")
_EXPECTED = "expected only .build-id/xx/yyyy.debug files (a GNU build ID in lowercase hex)"


def debug_name(name: str, fmt: str) -> str:
    """The name of the debug package of the package ``name`` in format ``fmt``."""
    return f"{name}{SUFFIXES[fmt]}"


def debug_summary(name: str, fmt: str) -> str:
    """The summary of the debug package of the package ``name`` in format ``fmt``."""
    return SUMMARIES[fmt].format(name=name)


def debug_path_problem(relative: str, kind: str = "file") -> str | None:
    """Why ``relative`` (a path inside a ``dbg`` component's manifest prefix, an entry
    of ``kind`` file, dir or symlink) cannot go into a debug package, or None."""
    if kind == "dir" and _BUILD_ID_DIRS.fullmatch(relative):
        return None
    if kind == "file" and _BUILD_ID_FILE.fullmatch(relative):
        return None
    return _EXPECTED


def build_ids(paths: Iterable[str]) -> tuple[str, ...]:
    """The build IDs of the debug files among ``paths`` (install paths), sorted."""
    found = set()
    for path in paths:
        _, marker, tail = path.rpartition(f"/{BUILD_ID_DIR}/")
        match = _BUILD_ID_FILE.fullmatch(f"{BUILD_ID_DIR}/{tail}") if marker else None
        if match:
            found.add(match[1] + match[2])
    return tuple(sorted(found))


def debug_info(info: PackageInfo, owner: str, fmt: str) -> PackageInfo:
    """``info`` of a debug package (its name, relations, entries and the base's
    fields) made what the distribution's tools make of one: the summary, section or
    group naming ``owner`` (the package whose symbols it holds), installed under
    :data:`DEBUG_ROOT` (an RPM's relocation prefix), no maintainer scripts, DEB's
    Auto-Built-Package and Build-Ids fields and RPM's ``debuginfo(build-id)``
    Provides."""
    ids = build_ids(entry.path for entry in info.entries if entry.is_file)
    fields = [AUTO_BUILT] + ([(BUILD_IDS_FIELD, " ".join(ids))] if ids else [])
    # find-debuginfo's Provides, by which dnf's debuginfo-install finds the package of
    # the build ID gdb names.
    build_id_provides = tuple(f"{RPM_BUILD_ID} = {build_id}" for build_id in ids)
    return dataclasses.replace(
        info,
        provides=(*info.provides, *build_id_provides) if fmt == "rpm" else info.provides,
        summary=debug_summary(owner, fmt),
        description="",
        section=DEB_SECTION,
        priority=PRIORITY,
        group=RPM_GROUP,
        prefix=DEBUG_ROOT,
        scripts={},
        triggers=(),
        control_fields=tuple(fields) if fmt == "deb" else (),
    )
