"""An apt repository (Debian's repository format) built from .deb files.

    pool/main/<file>.deb
    dists/<suite>/Release, InRelease, Release.gpg (signed with --sign-key)
    dists/<suite>/main/binary-<arch>/Packages, Packages.gz, Packages.xz
    dists/<suite>/main/Contents-<arch>.gz

Publishing is incremental: packages already in the pool stay, new ones are
added, and every index is rewritten over the whole pool. What each .deb says
(its stanza and its paths) is cached by file name, size and mtime, so a
second build added to a large repository reads only the new files. Indexes
are written under temporary names and renamed; ``Release`` goes last.
"""

from __future__ import annotations

import filecmp
import gzip
import hashlib
import json
import lzma
import os
import shutil
import subprocess
from collections import defaultdict
from email.utils import formatdate
from pathlib import Path
from typing import Any

from gfxpack._io import atomic_path, file_digests, write_atomically
from gfxpack.errors import GfxpackError
from gfxpack.repo.debfile import parse_stanzas, read_deb

COMPONENT = "main"
CACHE = ".gfxpack-apt-cache.json"


class RepoError(GfxpackError):
    pass


def new_files(files: list[Path], pool: Path) -> list[Path]:
    """The files not yet in the pool. A file name already there with other contents is
    an error, since a published version never changes."""
    new = []
    for source in files:
        target = pool / source.name
        if not target.exists():
            new.append(source)
        # The pool holds hard links of earlier builds: the same inode needs no reading.
        elif not (target.samefile(source) or filecmp.cmp(target, source, shallow=False)):
            raise RepoError(
                f"{target} is already published with different contents; "
                "a published version never changes (raise --release)"
            )
    return new


def add_to_pool(files: list[Path], pool: Path) -> None:
    """Hard-link (else copy, keeping the mtime) ``files`` into the pool."""
    pool.mkdir(parents=True, exist_ok=True)
    for source in files:
        target = pool / source.name
        with atomic_path(target) as partial:
            try:
                os.link(source, partial)
            except OSError:
                shutil.copy2(source, partial)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)


def _entries(
    out: Path, files: dict[str, Path]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Stanza and paths of every package (file name -> where to read it now), from the
    cache when unchanged; and the cache to write back."""
    cache_path = out / CACHE
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    entries, fresh = [], {}
    for name in sorted(files):
        deb = files[name]
        info = deb.stat()
        stamp = f"{info.st_size}:{info.st_mtime_ns}"
        entry = cache.get(name)
        if entry is None or entry.get("stamp") != stamp:
            control, paths = read_deb(str(deb))
            size, (md5, sha256) = file_digests(deb, "md5", "sha256")
            stanza = parse_stanzas(control)[0]
            stanza.update(
                {
                    "Filename": f"pool/{COMPONENT}/{name}",
                    "Size": str(size),
                    "MD5sum": md5,
                    "SHA256": sha256,
                }
            )
            entry = {"stamp": stamp, "stanza": stanza, "paths": paths}
        fresh[name] = entry
        entries.append(entry)
    return entries, fresh


def _stanza_text(stanza: dict[str, str]) -> str:
    return "".join(f"{field}: {value}\n" for field, value in stanza.items())


def publish(
    debs: list[Path],
    out: Path,
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
) -> dict[str, Any]:
    """Add ``debs`` to the repository at ``out`` and rewrite its indexes.

    Everything is computed and signed before the repository is touched, so a
    failure (a changed file, gpg refusing) leaves it as it was."""
    pool = out / "pool" / COMPONENT
    added = new_files(debs, pool)
    files = {p.name: p for p in pool.glob("*.deb")} | {p.name: p for p in added}
    entries, cache = _entries(out, files)
    by_arch: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        by_arch[entry["stanza"].get("Architecture", "all")].append(entry)
    arches = sorted(a for a in by_arch if a != "all") or ["all"]
    indexes: list[tuple[str, bytes]] = []
    for arch in arches:
        members = sorted(
            by_arch[arch] + (by_arch["all"] if arch != "all" else []),
            key=lambda e: (e["stanza"]["Package"], e["stanza"]["Version"]),
        )
        packages = "\n".join(_stanza_text(e["stanza"]) for e in members).encode()
        base = f"{COMPONENT}/binary-{arch}/Packages"
        indexes += [
            (base, packages),
            (base + ".gz", gzip.compress(packages, 9, mtime=0)),
            (base + ".xz", lzma.compress(packages, preset=6)),
        ]
        contents = sorted(
            (path, f"{e['stanza'].get('Section', 'misc')}/{e['stanza']['Package']}")
            for e in members
            for path in e["paths"]
        )
        text = "".join(f"{path:<60} {owner}\n" for path, owner in contents).encode()
        indexes.append((f"{COMPONENT}/Contents-{arch}.gz", gzip.compress(text, 9, mtime=0)))
    release = _release(suite, arches, indexes, epoch).encode()
    signatures = _sign(release, sign_key, gnupghome) if sign_key else {}
    add_to_pool(added, pool)
    dist = out / "dists" / suite
    for name, data in indexes:
        _write(dist / name, data)
    _write(dist / "Release", release)
    for name in ("InRelease", "Release.gpg"):
        if name in signatures:
            _write(dist / name, signatures[name])
        else:
            # A signature of an earlier Release would no longer match it.
            (dist / name).unlink(missing_ok=True)
    _write(out / CACHE, json.dumps(cache).encode())  # keeps each stanza's field order
    return {
        "added": [p.name for p in added],
        "packages": len(entries),
        "suite": suite,
        "signed": bool(sign_key),
    }


def _release(suite: str, arches: list[str], indexes: list[tuple[str, bytes]], epoch: int) -> str:
    lines = [
        "Origin: gfxpack",
        "Label: gfxpack",
        f"Suite: {suite}",
        f"Codename: {suite}",
        f"Date: {formatdate(epoch, usegmt=True)}",
        f"Architectures: {' '.join(arches)}",
        f"Components: {COMPONENT}",
        "Description: ROCm packages published by gfxpack",
    ]
    for title, algorithm in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        lines.append(f"{title}:")
        for name, data in indexes:
            digest = hashlib.new(algorithm, data, usedforsecurity=False).hexdigest()
            lines.append(f" {digest} {len(data):>16} {name}")
    return "\n".join(lines) + "\n"


def _sign(release: bytes, key: str, gnupghome: str | None) -> dict[str, bytes]:
    """InRelease (clear-signed) and Release.gpg (detached) for ``release``."""
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    base = ["gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--local-user", key]
    signatures = {}
    for name, extra in (
        ("InRelease", ["--clearsign"]),
        ("Release.gpg", ["--armor", "--detach-sign"]),
    ):
        try:
            result = subprocess.run(
                [*base, *extra, "--output", "-"],
                input=release,
                capture_output=True,
                env=env,
                check=False,
            )
        except FileNotFoundError:
            raise RepoError(
                "--sign-key needs gpg, which is not installed (apt-get install gpg)"
            ) from None
        if result.returncode != 0:
            reason = result.stderr.decode(errors="replace").strip().splitlines()
            raise RepoError(
                f"gpg could not sign the Release file with key {key}: "
                f"{reason[-1] if reason else 'exit status ' + str(result.returncode)}"
            )
        signatures[name] = result.stdout
    return signatures
