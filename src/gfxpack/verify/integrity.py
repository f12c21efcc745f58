"""What apt and dnf check before they trust a repository, checked the same way.

* ``Release`` is read strictly: UTF-8, one paragraph, and every ``SHA256`` line a
  digest, a size and a path inside ``dists/<suite>``.
* An ``InRelease`` must say exactly what ``Release`` says (apt reads ``InRelease``
  first, so an edited ``Release`` beside an old ``InRelease`` is a lie to someone).
* With a keyring, ``InRelease`` or ``Release.gpg`` (apt) and ``repomd.xml.asc`` (dnf's
  ``repo_gpgcheck``) must be good signatures by one of its keys, checked by gpgv.
* Deep: every package file has the size and sha256 its index gives, as apt and dnf
  check each download (what the entry is and its size first, from ``lstat``: a FIFO
  or a link to /dev/zero is never read), and no directory of the repository is a
  symlink (gfxpack repo refuses to write through one).
"""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gfxpack.regular_files import UnreadableFile, file_kind, read_small_file
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.inputs import digest
from gfxpack.verify.system import VerifyError

SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")
_HEX = re.compile(r"[0-9a-f]+\Z")
_SIZE = re.compile(r"[0-9]{1,20}\Z")
_REPO = "{http://linux.duke.edu/metadata/repo}"
# repomd.xml digest names -> hashlib's.
REPOMD_DIGESTS = {"sha": "sha1", "sha1": "sha1", "sha224": "sha224", "sha256": "sha256"}
REPOMD_DIGESTS |= {"sha384": "sha384", "sha512": "sha512"}
# A repomd.xml lists a handful of files: a few KiB.
REPOMD_LIMIT = 16 << 20
# A keyring of a few hundred keys is well under a MiB.
KEYRING_LIMIT = 16 << 20
_ARMOR_BEGIN = "-----BEGIN PGP SIGNED MESSAGE-----"
_SIGNATURE_BEGIN = "-----BEGIN PGP SIGNATURE-----"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Listed:
    """One file an index vouches for."""

    sha256: str
    size: int


def inside(name: str) -> bool:
    """Whether ``name`` is a relative path that stays below the directory it is read in."""
    path = PurePosixPath(name)
    return (
        bool(name)
        and not path.is_absolute()
        and ".." not in path.parts
        and not _CONTROL.search(name)
    )


