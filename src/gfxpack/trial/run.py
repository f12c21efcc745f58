"""One tried install, start to end (:func:`try_install`): the request checked, the root
made, the stand-ins and the packages installed by the client in the sandbox, the
report; on the way out, or interrupted, or past ``--timeout``, what is not to be kept
removed."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gfxpack.amdgpu import PROCESSORS, processor_problem
from gfxpack.sandbox import Sandbox, SandboxUnavailable, probe
from gfxpack.trial.clients import Client, client_named, default_client, skipping_scripts
from gfxpack.trial.report import Trial, owned_files, report
from gfxpack.trial.roots import (
    CLIENT_PREFIX,
    ROOT_PREFIX,
    claim,
    discard,
    existing_root,
    fresh_root,
    release,
    sweep_stale,
    terminated_as_exit,
)
from gfxpack.trial.stand_ins import stand_in_infos, write_stand_ins
from gfxpack.trial.tools import DEFAULT_TIMEOUT, Steps, TrialError, TrialTimeout, require
from gfxpack.verify.resolution import select
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import read_system
from gfxpack.verify.universe import load


def held_archs(requested: Sequence[str], archs: Sequence[str]) -> list[str]:
    """The processors an install of ``requested`` is held to: ``archs`` (checked against
    the processor table, features dropped), else the arch suffixes of the names."""
    chosen = []
    for arch in archs:
        problem = processor_problem(arch, features=True)
        if problem:
            raise TrialError(f"--arch: {problem}")
        chosen.append(arch.split(":")[0])
    if not archs:
        chosen = [a for name in requested if (a := arch_of(name)) in PROCESSORS]
    return sorted(set(chosen), key=chosen.index)


def try_install(
    repo: Path,
    packages: Sequence[str],
    client: str | None = None,
    root: Path | None = None,
    keep: bool = False,
    system: Path | None = None,
    archs: Sequence[str] = (),
    suite: str | None = None,
    scripts: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> Trial:
    """Install ``packages`` from ``repo`` (gfxpack repo's output, or one apt or rpm-md
    repository) into ``root`` with ``client`` (apt, dnf or zypper; default
    :func:`~gfxpack.trial.clients.default_client`) and report what is there. Without
    ``root`` a temporary directory is used and removed afterwards, unless ``keep``.

    The client runs in a sandbox (:mod:`gfxpack.sandbox`) where the root and its own
    client directory are the only trees it may write; where that sandbox cannot be
    made, the install is refused, unless ``scripts`` is false (dnf only), which runs
    no scriptlet. Interrupted (SIGINT, SIGTERM), or still running ``timeout`` seconds
    after the install began, the client is killed with its sandbox and the root and
    the client directory are removed; what killed runs left in the temporary
    directory is removed first."""
    if not packages:
        raise TrialError("name at least one package to install")
    if not Path(repo).is_dir():
        raise TrialError(f"{repo}: not a directory (give the --out directory of gfxpack repo)")
    if not timeout > 0:
        raise TrialError(f"--timeout: {timeout!r} is not a number of seconds above 0")
    chosen = client_named(client or default_client(repo))
    fmt = chosen.fmt
    held = held_archs(packages, archs)
    require(chosen.command, chosen.package)
    for tool, package in chosen.tools:
        require(tool, package)
    chosen.check()
    if os.geteuid() != 0:
        raise TrialError(
            f"try-install needs root: {chosen.command} installs as root and "
            f"{chosen.database} runs the packages' scripts in the new root "
            "(run it with sudo, or in a container)"
        )
    sandboxed = sandboxed_or_refused(chosen, scripts)
    replace = root is not None and existing_root(root)
    listed = read_system(system, fmt)
    infos = stand_in_infos(fmt, listed[1], listed[0])
    universe = load(repo, fmt, listed, suite)
    for name in packages:
        select(universe, name)  # one error naming it (with suggestions) when it is not there
    repository = universe.root
    client_suite = chosen.suite(repository, suite)

    sweep_stale()
    temporary = root is None
    existed = root is not None and root.is_dir()
    with terminated_as_exit(), contextlib.ExitStack() as cleanup:
        where = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX)) if root is None else root
        try:
            home = Path(tempfile.mkdtemp(prefix=CLIENT_PREFIX))
            cleanup.callback(shutil.rmtree, home, ignore_errors=True)
            cleanup.callback(
                release, home, claim(home, "the client directory of a gfxpack try-install")
            )
            cleanup.callback(release, where, fresh_root(where, replace))
            where = where.resolve()
            # The repository is bound (and served) where it is, not through a symlink.
            repository = repository.resolve()
            box = Sandbox((where, home), (repository,)) if sandboxed else None
            steps = Steps.starting_now(box, timeout)
            made = write_stand_ins(fmt, infos, home / "stand-ins")
            chosen.install(steps, home, where, made, repository, client_suite, packages, scripts)
            # Read in the sandbox: the packages' scripts could have written the database.
            listing = steps.run(chosen.listing(where), "listing the installed packages")
            owned = owned_files(listing)
            trial = report(chosen.name, fmt, universe.label, where, listed, packages, held, owned)
        except (KeyboardInterrupt, SystemExit, TrialTimeout):
            discard(where, keep_directory=existed)  # half made: nothing of it stays
            raise
        finally:
            if temporary and not keep:
                shutil.rmtree(where, ignore_errors=True)
    trial.kept = keep or not temporary
    trial.sandboxed, trial.scripts = sandboxed, scripts
    return trial


def sandboxed_or_refused(client: Client, scripts: bool) -> bool:
    """Whether the client runs in the sandbox: always, when it can be made; else the
    install is refused, unless ``scripts`` is off (a client that can skip them, whose
    rpm runs chrooted)."""
    able = " or ".join(skipping_scripts())
    if not scripts and client.why_scripts_run is not None:
        raise TrialError(
            f"--no-scripts: only {able} installs without running the packages' scripts "
            f"({client.why_scripts_run}); use --client {able}"
        )
    try:
        probe()
    except SandboxUnavailable as e:
        if not scripts:
            return False
        raise TrialError(
            f"{e}; try-install runs the packages' scripts only in that sandbox, so it did "
            f"not install (--client {able} --no-scripts installs without running them)"
        ) from None
    return True
