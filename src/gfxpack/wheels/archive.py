"""Read a wheel into a scratch directory without trusting it; write a wheel reproducibly.

Reading checks every member before a byte is written: a name that is absolute,
climbs out (``..``), is empty or repeats, a symlink or other non-regular mode, a
declared size above the cap. Each member is then read in bounded chunks (never
more than it declares: zipfile stops at its declared size and checks its CRC),
the total bounded too, and its sha256 and size compared with the wheel's RECORD;
a member RECORD does not list, or a RECORD line naming no member, is refused.

Writing sorts the members, puts the ``.dist-info`` directory last (RECORD at the
very end), keeps each file's mode and stamps one fixed time (SOURCE_DATE_EPOCH,
else 1980-01-01, the earliest a zip can hold), so the same files give the same bytes.
"""

from __future__ import annotations

import base64
import csv
import errno
import hashlib
import io
import os
import stat
import struct
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from gfxpack.epoch import source_date_epoch
from gfxpack.errors import GfxpackError
from gfxpack.regular_files import printable

CHUNK = 1 << 20
ZIP_EPOCH = 315532800  # 1980-01-01: the earliest time a zip member can hold
DEFAULT_MAX_WHEEL_SIZE = 32 << 30  # unpacked bytes of one wheel (a ROCm torch: ~10 GB)
INFO_LIMIT = 64 << 20  # one .dist-info file (RECORD, METADATA...): read into memory
OUTPUTS = (".whl", ".gfxpack-join")  # what split and join write; --force replaces only these
# Deflate expands at most 1032 times; a member declaring more than this multiple of its
# compressed bytes is a lie (or another method's bomb), refused before it is read.
MAX_RATIO = 1100
SMALL_MEMBER = 1 << 16  # declared sizes up to this pass whatever their compressed size
# What the system refuses the place written to (OUT's filesystem), not the input: one
# line naming OUT, never the scratch path the write happened under.
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


class WheelError(GfxpackError, ValueError):
    """A wheel (or a directory of them) gfxpack cannot split or join."""


def wheel_inputs(source: Path) -> list[Path]:
    """A .whl, or every .whl of a directory (none is an error)."""
    if source.is_file():
        if source.suffix != ".whl":
            raise WheelError(f"{source}: expected a .whl file or a directory of them")
        return [source]
    wheels = sorted(p for p in source.iterdir() if p.suffix == ".whl" and not p.is_symlink())
    if not wheels:
        raise WheelError(f"{source}: holds no .whl file")
    return wheels


def is_wheel_input(source: str | os.PathLike[str]) -> bool:
    """Whether the CLI was given wheels: a .whl, or a directory holding one."""
    path = Path(source)
    if path.suffix == ".whl":
        return True
    return path.is_dir() and any(p.suffix == ".whl" for p in path.iterdir())


def check_out(out: Path, force: bool, inputs: list[Path]) -> None:
    """OUT must be a new directory, or with ``force`` one that holds wheels only (an
    earlier run's output), and not the directory of the input wheels."""
    if out.name in ("", ".", ".."):
        raise WheelError(f"{out}: expected the name of a directory to create")
    if os.path.lexists(out):
        if not force:
            raise WheelError(f"{out}: already exists (remove it, or replace it with --force)")
        if (
            out.is_symlink()
            or not out.is_dir()
            or any(
                p.suffix not in OUTPUTS or not p.is_file() or p.is_symlink() for p in out.iterdir()
            )
        ):
            raise WheelError(f"{out}: holds more than wheels; --force will not replace it")
    if out.resolve() in [w.resolve().parent for w in inputs]:
        raise WheelError(f"{out}: must not be the directory of the input wheels")