def read_release(data: bytes, where: Path) -> dict[str, Listed]:
    """name -> what a Release file's SHA256 section lists, checked line by line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise VerifyError(f"{where}: not UTF-8 ({e.reason} at byte {e.start})") from None
    stanzas = parse_stanzas(text)
    if not stanzas:
        raise VerifyError(f"{where}: empty; expected the fields of a Release file")
    listed = {}
    for number, line in enumerate(stanzas[0].get("SHA256", "").split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3 or not SHA256_HEX.match(parts[0]) or not _SIZE.match(parts[1]):
            raise VerifyError(
                f"{where}: SHA256 line {number} {line.strip()[:80]!r}: "
                "expected '<sha256> <size> <path>'"
            )
        if not inside(parts[2]):
            raise VerifyError(f"{where}: SHA256 line {number}: {parts[2]!r} is not a path here")
        listed[parts[2]] = Listed(parts[0], int(parts[1]))
    if not listed:
        raise VerifyError(f"{where}: lists no index with a SHA256 digest")
    return listed


@dataclass(frozen=True, slots=True)
class MetadataFile:
    """One file a repomd.xml vouches for."""

    location: str
    algorithm: str  # hashlib's name
    digest: str


def read_repomd(data: bytes, where: Path) -> dict[str, MetadataFile]:
    """type (primary, filelists, ...) -> the file repomd.xml lists, checked."""
    if len(data) > REPOMD_LIMIT:
        raise VerifyError(f"{where}: {len(data)} bytes, not a repomd.xml")
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, LookupError, ValueError) as e:  # expat: unknown or multi-byte encodings
        raise VerifyError(f"{where}: not well-formed XML ({e})") from None
    if root.tag != f"{_REPO}repomd":
        raise VerifyError(f"{where}: not a repomd.xml (its root is {root.tag[:60]!r})")
    files = {}
    for number, record in enumerate(root.iter(f"{_REPO}data"), start=1):
        kind = record.get("type") or ""
        checksum = record.find(f"{_REPO}checksum")
        location = record.find(f"{_REPO}location")
        href = location.get("href", "") if location is not None else ""
        algorithm = REPOMD_DIGESTS.get(checksum.get("type", "") if checksum is not None else "")
        digest = (checksum.text or "").strip() if checksum is not None else ""
        if not kind or algorithm is None or not _HEX.match(digest) or not inside(href):
            raise VerifyError(
                f"{where}: data entry {number} ({kind or 'no type'}): expected a type, a "
                "known checksum and a location inside the repository"
            )
        files[kind] = MetadataFile(href, algorithm, digest)
    return files


def cleartext(data: bytes, where: Path) -> bytes:
    """The message of a clear-signed file (OpenPGP's cleartext signature framework)."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise VerifyError(f"{where}: not UTF-8") from None
    lines = [line.removesuffix("\r") for line in lines]
    if not lines or lines[0] != _ARMOR_BEGIN:
        raise VerifyError(f"{where}: not a clear-signed file (no {_ARMOR_BEGIN!r})")
    try:
        start = lines.index("", 1) + 1  # after the Hash: headers
        end = lines.index(_SIGNATURE_BEGIN, start)
    except ValueError:
        raise VerifyError(f"{where}: a clear-signed file without its signature") from None
    body = [line[2:] if line.startswith("- ") else line for line in lines[start:end]]
    return ("\n".join(body) + "\n").encode()


def dearmored(key_data: bytes) -> bytes:
    """Binary OpenPGP keys from an armored key file (what gpgv reads)."""
    text = key_data.decode("ascii", "replace")
    blocks = []
    for block in text.split("-----BEGIN PGP PUBLIC KEY BLOCK-----")[1:]:
        body = block.split("-----END PGP PUBLIC KEY BLOCK-----")[0]
        lines = body.strip("\r\n").split("\n")
        payload = lines[lines.index("") + 1 :] if "" in lines else lines
        blocks.append(
            base64.b64decode("".join(line.strip() for line in payload if not line.startswith("=")))
        )
    return b"".join(blocks)


class Keyring:
    """The keys signatures must come from, as a file gpgv reads."""

    def __init__(self, path: Path) -> None:
        try:
            # A FIFO is refused, never opened: reading one would wait for a writer forever.
            data = read_small_file(path, KEYRING_LIMIT, "keyring")
        except UnreadableFile as e:
            raise VerifyError(str(e)) from None
        if b"-----BEGIN PGP PUBLIC KEY BLOCK-----" in data:
            try:
                data = dearmored(data)
            except ValueError:
                raise VerifyError(f"{path}: an armored keyring that is not base64") from None
        if not data:
            raise VerifyError(f"{path}: an empty keyring")
        self.path = path
        self._data = data
        # (primary key fingerprint, hash algorithm id) of every good signature checked:
        # what the keys' policy is judged on (formats/openpgp.py)
        self.signers: set[tuple[str, str]] = set()

    def check(self, signature: Path, signed: Path | None = None) -> bytes:
        """The signed bytes, after gpgv found a good signature by one of the keys
        (``signature`` detached from ``signed``, or clear-signed when ``signed`` is None)."""
        result = self._gpgv([str(signature), *([str(signed)] if signed else [])])
        if result.returncode != 0:
            raise VerifyError(
                f"{signature}: not a good signature by a key of {self.path}{_said(result)}"
            )
        return signed.read_bytes() if signed else result.stdout

    def check_detached(self, signature: bytes, data: bytes, what: str) -> None:
        """A good signature by one of the keys, ``signature`` of ``data``; ``what`` names
        them in the error."""
        with tempfile.TemporaryDirectory(prefix="gfxpack-gpgv-") as scratch:
            (Path(scratch) / "signature").write_bytes(signature)
            (Path(scratch) / "data").write_bytes(data)
            result = self._gpgv([f"{scratch}/signature", f"{scratch}/data"])
        if result.returncode != 0:
            raise VerifyError(
                f"{what}: not a good signature by a key of {self.path}{_said(result)}"
            )

    def _gpgv(self, arguments: list[str]) -> subprocess.CompletedProcess[bytes]:
        with tempfile.NamedTemporaryFile(suffix=".gpg") as keys:
            keys.write(self._data)
            keys.flush()
            # gpg's status lines go to stderr with its messages; VALIDSIG names the key.
            command = ["gpgv", "--status-fd", "2", "--keyring", keys.name, "--output", "-"]
            try:
                result = subprocess.run([*command, *arguments], capture_output=True, check=False)
            except FileNotFoundError:
                raise VerifyError(
                    "--keyring needs gpgv, which is not installed (apt-get install gpgv)"
                ) from None
        if result.returncode == 0:
            for line in result.stderr.decode(errors="replace").splitlines():
                fields = line.split()
                # VALIDSIG fpr date time expires version reserved pk-algo hash-algo class
                # primary-fpr
                if fields[:2] == ["[GNUPG:]", "VALIDSIG"] and len(fields) >= 12:
                    self.signers.add((fields[11], fields[9]))
        return result


def _said(result: subprocess.CompletedProcess[bytes]) -> str:
    """What gpgv said about a signature it did not accept, as ': ...' (or nothing)."""
    said = [
        line.removeprefix("gpgv: ")
        for line in result.stderr.decode(errors="replace").splitlines()
        if "signature" in line.lower() and not line.startswith("[GNUPG:]")
    ]
    return f": {said[-1]}" if said else ""


def checked_release(dist: Path, keyring: Keyring | None) -> tuple[dict[str, Listed], str]:
    """What ``dist/Release`` lists, once its signatures agree with it; and how it was
    vouched for, in words."""
    release, inrelease, detached = (dist / n for n in ("Release", "InRelease", "Release.gpg"))
    try:
        data = release.read_bytes() if release.is_file() else None
        signed = inrelease.read_bytes() if inrelease.is_file() else None
    except OSError as e:
        raise VerifyError(f"{dist}: cannot read: {e.strerror}") from None
    if keyring is None:
        how = "signatures not checked (no --keyring)"
        if signed is not None:
            text = cleartext(signed, inrelease)
            if data is not None and data != text:
                raise VerifyError(
                    f"{release}: differs from what {inrelease} says (edited after signing?)"
                )
            data = text
    elif signed is not None:
        text = keyring.check(inrelease)
        if data is not None and data != text:
            raise VerifyError(
                f"{release}: differs from what the signed {inrelease} says (edited after signing?)"
            )
        data, how = text, f"InRelease signed by a key of {keyring.path}"
    elif detached.is_file() and data is not None:
        keyring.check(detached, release)
        how = f"Release.gpg signed by a key of {keyring.path}"
    else:
        raise VerifyError(f"{dist}: not signed (no InRelease, no Release.gpg), and --keyring asks")
    if data is None:
        raise VerifyError(f"{dist}: no Release file")
    return read_release(data, release), how


def checked_repomd(repodata: Path, keyring: Keyring | None) -> str:
    """How ``repodata/repomd.xml`` was vouched for, after gpgv checked its signature."""
    if keyring is None:
        return "signatures not checked (no --keyring)"
    signature = repodata / "repomd.xml.asc"
    if not signature.is_file():
        raise VerifyError(f"{repodata}: repomd.xml is not signed (no repomd.xml.asc)")
    keyring.check(signature, repodata / "repomd.xml")
    return f"repomd.xml.asc signed by a key of {keyring.path}"


def _digest_or_none(path: Path, size: int) -> str | None:
    """The sha256 of the regular file ``path`` (None: it is no longer one)."""
    try:
        return digest(path, size)[1]
    except OSError:
        return None


def symlinked_directories(root: Path) -> list[str]:
    """The symlinks to directories (or to nothing) among the directories under ``root``:
    apt and dnf fetch through them over HTTP, and gfxpack repo refuses to write
    through one."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        for name in sorted(subdirectories):
            if os.path.islink(os.path.join(directory, name)):
                found.append(f"{Path(directory, name)}: a symlinked directory")
        found += [
            f"{Path(directory, name)}: a dangling symlink"
            for name in sorted(files)
            if not os.path.exists(os.path.join(directory, name))
        ]
    return found


def mismatches(root: Path, files: Iterator[tuple[str, Listed]]) -> list[str]:
    """What differs between each (path under ``root``, listed) and the file there: what
    the entry is and its size first, from ``lstat``, so a FIFO, a link to /dev/zero or
    a huge sparse file is reported without reading a byte."""
    problems = []
    for name, listed in files:
        path = root / name
        if not inside(name):
            problems.append(f"{name!r}: not a path inside {root}")
            continue
        try:
            info = path.lstat()
        except (FileNotFoundError, NotADirectoryError):
            problems.append(f"{path}: not there")
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(f"{path}: {file_kind(info.st_mode)}, not a regular file")
            continue
        size = info.st_size
        if size != listed.size:
            problems.append(f"{path}: {size} bytes, the index says {listed.size}")
        elif _digest_or_none(path, listed.size) != listed.sha256:
            problems.append(f"{path}: its sha256 is not the one the index gives")
    return problems
