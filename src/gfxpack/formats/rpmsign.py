"""OpenPGP signatures in an RPM's signature header, made by the system's gpg.

A package that records its compressed payload's SHA-256 in its main header
(every package gfxpack or rpm 4.14 and later builds) is signed over that header
alone, as rpmsign --addsign does since rpm 4.16: the header covers the payload
through the digest. The signature's tag depends on the key's algorithm: RSA
keys use RSAHEADER (268), DSA and EdDSA keys DSAHEADER (267). Before signing,
the payload is checked against that digest and the header against its SHA-256
in the signature header, so a damaged package is refused, never vouched for. A
package without a payload digest (rpm before 4.14) is refused as well: only a
signature over header and payload together could cover it. The main header and
the payload are not touched, so a signed package is its unsigned build plus the
signature: reproducible apart from the signature bytes themselves.

The file is rewritten under a temporary name beside it and renamed over it, so
a failure leaves the unsigned package as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from gfxpack._io import atomic_path
from gfxpack.errors import GfxpackError
from gfxpack.formats.rpm import (
    BIN,
    HEADER_MAGIC,
    INT16,
    INT32,
    INT64,
    LEAD_MAGIC,
    PAYLOADDIGEST,
    PAYLOADDIGESTALGO,
    SHA256_ALGO,
    SIG_REGION,
    SIG_SHA256,
    STRING,
    STRING_ARRAY,
    HeaderBuilder,
)
from gfxpack.regular_files import open_regular

LEAD_SIZE = 96
SIG_DSA_HEADER, SIG_RSA_HEADER = 267, 268
# Signatures over header and payload (rpm's v3 signatures), replaced like the others.
SIG_PGP, SIG_GPG = 1002, 1005
SIG_RESERVED_SPACE = 1008
_OPENPGP_TAGS = (SIG_DSA_HEADER, SIG_RSA_HEADER, SIG_PGP, SIG_GPG, SIG_RESERVED_SPACE)
# OpenPGP public-key algorithm ids (RFC 4880 9.1) whose signatures rpm files as RSA.
_RSA_ALGORITHMS = (1, 3)
# Bounds on what a signature header may claim before anything is read into memory.
_MAX_ENTRIES = 1000
_MAX_STORE = 64 << 20
_SIZES = {INT16: 2, INT32: 4, INT64: 8}


class SignError(GfxpackError):
    """A package that cannot be signed; the message names the file."""


class _Layout:
    """Where the parts of an .rpm are: lead, signature header entries, main header, payload."""

    def __init__(self, path: Path, file: BinaryIO) -> None:
        self.lead = file.read(LEAD_SIZE)
        if len(self.lead) != LEAD_SIZE or not self.lead.startswith(LEAD_MAGIC):
            raise SignError(f"{path}: not an RPM package (no RPM lead)")
        self.entries = _read_signature_entries(path, file)
        self.header = _read_header(path, file)
        self.payload_offset = file.tell()


def _read_counts(path: Path, file: BinaryIO, what: str) -> tuple[int, int, bytes]:
    intro = file.read(16)
    if len(intro) != 16 or intro[:8] != HEADER_MAGIC:
        raise SignError(f"{path}: the {what} header is missing or damaged (no header magic)")
    count, store = struct.unpack(">ii", intro[8:])
    if not 0 < count <= _MAX_ENTRIES or not 0 <= store <= _MAX_STORE:
        raise SignError(
            f"{path}: the {what} header claims {count} entries and {store} bytes "
            f"(expected 1 to {_MAX_ENTRIES} entries, at most {_MAX_STORE} bytes)"
        )
    body = file.read(16 * count + store)
    if len(body) != 16 * count + store:
        raise SignError(f"{path}: the {what} header is cut short")
    return count, store, intro + body


def _read_header(path: Path, file: BinaryIO) -> bytes:
    return _read_counts(path, file, "main")[2]


def _read_signature_entries(path: Path, file: BinaryIO) -> list[tuple[int, int, object]]:
    """(tag, type, value) of every signature header entry but the region."""
    count, store_size, blob = _read_counts(path, file, "signature")
    file.read(-store_size % 8)  # the signature header is padded to 8 bytes
    store = blob[16 + 16 * count :]
    entries: list[tuple[int, int, object]] = []
    for number in range(count):
        tag, kind, offset, items = struct.unpack_from(">iiii", blob, 16 + 16 * number)
        if tag == SIG_REGION:
            continue
        if not 0 <= offset <= len(store) or not 0 < items <= len(store):
            raise SignError(f"{path}: signature header entry {tag} points outside its data")
        entries.append((tag, kind, _decode(path, tag, kind, store, offset, items)))
    return entries


def _decode(path: Path, tag: int, kind: int, store: bytes, offset: int, items: int) -> object:
    if kind in _SIZES:
        end = offset + _SIZES[kind] * items
        if end > len(store):
            raise SignError(f"{path}: signature header entry {tag} runs past its data")
        code = {INT16: "H", INT32: "I", INT64: "Q"}[kind]
        values = list(struct.unpack_from(f">{items}{code}", store, offset))
        return values if items > 1 else values[0]
    if kind == BIN:
        if offset + items > len(store):
            raise SignError(f"{path}: signature header entry {tag} runs past its data")
        return store[offset : offset + items]
    if kind in (STRING, STRING_ARRAY):
        strings = []
        for _ in range(items):
            end = store.find(b"\0", offset)
            if end < 0:
                raise SignError(f"{path}: signature header entry {tag} has an unended string")
            strings.append(store[offset:end].decode(errors="replace"))
            offset = end + 1
        return strings[0] if kind == STRING else strings
    raise SignError(f"{path}: signature header entry {tag} has unknown data type {kind}")


def _gpg_sign(parts: Iterable[bytes | Path], key: str, gnupghome: str | None, what: str) -> bytes:
    """A binary detached signature over the concatenated ``parts`` (bytes, or a file
    whose contents are streamed)."""
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    command = ["gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--local-user", key]
    command += ["--digest-algo", "SHA256", "--detach-sign", "--output", "-"]
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env
            )
        except FileNotFoundError:
            raise SignError(
                "signing needs gpg, which is not installed (apt-get install gpg)"
            ) from None
        assert process.stdin is not None and process.stdout is not None
        try:
            for part in parts:
                if isinstance(part, Path):
                    with open(part, "rb") as source:
                        shutil.copyfileobj(source, process.stdin, 1 << 20)
                else:
                    process.stdin.write(part)
            process.stdin.close()
        except BrokenPipeError:
            pass
        signature = process.stdout.read()
        status = process.wait()
        errors.seek(0)
        reason = errors.read().decode(errors="replace").strip().splitlines()
    if status != 0 or not signature:
        raise SignError(
            f"gpg could not sign {what} with key {key}: "
            f"{reason[-1] if reason else 'exit status ' + str(status)}"
        )
    return signature


def _public_key_algorithm(signature: bytes) -> int:
    """The public-key algorithm id of an OpenPGP signature packet (v4 or v3)."""
    first = signature[0]
    if first & 0x40:  # new packet format: one, two or five length octets
        length_octet = signature[1]
        start = 2 if length_octet < 192 else 3 if length_octet < 224 else 6
    else:  # old format: the low two bits say one, two or four length octets
        start = 1 + {0: 1, 1: 2, 2: 4}.get(first & 0x03, 0)
    version = signature[start]
    # v4: version, signature type, algorithm; v3: version, 5, type, time(4), key id(8), algorithm.
    return signature[start + 2] if version >= 4 else signature[start + 15]


def sign_rpm(path: Path, key: str, gnupghome: str | None = None) -> None:
    """Add (or replace) the OpenPGP signature of the .rpm at ``path``."""
    try:
        with open(path, "rb") as file:
            layout = _Layout(path, file)
            _check_digests(path, layout, file)
    except OSError as e:
        raise SignError(f"{path}: cannot read it ({e.strerror})") from None
    header_only = _gpg_sign([layout.header], key, gnupghome, f"the header of {path}")
    rsa = _public_key_algorithm(header_only) in _RSA_ALGORITHMS
    signature = HeaderBuilder()
    for tag, kind, value in layout.entries:
        if tag not in _OPENPGP_TAGS:
            signature.add(tag, kind, value)
    signature.add(SIG_RSA_HEADER if rsa else SIG_DSA_HEADER, BIN, header_only)
    blob = signature.build(SIG_REGION)
    _replace(
        path, layout.lead + blob + b"\0" * (-len(blob) % 8) + layout.header, layout.payload_offset
    )


def _check_digests(path: Path, layout: _Layout, file: BinaryIO) -> None:
    """The header against its SHA-256 in the signature header, and the payload against
    the SHA-256 the header records: what the signature will vouch for."""
    recorded = dict((tag, value) for tag, _, value in layout.entries).get(SIG_SHA256)
    if recorded is not None and recorded != hashlib.sha256(layout.header).hexdigest():
        raise SignError(f"{path}: its header does not match its SHA-256 digest; not signing it")
    algorithm = _header_value(path, layout.header, PAYLOADDIGESTALGO)
    expected = _header_value(path, layout.header, PAYLOADDIGEST)
    if expected is None:
        raise SignError(
            f"{path}: its header records no payload digest (built by rpm before 4.14?); "
            "only packages whose header covers their payload are signed"
        )
    if algorithm not in (None, SHA256_ALGO):
        raise SignError(
            f"{path}: its payload digest uses algorithm {algorithm}; gfxpack checks SHA-256 "
            f"({SHA256_ALGO}) only"
        )
    digest = hashlib.sha256()
    file.seek(layout.payload_offset)
    while chunk := file.read(1 << 20):
        digest.update(chunk)
    if [digest.hexdigest()] != (expected if isinstance(expected, list) else [expected]):
        raise SignError(
            f"{path}: its payload does not match the SHA-256 its header records; "
            "not signing a damaged package"
        )


def _header_value(path: Path, header: bytes, wanted: int) -> object:
    """One entry of a main header (only integer and string types are read), or None."""
    count = struct.unpack_from(">i", header, 8)[0]
    store = header[16 + 16 * count :]
    for number in range(count):
        tag, kind, offset, items = struct.unpack_from(">iiii", header, 16 + 16 * number)
        if tag == wanted:
            if not 0 <= offset <= len(store) or not 0 < items <= len(store):
                raise SignError(f"{path}: main header entry {tag} points outside its data")
            return _decode(path, tag, kind, store, offset, items)
    return None


def header_signature(path: Path) -> tuple[bytes, bytes | None]:
    """The main header of the .rpm at ``path`` and the OpenPGP signature over it that
    dnf checks (None: it has none); a file that is not an RPM is an error, and so is
    a symlink (never followed out of a repository) or anything but a regular file."""
    try:
        with os.fdopen(open_regular(path, follow_symlinks=False), "rb") as file:
            layout = _Layout(path, file)
    except OSError as e:
        raise SignError(f"{path}: cannot read it ({e.strerror})") from None
    signatures = {tag: value for tag, _, value in layout.entries}
    found = signatures.get(SIG_RSA_HEADER, signatures.get(SIG_DSA_HEADER))
    return layout.header, found if isinstance(found, bytes) else None


def signature_problem(path: Path, keyring: bytes, keys: str) -> str | None:
    """What dnf with gpgcheck=1 would refuse in the .rpm at ``path``, given the keys of
    ``keyring`` (binary OpenPGP keys, what gpgkey= installs; ``keys`` names them), or
    None: no header signature, or one by no key of ``keyring``; checked by gpgv."""
    header, signature = header_signature(path)
    if signature is None:
        return f"{path}: not signed"
    with tempfile.TemporaryDirectory(prefix="gfxpack-gpgv-") as scratch:
        files = [Path(scratch) / name for name in ("keys.gpg", "signature", "header")]
        for file, data in zip(files, (keyring, signature, header), strict=True):
            file.write_bytes(data)
        try:
            result = subprocess.run(
                ["gpgv", "--keyring", str(files[0]), str(files[1]), str(files[2])],
                capture_output=True,
                check=False,
            )
        except FileNotFoundError:
            raise SignError(
                "checking package signatures needs gpgv, which is not installed "
                "(apt-get install gpgv)"
            ) from None
    return None if result.returncode == 0 else f"{path}: not a good signature by {keys}"


def same_contents(one: Path, other: Path) -> bool:
    """Whether two .rpm files have the same main header and payload: the same package,
    whatever their signatures."""
    with open(one, "rb") as a, open(other, "rb") as b:
        first, second = _Layout(one, a), _Layout(other, b)
        if first.header != second.header:
            return False
        while True:
            chunk = a.read(1 << 20)
            if chunk != b.read(1 << 20):
                return False
            if not chunk:
                return True


def _replace(path: Path, head: bytes, payload_offset: int) -> None:
    """Rewrite ``path`` as ``head`` followed by its own bytes from ``payload_offset`` on,
    under a temporary name beside it (with its mode) renamed over it."""
    mode = path.stat().st_mode & 0o7777
    with atomic_path(path) as temporary, open(temporary, "wb") as out, open(path, "rb") as source:
        os.fchmod(out.fileno(), mode)
        out.write(head)
        source.seek(payload_offset)
        shutil.copyfileobj(source, out, 1 << 20)
