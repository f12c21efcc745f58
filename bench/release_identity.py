"""Byte-for-byte: the release one git ref's gfxpack builds against another's.

A change to how gfxpack is written (not to what it makes) must leave every output
byte as it was. This script exports each ref's ``src/`` with ``git archive`` into
build/release-identity/<ref>/ (the working tree's own ``src/`` for ``--after``'s
default), makes the inputs once with the working tree's
examples/generate_artifacts.py (so both sides package the same bytes), and with
each side, in child processes (``PYTHONPATH=<that src>``, one SOURCE_DATE_EPOCH,
one output directory, so a path or date written into an output is the same),
runs ``gfxpack build`` (gfx1100,gfx942,gfx950 at 8.2.0, deb and rpm, as
``make demo``) and ``gfxpack repo`` of:

- the example release (examples/package.json), unsigned;
- the same, signed by a throwaway key whose gpg signs at a frozen time, with
  ``repo --setup-package``;
- TheRock's config (../shared/fixtures/therock/package.json, skipped with a reason
  when absent).

It then compares the sha256 and mode of every output file (packages, index.json,
the apt and rpm-md indexes, signatures and keys, what ``repo`` prints) and prints
identical or different per file; exit 1 on any difference. What a run makes
differently each time is set aside, and named: index.json's build seconds, each
repository's record database, and whatever differs between two runs of the
before side (printed ``unstable``).

    python bench/release_identity.py --before a26a558^ --after a26a558
    python bench/release_identity.py --before HEAD            # against the working tree
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from split_identity import Record, differences, record_of  # noqa: E402

THEROCK = ROOT.parent / "shared" / "fixtures" / "therock" / "package.json"
TARGETS = "gfx1100,gfx942,gfx950"
VERSION = "8.2.0"
EPOCH = "1767225600"  # 2026-01-01T00:00:00Z
WORKTREE = "worktree"
# The repository's own record holds each pool file's stamp (mtime, ctime, inode),
# which differ between any two runs: it is left out, named in the output.
RECORD_DB = ".gfxpack-repo.db"
SIGNER = "gfxpack identity <identity@example.invalid>"
# A signed repository also publishes its setup package (which has its own index.json).
SETUP = ["--setup-package", "identity-setup", "--base-url", "https://example.invalid/rocm"]


def _run(command: list[str], environment: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")


def _dirname(ref: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", ref)


def export_src(ref: str, work: Path) -> Path:
    """``ref``'s src/ under work/<ref>/ (the working tree's own for ``worktree``)."""
    if ref == WORKTREE:
        return ROOT / "src"
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not commit:
        sys.exit(f"--before/--after: {ref!r} is not a commit of {ROOT}")
    top = work / _dirname(ref)
    shutil.rmtree(top, ignore_errors=True)
    top.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(top)], input=archive, check=True)
    return top / "src"


def _signing_key(gnupg: Path) -> None:
    """A throwaway RSA-3072 key whose gpg signs at a frozen time (gpg.conf's
    faked-system-time), so two runs' signatures are the same bytes."""
    gnupg.mkdir(mode=0o700)
    (gnupg / "gpg.conf").write_text("faked-system-time 20260101T000000!\n")
    generate = ["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", SIGNER]
    _run([*generate, "rsa3072", "sign", "never"], {**os.environ, "GNUPGHOME": str(gnupg)})


def make_inputs(inputs: Path, scale: float) -> dict[str, tuple[Path, bool]]:
    """Each release's config, and whether it is signed; its artifacts tree and the
    signing key made once per scale (and generator)."""
    generator = ROOT / "examples" / "generate_artifacts.py"
    example = ROOT / "examples" / "package.json"
    runs = {"example": (example, False), "example-signed": (example, True)}
    if THEROCK.exists():
        runs["therock"] = (THEROCK, False)
    else:
        print(f"therock: skipped, {THEROCK} is absent (../shared is not beside the clone)")
    stamp = f"{scale} {generator.stat().st_mtime_ns} {sorted(runs)}\n"
    if not (inputs / "done").exists() or (inputs / "done").read_text() != stamp:
        shutil.rmtree(inputs, ignore_errors=True)
        for config in {config for config, _signed in runs.values()}:
            out = inputs / config.parent.name
            command = [sys.executable, str(generator), str(out), "--config", str(config)]
            _run([*command, "--targets", TARGETS, "--scale", str(scale), "--seed", "2026"])
        _signing_key(inputs / "gnupg")
        (inputs / "done").write_text(stamp)
    return runs