def temporary_beside(out: Path) -> Path:
    """A new hidden directory beside ``out`` to write in, renamed to ``out`` when
    complete; one line naming OUT when the system refuses it (read-only, full)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as e:
        raise WheelError(
            f"{printable(str(out))}: cannot write in {printable(str(out.parent))}: "
            f"{e.strerror or e}"
        ) from None


def output_refused(message: str, scratch: Path, out: Path) -> str | None:
    """The line naming OUT for what the tree splitter or joiner said when the system
    refused a write under ``scratch`` (inside OUT's temporary sibling: its paths mean
    nothing to the user); None when the message says something else."""
    if str(scratch) in message and any(
        message.endswith(f": {os.strerror(number)}") for number in OUTPUT_ERRNOS
    ):
        return f"{printable(str(out))}: cannot write: {message.rsplit(': ', 1)[-1]}"
    return None


def wheel_sizes(path: Path) -> dict[str, int]:
    """What a wheel costs: ``download``, the .whl file's bytes, and ``installed``, the
    bytes of the files it installs (its members as declared)."""
    with zipfile.ZipFile(path) as archive:
        installed = sum(info.file_size for info in archive.infolist())
    return {"download": path.stat().st_size, "installed": installed}


def record_hash(data: bytes) -> str:
    """A RECORD hash field: ``sha256=`` and the digest in urlsafe base64 without padding."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


@dataclass
class Member:
    """One file of a wheel: its path in the archive and its permission bits."""

    path: str
    mode: int


@dataclass
class Unpacked:
    """A wheel read into ``root``: every file (not the directory entries), in archive
    order, and the bytes of its ``.dist-info`` files (small: read into memory)."""

    root: Path
    members: list[Member] = field(default_factory=list)
    dist_info: str = ""
    info_files: dict[str, bytes] = field(default_factory=dict)  # name inside dist-info
    info_modes: dict[str, int] = field(default_factory=dict)


def _check_name(name: str) -> str | None:
    """Why ``name`` cannot be a wheel member's path, or None."""
    if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "a path that is not inside the wheel ('..', '.' or an empty part)"
    if "\0" in name:
        return "a NUL byte in the name"
    return None


def _mode(info: zipfile.ZipInfo) -> int | str:
    """A member's permission bits, or why its mode is refused."""
    unix = info.external_attr >> 16
    if info.create_system != 3 or unix == 0:
        return 0o644  # no Unix mode recorded: the default every installer uses
    if stat.S_IFMT(unix) not in (0, stat.S_IFREG):
        kind = "a symlink" if stat.S_ISLNK(unix) else "not a regular file"
        return f"{kind} (mode {unix:o}); a wheel holds regular files only"
    return stat.S_IMODE(unix) & 0o777


# What zipfile raises for a damaged archive besides OSError: its own BadZipFile, and
# from deeper down EOFError, NotImplementedError (an unknown method or version),
# ValueError, zlib.error (no deflate stream) and struct.error (short records).
ZIP_ERRORS = (
    zipfile.BadZipFile,
    EOFError,
    NotImplementedError,
    ValueError,
    zlib.error,
    struct.error,
)


