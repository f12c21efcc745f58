"""What one call of gfxpack costs before it does any work: --version, --help, and shell
completion, which runs gfxpack on every Tab.

Each invocation against the floor of any click program: the interpreter importing
click (``python -c "import click"``), and the bare interpreter for reference. The
contenders run in turns, one of each per round, best of N, so a slow spell of this
shared machine stretches all of them alike. Target: every invocation <= 100 ms.

    python bench/startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.test_cli_startup import completing, every_command  # noqa: E402

from timing import compile_bytecode  # noqa: E402

GFXPACK = str(Path(sys.executable).parent / "gfxpack")


def tab(words: str) -> tuple[list[str], dict[str, str]]:
    """What bash runs on Tab after ``words``."""
    return [GFXPACK], completing(words)


def contenders() -> dict[str, tuple[list[str], dict[str, str]]]:
    runs: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], {}),
        'floor: python -c "import click"': ([sys.executable, "-c", "import click"], {}),
        "gfxpack --version": ([GFXPACK, "--version"], {}),
        "gfxpack --help": ([GFXPACK, "--help"], {}),
        "gfxpack <Tab>": tab("gfxpack "),
    }
    for words in sorted(every_command()):
        runs[f"gfxpack {words} --<Tab>"] = tab(f"gfxpack {words} --")
        runs[f"gfxpack {words} --help"] = ([GFXPACK, *words.split(), "--help"], {})
    return runs


def measure(runs: dict[str, tuple[list[str], dict[str, str]]], repeat: int) -> dict[str, float]:
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, (argv, env) in runs.items():
            started = time.perf_counter()
            subprocess.run(
                argv,
                env={**os.environ, **env},
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="best of N runs")
    args = parser.parse_args()
    compile_bytecode()
    runs = contenders()
    best = measure(runs, args.repeat)
    floor = best['floor: python -c "import click"']
    print(f"best of {args.repeat}, in turns; load average {os.getloadavg()[0]:.1f}")
    print("| invocation | wall time | vs floor |")
    print("|---|---:|---:|")
    for name, seconds in best.items():
        over = "" if seconds <= 0.100 else " **over 100 ms**"
        print(f"| {name} | {seconds * 1000:.0f} ms{over} | {seconds / floor:.2f}x |")
    slowest = max((n for n in best if n.startswith("gfxpack")), key=best.__getitem__)
    print(f"slowest: {slowest}, {best[slowest] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
