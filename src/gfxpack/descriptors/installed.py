"""Where installed providers keep their descriptors.

A provider package installs its arch_content tree at
``<prefix>/lib/hipdnn/arch_content/<provider>/`` (the host package the
arch-independent descriptors, each device package its ``<arch>/`` shard and
archive), so one directory per provider is a descriptor root. Under an install
root (``/``, or a throwaway root a test installed into) the prefixes looked at
are the root itself, every ``opt/rocm*/`` directory and every directory one
level inside ``opt/rocm/`` (``/opt/rocm/core-8.2``). Symlinks are never followed:
``/opt/rocm/core`` is an alternatives link to a prefix already listed, and a
link inside an install root may point outside it.
"""

from __future__ import annotations

import os
from pathlib import Path

ARCH_CONTENT = ("lib", "hipdnn", "arch_content")
LAYOUT = "<prefix>/lib/hipdnn/arch_content/<provider>/"


def _directories(path: Path) -> list[Path]:
    """Real (non-symlink) subdirectories, sorted by name; none if unreadable."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]


def _real_directory(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def install_prefixes(root: str | os.PathLike[str]) -> list[Path]:
    """The prefixes under an install root that may hold providers."""
    root = Path(root)
    prefixes = [root]
    opt = root / "opt"
    if _real_directory(opt):
        for candidate in _directories(opt):
            if candidate.name.startswith("rocm"):
                prefixes.append(candidate)
                if candidate.name == "rocm":
                    prefixes.extend(_directories(candidate))
    return prefixes


def installed_roots(root: str | os.PathLike[str]) -> list[Path]:
    """Every installed provider's descriptor root under ``root``, in path order."""
    found = []
    for prefix in install_prefixes(root):
        content = prefix
        for part in ARCH_CONTENT:
            content = content / part
            if not _real_directory(content):
                break
        else:
            found.extend(_directories(content))
    return found