def read_wheel(path: Path, root: Path, max_size: int = DEFAULT_MAX_WHEEL_SIZE) -> Unpacked:
    """Unpack the wheel ``path`` into the new directory ``root`` (see the module
    docstring); the dist-info directory must be the one the file name names."""
    shown = printable(str(path))
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, *ZIP_ERRORS) as e:
        raise WheelError(f"{shown}: not a wheel (a zip archive): {e}") from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        seen: set[str] = set()
        total = 0
        modes: dict[str, int] = {}
        for info in infos:
            problem = _check_name(info.filename)
            if problem is None and info.filename in seen:
                problem = "listed twice"
            mode = _mode(info)
            if problem is None and isinstance(mode, str):
                problem = mode
            if problem is None and info.file_size > max_size - total:
                problem = f"declares {info.file_size:,} bytes; the wheel may unpack to {max_size:,}"
            in_info = info.filename.split("/")[0].endswith(".dist-info")
            if problem is None and in_info and info.file_size > INFO_LIMIT:
                problem = (
                    f"declares {info.file_size:,} bytes; a .dist-info file may hold {INFO_LIMIT:,}"
                )
            if (
                problem is None
                and info.file_size > SMALL_MEMBER
                and info.file_size > MAX_RATIO * info.compress_size
            ):
                problem = (
                    f"declares {info.file_size:,} bytes from {info.compress_size:,} compressed, "
                    f"more than {MAX_RATIO} times as many; no real member expands so much"
                )
            if problem is not None:
                raise WheelError(f"{shown}: member {printable(info.filename)!r}: {problem}")
            assert isinstance(mode, int)
            seen.add(info.filename)
            modes[info.filename] = mode
            total += info.file_size
        dist_infos = {n.split("/", 1)[0] for n in seen if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1 or not all(
            n.count("/") for n in seen if n.split("/")[0] in dist_infos
        ):
            raise WheelError(f"{shown}: expected one .dist-info directory, found {len(dist_infos)}")
        dist_info = dist_infos.pop()
        record_name = f"{dist_info}/RECORD"
        if record_name not in seen:
            raise WheelError(f"{shown}: no {record_name}")
        try:
            record_bytes = archive.read(record_name)  # at most INFO_LIMIT bytes
        except ZIP_ERRORS as e:
            raise WheelError(f"{shown}: {record_name} unreadable: {e}") from None
        record = parse_record(shown, record_bytes)
        unpacked = Unpacked(root, dist_info=dist_info)
        root.mkdir()
        for info in infos:
            name = info.filename
            expected = record.pop(name, None)
            if name == record_name:
                expected = None  # RECORD cannot hash itself
            elif expected is None:
                raise WheelError(f"{shown}: member {printable(name)!r} is not in {record_name}")
            digest, size = _unpack(archive, info, root / name, modes[name])
            if expected is not None and not expected[0]:
                raise WheelError(
                    f"{shown}: member {printable(name)!r}: {record_name} gives no sha256 for it"
                )
            if expected is not None and expected != (digest, str(size)):
                raise WheelError(
                    f"{shown}: member {printable(name)!r}: {record_name} says "
                    f"{expected[0]} ({expected[1]} bytes), the member is {digest} ({size} bytes)"
                )
            if name.startswith(f"{dist_info}/"):
                inside = name[len(dist_info) + 1 :]
                unpacked.info_files[inside] = (root / name).read_bytes()
                unpacked.info_modes[inside] = modes[name]
            else:
                unpacked.members.append(Member(name, modes[name]))
        if record:
            missing = printable(sorted(record)[0])
            raise WheelError(f"{shown}: {record_name} lists {missing!r}, which the wheel lacks")
    return unpacked


def parse_record(shown: str, data: bytes) -> dict[str, tuple[str, str]]:
    """RECORD as {path: (hash field, size)}; only sha256 or stronger is trusted."""
    entries: dict[str, tuple[str, str]] = {}
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as e:
        raise WheelError(f"{shown}: RECORD is not UTF-8 CSV: {e}") from None
    for number, row in enumerate(rows, 1):
        if not row:
            continue
        if len(row) != 3 or row[0] in entries:
            raise WheelError(
                f"{shown}: RECORD line {number}: expected one 'path,hash,size' per file"
            )
        path, digest, size = row
        if digest and not digest.startswith("sha256="):
            raise WheelError(
                f"{shown}: RECORD line {number}: expected a sha256= hash, "
                f"got {digest.split('=')[0]!r}"
            )
        entries[path] = (digest, size)
    return entries


def _unpack(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, destination: Path, mode: int
) -> tuple[str, int]:
    """Write one member to the new file ``destination`` in bounded chunks; its RECORD
    hash and size. zipfile reads no more than the member declares and checks its CRC."""
    where = f"{printable(str(archive.filename))}: member {printable(info.filename)!r}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    sha256 = hashlib.sha256()
    size = 0
    try:
        with archive.open(info) as source, open(destination, "xb") as out:
            while chunk := source.read(CHUNK):
                sha256.update(chunk)
                out.write(chunk)
                size += len(chunk)
            os.fchmod(out.fileno(), mode)
    except ZIP_ERRORS as e:
        raise WheelError(f"{where}: unreadable: {e}") from None
    except OSError as e:  # such as a file where another member needs a directory
        if e.errno in OUTPUT_ERRNOS:
            raise  # not the wheel's fault: the caller names the place it writes
        raise WheelError(f"{where}: cannot unpack: {e.strerror or e}") from None
    if size != info.file_size:
        raise WheelError(f"{where}: shorter than it declares")
    digest = base64.urlsafe_b64encode(sha256.digest()).rstrip(b"=").decode()
    return f"sha256={digest}", size


def zip_time() -> tuple[int, int, int, int, int, int]:
    """The one time every member of a written wheel carries."""
    epoch = max(ZIP_EPOCH, source_date_epoch(os.environ, ZIP_EPOCH))
    return time.gmtime(epoch)[:6]


def write_wheel(
    path: Path,
    files: list[tuple[str, int, Path | bytes]],
    dist_info: str,
    record: bytes | None = None,
) -> None:
    """Write the wheel ``path`` from ``(member path, mode, file or bytes)``: RECORD is
    made here (or is ``record``, checked to list every file as written), members
    sorted, the dist-info directory last, RECORD the last member."""
    stamp = zip_time()
    record_name = f"{dist_info}/RECORD"
    order = sorted(files, key=lambda f: (f[0].startswith(f"{dist_info}/"), f[0]))
    lines = []
    with zipfile.ZipFile(path, "x", zipfile.ZIP_DEFLATED) as archive:
        for name, mode, content in order:
            sha256, size = hashlib.sha256(), 0
            # Streamed: a large library is never in memory whole.
            large = not isinstance(content, bytes) and content.stat().st_size >= 1 << 31
            with archive.open(_info(name, mode, stamp), "w", force_zip64=large) as out:
                source = io.BytesIO(content) if isinstance(content, bytes) else open(content, "rb")  # noqa: SIM115
                with source:
                    while chunk := source.read(CHUNK):
                        sha256.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            digest = base64.urlsafe_b64encode(sha256.digest()).rstrip(b"=").decode()
            lines.append(f"{_csv_field(name)},sha256={digest},{size}\n")
        lines.append(f"{_csv_field(record_name)},,\n")
        if record is not None:
            _check_record(path.name, record, lines)
        written = "".join(lines).encode() if record is None else record
        archive.writestr(_info(record_name, 0o644, stamp), written)


def _check_record(where: str, record: bytes, lines: list[str]) -> None:
    """A RECORD given to write must say what was written: every file, its hash, its size."""
    expected = parse_record(where, record)
    written = parse_record(where, "".join(lines).encode())
    for name, (digest, size) in written.items():
        if digest and expected.get(name) != (digest, size):
            raise WheelError(f"{where}: {printable(name)}: not the file its original RECORD lists")
    if set(expected) != set(written):
        extra = sorted(set(expected) ^ set(written))[0]
        raise WheelError(f"{where}: {printable(extra)}: in only one of RECORD and the files")


def _csv_field(value: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow([value])
    return buffer.getvalue()


def _info(name: str, mode: int, stamp: tuple[int, int, int, int, int, int]) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, stamp)
    info.create_system = 3  # Unix: the mode below is read
    info.external_attr = (stat.S_IFREG | mode) << 16
    # A .kpack archive is zstd frames already: deflating it again costs time, saves nothing.
    info.compress_type = zipfile.ZIP_STORED if name.endswith(".kpack") else zipfile.ZIP_DEFLATED
    return info