def knows(src: Path, command: str, option: str) -> bool:
    """Whether the gfxpack of ``src`` has ``option`` for ``command``."""
    environment = {**os.environ, "PYTHONPATH": str(src)}
    shown = subprocess.run(
        [sys.executable, "-m", "gfxpack", command, "--help"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return option in shown


def _stamp_packages(packages: Path) -> None:
    """Every built file's mtime set to the build's epoch: rpm-md's primary.xml
    carries each package's mtime (<time file=...>), the moment the build wrote it."""
    for path in packages.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (int(EPOCH), int(EPOCH)))


def _without_timings(index: Path) -> str:
    """index.json's digest with each package's build seconds (a timing) read as 0,
    every other byte as written."""
    text = re.sub(rb'"seconds": [0-9.eE+-]+', b'"seconds": 0', index.read_bytes())
    return f"{hashlib.sha256(text).hexdigest()} (build timings aside)"


def _without_file_times(primary: Path) -> str:
    """primary.xml's digest with each package's <time file=...> (its mtime in the pool)
    read as 0: the setup package is written at the run's time, not the build's."""
    text = re.sub(rb'<time file="[0-9]+"', b'<time file="0"', gzip.decompress(primary.read_bytes()))
    return f"{hashlib.sha256(text).hexdigest()} (file times aside)"


def release_all(
    src: Path, runs: dict[str, tuple[Path, bool]], inputs: Path, run: Path, jobs: int
) -> Record:
    """Every release built and published by the gfxpack of ``src``: its record."""
    environment = {**os.environ, "PYTHONPATH": str(src), "SOURCE_DATE_EPOCH": EPOCH}
    environment["GNUPGHOME"] = str(inputs / "gnupg")
    gfxpack = [sys.executable, "-m", "gfxpack"]
    # The packages are signed by the repository's key or not at all (an unsigned
    # repository writes gpgcheck=0): a side that refuses anyway gets
    # --allow-unsigned-packages, a side that does not know the option never does.
    allow = ["--allow-unsigned-packages"] if knows(src, "repo", "--allow-unsigned-packages") else []
    record: Record = {}
    for name, (config, signed) in runs.items():
        packages, repo = run / name / "packages", run / name / "repo"
        sign = ["--sign-key", SIGNER] if signed else []
        shutil.rmtree(run / name, ignore_errors=True)
        artifacts = inputs / config.parent.name
        build = [*gfxpack, "build", "--config", str(config), "--artifacts", str(artifacts)]
        build += ["--out", str(packages), "--rocm-version", VERSION, "--target", TARGETS]
        _run([*build, *sign, "--format", "deb,rpm", "-j", str(jobs), "--quiet"], environment)
        _stamp_packages(packages)
        publish = [*gfxpack, "repo", "--in", str(packages), "--out", str(repo), *sign]
        publish += SETUP if signed else []
        result = subprocess.run(publish, env=environment, capture_output=True, text=True)
        if result.returncode != 0 and allow:
            retry = [*publish, *allow]
            result = subprocess.run(retry, env=environment, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"failed: {' '.join(publish)}\n{result.stderr[-2000:]}")
        # What repo prints (the setup lines) is an output users copy, compared too.
        (run / name / "repo.txt").write_bytes(result.stdout.encode())
        made = record_of(run / name)
        made.pop(f"repo/{RECORD_DB}", None)
        made["packages/index.json"] = _without_timings(packages / "index.json")
        for primary in (repo / "rpm" / "repodata").glob("*-primary.xml.gz"):
            key = f"{primary.relative_to(run / name).as_posix()} (file times aside)"
            made[key] = _without_file_times(primary)
        record.update({f"{name}/{k}": v for k, v in made.items()})
    return record


def _keyed(record: Record) -> Record:
    """rpm-md names its indexes by their sha256: keyed without it (the digest is in
    the value), so a changed primary.xml.gz is one differing file, not two names."""
    return {re.sub(r"/[0-9a-f]{64}-", "/<sha256>-", k): v for k, v in record.items()}


def _side(
    ref: str, src: Path, again: bool, args: argparse.Namespace, runs: dict[str, tuple[Path, bool]]
) -> Record:
    """``ref``'s releases built and published (in run/, then kept): their record."""
    record = release_all(src, runs, args.work / "inputs", args.work / "run", args.jobs)
    kept = args.work / _dirname(ref) / ("out-again" if again else "out")
    shutil.rmtree(kept, ignore_errors=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    (args.work / "run").rename(kept)  # kept for a look; the next side builds in run/
    print(f"{ref}{' (again)' if again else ''}: {len(record)} entries, kept in {kept}")
    return _keyed(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a git ref")
    parser.add_argument("--after", default=WORKTREE, help="a git ref (default: the working tree)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "release-identity")
    parser.add_argument("--scale", type=float, default=0.05, help="the generator's --scale")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    sources = {ref: export_src(ref, args.work) for ref in (args.before, args.after)}
    runs = make_inputs(args.work / "inputs", args.scale)
    before = _side(args.before, sources[args.before], False, args, runs)
    # The before side once more: a file that differs between two runs of one ref
    # depends on the run (a clock, an inode), not on the change; it is named unstable.
    again = _side(args.before, sources[args.before], True, args, runs)
    after = _side(args.after, sources[args.after], False, args, runs)
    gnupg = str(args.work / "inputs" / "gnupg")
    subprocess.run(["gpgconf", "--homedir", gnupg, "--kill", "all"], check=False)
    if not before or not after:
        sys.exit("nothing compared: no output was recorded")
    print(f"not compared: each repository's {RECORD_DB} (it holds pool files' stamps)")
    unstable = {k for k in before.keys() | again.keys() if before.get(k) != again.get(k)}
    for key in sorted(before.keys() | after.keys()):
        if before.get(key, "").startswith("dir ") and before.get(key) == after.get(key):
            continue
        if key in unstable:
            print(f"unstable: {key} (differs between two runs of {args.before}: not compared)")
        elif before.get(key) == after.get(key):
            print(f"identical: {key}")
    stable_before = {k: v for k, v in before.items() if k not in unstable}
    stable_after = {k: v for k, v in after.items() if k not in unstable}
    if lines := differences(stable_before, stable_after):
        print("\n".join(lines))
        sys.exit(f"{len(lines)} differences between {args.before} and {args.after}")
    print(
        f"identical: {len(stable_before)} entries, every byte ({args.before} / {args.after});"
        f" {len(unstable)} unstable"
    )


if __name__ == "__main__":
    main()
