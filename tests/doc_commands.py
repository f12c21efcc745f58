"""The shell blocks of the documentation pages (docs/), run as written: with this
checkout's gfxpack first on PATH and the kpack runtime's variables unset."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_VARIABLES = ("ROCM_KPACK_PATH", "ROCM_KPACK_PATH_PREFIX", "ROCM_KPACK_DISABLE")


def doc_block(page: str, heading: str) -> str:
    """The first sh block after ``heading`` in docs/``page``, as written."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    match = re.search(r"```sh\n(.*?)```", text[text.index(heading) :], re.S)
    assert match is not None, heading
    return match.group(1)


def gfxpack_shell(cwd: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by bash in ``cwd``, stopping at the first command that fails."""
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for name in RUNTIME_VARIABLES:
        environment.pop(name, None)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
