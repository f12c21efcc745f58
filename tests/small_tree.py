"""A one-package artifacts tree small enough to build in a blink, and its build."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner, Result

from gfxpack.cli import cli

STAGE = "math-libs/BLAS/rocBLAS/stage"
PREFIX = "/opt/rocm/core-8.2"


def write_config(path: Path, **extra: str) -> Path:
    path.write_text(
        json.dumps(
            [
                {
                    "Package": "amdrocm-blas",
                    "Artifactory": [
                        {
                            "Artifact": "blas",
                            "Artifact_Subdir": [{"Name": "rocBLAS", "Components": ["lib"]}],
                        }
                    ],
                    **extra,
                }
            ]
        )
    )
    return path


def make_tree(root: Path) -> Path:
    """blas_lib_generic with a library, its symlink and a tool; returns the stage."""
    artifact = root / "blas_lib_generic"
    stage = artifact / STAGE
    (stage / "lib").mkdir(parents=True)
    (stage / "bin").mkdir()
    (artifact / "artifact_manifest.txt").write_text(STAGE + "\n")
    # An (empty) gfx942 artifact, so that the tree has the target the build asks for.
    (root / "blas_lib_gfx942").mkdir()
    (root / "blas_lib_gfx942" / "artifact_manifest.txt").write_text("")
    (stage / "lib" / "librocblas.so.1").write_bytes(b"\x7fELF library")
    (stage / "lib" / "librocblas.so").symlink_to("librocblas.so.1")
    tool = os.open(stage / "bin" / "rocblas-info", os.O_WRONLY | os.O_CREAT, 0o777)
    os.write(tool, b"#!/bin/sh\n")
    os.close(tool)
    return stage


def build(
    tmp_path: Path,
    artifacts: Path,
    *args: str,
    config: Path | None = None,
    out: Path | None = None,
) -> Result:
    """``gfxpack build -q -j 1 --target gfx942`` of ``artifacts`` into ``out``
    (default tmp_path/out)."""
    return CliRunner().invoke(
        cli,
        [
            "build",
            "--config",
            str(config or write_config(tmp_path / "package.json")),
            "--artifacts",
            str(artifacts),
            "--out",
            str(out or tmp_path / "out"),
            "--rocm-version",
            "8.2.0",
            "--target",
            "gfx942",
            "-j",
            "1",
            "-q",
            *args,
        ],
    )
