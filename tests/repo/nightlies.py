"""Small nightly builds for stream tests: per night, a library and a package that needs
exactly that night's library (``rocm-lib (= VERSION)``, as a build's metapackages pin
their parts), in both formats, with the index.json a gfxpack build writes (so that
``gfxpack repo`` knows the build's version)."""

from __future__ import annotations

import json
from pathlib import Path

from gfxpack.formats import DEB, RPM
from tests.verify.helpers import write_package
from tests.verify.signed import Key, gfxpack

LIB, TOOL = "rocm-lib", "rocm-tool"


def version(night: int) -> str:
    return f"8.2.{night}"


def nightly(where: Path, night: int, key: Key | None = None) -> Path:
    """The build directory of night ``night`` (version 8.2.NIGHT, release 1); its RPMs
    signed by ``key`` with gfxpack sign (which updates index.json) when given."""
    out = where / f"night-{night}"
    files = []
    for fmt in (DEB, RPM):
        files.append(
            write_package(out, fmt, LIB, version(night), files=(f"/opt/rocm/lib/{night}",))
        )
        files.append(
            write_package(
                out, fmt, TOOL, version(night), depends=(f"{LIB} (= {version(night)}-1)",),
                files=("/opt/rocm/bin/tool",),
            )
        )  # fmt: skip
    from gfxpack.repo.setup_package import write_index

    write_index(out, files)
    index = json.loads((out / "index.json").read_text())
    index.update(rocm_version=version(night), release="1")
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    if key is not None:
        gfxpack(key, "sign", "--key", key.fingerprint, *map(str, sorted(out.glob("*.rpm"))))
    return out
