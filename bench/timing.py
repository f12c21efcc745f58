"""What the benchmarks share: best-of-N wall time (these machines are noisy), and
gfxpack's bytecode compiled as an install has it."""

from __future__ import annotations

import compileall
import time
from collections.abc import Callable
from pathlib import Path


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """The shortest of ``repeat`` timed calls of ``run``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def compile_bytecode() -> None:
    """Compile gfxpack's modules once, as pip does when it installs a package: a source
    checkout run with PYTHONDONTWRITEBYTECODE (as on the CI machines) would otherwise
    compile every module again on every call, which no installed gfxpack does."""
    import gfxpack

    compileall.compile_dir(Path(gfxpack.__file__).parent, quiet=1)
