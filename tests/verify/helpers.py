"""Small hand-made repositories: a few packages written by our writers, published by
gfxpack repo, with the dependency mistakes the rules exist to catch."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

from gfxpack.formats import DEB, RPM, PackageFormat, PackageInfo
from gfxpack.formats.payload import Entry, with_parents
from gfxpack.relations import parse_deb
from gfxpack.repo import publish
from gfxpack.trial import apt_options, serve
from gfxpack.verify.system import read_system
from gfxpack.verify.universe import load

__all__ = ["Apt", "craft_deb", "gfxarch_set", "make_repo", "rpm_files", "serve", "write_package"]


def write_package(
    out: Path,
    fmt: PackageFormat,
    name: str,
    version: str = "8.2.0",
    depends: tuple[str, ...] = (),
    files: tuple[str, ...] = (),
    provides: tuple[str, ...] = (),
) -> Path:
    """One package; relations are written in Debian syntax and translated for RPM."""
    relations = {
        field: tuple(
            text if fmt is DEB else fmt.render_relation(parse_deb(text)) for text in values
        )
        for field, values in (("depends", depends), ("provides", provides))
    }
    entries = with_parents(
        [Entry(path, "file", 0o644, size=len(name), data=name.encode()) for path in files],
        mtime=0,
    )
    info = PackageInfo(
        name=name,
        version=version,
        release="1",
        arch={DEB: "amd64", RPM: "x86_64"}[fmt],
        summary=f"test package {name}",
        description="A package of a hand-made test repository.",
        maintainer="gfxpack tests <tests@example.invalid>",
        license="MIT",
        entries=entries,
        **relations,
    )
    path = out / fmt.filename(info)
    out.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        fmt.write(info, file)
    return path


def make_repo(tmp_path: Path, fmt: PackageFormat, packages: dict[str, dict]) -> Path:
    """Write ``packages`` (name -> write_package keywords) and publish them; the repo root."""
    build = tmp_path / f"build-{fmt}"
    for name, options in packages.items():
        write_package(build, fmt, name, **options)
    root = tmp_path / "repo"
    publish(build, root, "stable", 1_700_000_000)
    return root


def gfxarch_set(archs=("gfx942", "gfx950")) -> dict[str, dict]:
    """A well-formed gfxarch component as seed 000 draws it: host, devices, metas."""
    host = "amdrocm-blas-host8.2"
    packages = {
        "amdrocm-runtime8.2": {"files": ("/opt/rocm/core-8.2/lib/libamdhip64.so.7",)},
        host: {
            "depends": ("amdrocm-runtime8.2 (>= 8.2.0-1)",),
            "files": ("/opt/rocm/core-8.2/lib/librocblas.so.5",),
        },
        "amdrocm-blas8.2": {
            "depends": (f"{host} (= 8.2.0-1)", *(f"amdrocm-blas8.2-{a} (= 8.2.0-1)" for a in archs))
        },
        "amdrocm-blas": {"depends": ("amdrocm-blas8.2 (= 8.2.0-1)",)},
    }
    for arch in archs:
        packages[f"amdrocm-blas8.2-{arch}"] = {
            "depends": (f"{host} (= 8.2.0-1)",),
            "files": (f"/opt/rocm/core-8.2/.kpack/blas_lib_{arch}.kpack",),
        }
    return packages


def rpm_files(repo: Path, steps) -> list[Path]:
    """The .rpm files in ``repo`` of the packages a transaction's ``steps`` bring in."""
    universe = load(repo, RPM, read_system(None, RPM))
    wanted = {(step.name, step.version) for step in steps}
    return [
        repo / "rpm" / universe.location(s)
        for s in universe.packages()
        if (s.name, s.evr) in wanted
    ]


# --- apt-get against a repository served on 127.0.0.1 (gfxpack.trial's server) ----------

_INST = re.compile(r"^Inst (\S+)(?: \[([^\]]+)\])? \((\S+) ")
_REMV = re.compile(r"^Remv (\S+)")


class Apt:
    """The system's apt-get with its own sources.list, state, cache and dpkg status
    (gfxpack.trial.apt_options): nothing of the machine's apt configuration is read
    or changed."""

    def __init__(self, home: Path, sources: str, status: str) -> None:
        self.home = home
        self.status = home / "status"
        self.options = apt_options(home, self.status)
        (home / "sources.list").write_text(sources)
        self.status.write_text(status)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["apt-get", *self.options, *args], capture_output=True, text=True, check=False
        )
        if check:
            assert result.returncode == 0, (
                f"apt-get {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
            )
        return result

    def simulate(self, *names: str) -> dict[str, tuple[str, str | None, str | None]]:
        """name -> (action, installed version, new version) of ``install --simulate``."""
        planned = {}
        for line in self.run("install", "--simulate", "-y", *names).stdout.splitlines():
            if match := _INST.match(line):
                action = "upgrade" if match[2] else "install"
                planned[match[1]] = (action, match[2], match[3])
            elif match := _REMV.match(line):
                planned[match[1]] = ("remove", None, None)
        return planned

    def download(self, *names: str) -> list[Path]:
        """The .deb files ``install`` would fetch, fetched."""
        self.run("install", "--download-only", "-y", *names)
        return sorted((self.home / "cache/archives").glob("*.deb"))


# --- hand-crafted .deb files, for what our writer never makes ----------------------------


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def ar_member(name: str, data: bytes, size_field: str | None = None) -> bytes:
    size = str(len(data)) if size_field is None else size_field
    header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{size:<10}`\n".encode()
    return header + data + b"\n" * (len(data) % 2)


def craft_deb(
    path: Path,
    control: bytes,
    paths: tuple[str, ...] = ("./opt/tool",),
    size_field: str | None = None,
) -> Path:
    """A .deb with this control file and these data paths, made by hand; ``size_field``
    replaces the control member's ar size."""
    data = _tar_gz({name: b"x" for name in paths})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"!<arch>\n"
        + ar_member("debian-binary", b"2.0\n")
        + ar_member("control.tar.gz", _tar_gz({"./control": control}), size_field)
        + ar_member("data.tar.gz", data)
    )
    return path
