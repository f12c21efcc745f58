"""What rpm's scriptlets run in a throwaway root: rpm runs them chrooted into the root,
which holds no shell until a package brings one, so the root gets this machine's
``/bin/sh``, ``update-alternatives`` and ``ldconfig``, with the libraries they load and
the directories they keep their state in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gfxpack.trial.tools import TrialError, installer, which

# What rpm's scriptlets run, copied from this machine into the root they run chrooted in:
# where to find each here, and where it goes there.
SCRIPTLET_TOOLS = (
    (("dash", "sh"), "bin/sh"),
    (("update-alternatives",), "usr/sbin/update-alternatives"),
    (("ldconfig",), "sbin/ldconfig"),
)
# update-alternatives' state and log, /opt (which the filesystem package owns), scratch
SCRIPTLET_DIRECTORIES = (
    "etc/alternatives",
    "var/lib/dpkg/alternatives",
    "var/lib/alternatives",
    "var/log",
    "var/tmp",
    "tmp",
    "opt",
)
# The Debian package of each tool, for the hint when it is missing.
SCRIPTLET_PACKAGES = {"dash": "dash", "update-alternatives": "dpkg", "ldconfig": "libc-bin"}


def scriptlet_sources() -> list[tuple[str, str]]:
    """(this machine's path, the path in the root) of each tool rpm's scriptlets run;
    one missing is an error naming it."""
    found = []
    for names, target in SCRIPTLET_TOOLS:
        source = next((path for name in names if (path := which(name))), None)
        if source is None:
            tools = ", ".join(names[0] for names, _ in SCRIPTLET_TOOLS)
            raise TrialError(
                f"{names[0]} not found: rpm runs the scriptlets with this machine's {tools} "
                f"(and ldd to find their libraries); install it with {installer()} "
                f"{SCRIPTLET_PACKAGES[names[0]]}"
            )
        found.append((source, target))
    return found


def scriptlet_tools(root: Path) -> list[str]:
    """Copy a shell, update-alternatives and ldconfig (and the libraries they load) from
    this machine into ``root``, with the directories they keep their state in, so that
    rpm can run scriptlets chrooted into it; the tools copied."""
    copied = []
    for source, target in scriptlet_sources():
        for path in (source, *libraries(source)):
            destination = root / (target if path == source else path.lstrip("/"))
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(path), destination)
        copied.append(source)
    for directory in SCRIPTLET_DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    return copied


def libraries(binary: str) -> list[str]:
    """The shared libraries ldd says ``binary`` loads, the dynamic loader included."""
    result = subprocess.run(
        ["ldd", binary], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    found = []
    for line in result.stdout.splitlines():
        words = line.split()
        path = words[2] if "=>" in words and len(words) > 2 else words[0] if words else ""
        if path.startswith("/"):
            found.append(path)
    return found
