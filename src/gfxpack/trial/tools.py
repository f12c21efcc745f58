"""Running the tools of a tried install, and asking for them: every failure is one
:class:`TrialError`, and every step of one install runs against one deadline
(``--timeout``), past which the step is killed with everything it started."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gfxpack.errors import GfxpackError
from gfxpack.sandbox import Sandbox

# How long one tried install may take by default, every step of the client together: a
# release of hundreds of packages installs in minutes, and a script waiting for what
# never comes must not hold a machine (or a CI job) for hours.
DEFAULT_TIMEOUT = 1800
# How many of a failed tool's last lines of output its error shows.
SHOWN_LINES = 25


class TrialError(GfxpackError):
    """The install could not be tried, or the client failed; the message says which."""


class TrialTimeout(TrialError):
    """A step of the install was still running at the install's deadline (``--timeout``)."""


@dataclass(frozen=True, slots=True)
class Steps:
    """How the tools of one tried install run: in ``sandbox`` (None: on this machine,
    which only dnf ``--no-scripts`` does), each killed when still running at
    ``deadline`` (a :func:`time.monotonic` time), ``timeout`` seconds after the start."""

    sandbox: Sandbox | None
    timeout: float
    deadline: float

    @classmethod
    def starting_now(cls, sandbox: Sandbox | None, timeout: float) -> Steps:
        return cls(sandbox, timeout, time.monotonic() + timeout)

    def run(
        self,
        command: Sequence[str],
        what: str,
        env: Mapping[str, str] | None = None,
        serve: Path | None = None,
        cwd: Path | None = None,
    ) -> str:
        """Run a tool in ``cwd``, in the sandbox when there is one (serving ``serve`` on
        :data:`gfxpack.sandbox.URL` there); its stdout. A failure is one TrialError:
        ``what`` failed, the command's last lines of output below it; still running at
        the deadline, it is killed and ``what`` is named in a :class:`TrialTimeout`."""
        environment = {"LC_ALL": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive", **(env or {})}
        if self.sandbox is None:
            environment = {**os.environ, **environment}
            argv = list(command)
        else:
            # Nothing of this environment goes in but the PATH the tools were found on,
            # and HOME: Debian's rpm keeps its database under the root at $HOME/.rpmdb.
            inside = {
                "PATH": os.environ.get("PATH", os.defpath),
                "HOME": os.environ.get("HOME", "/root"),
                **environment,
            }
            argv = self.sandbox.command(command, inside, serve, cwd)
            cwd = None
        finished = run_until(argv, self.deadline, environment, cwd)
        if finished is None:
            raise TrialTimeout(
                f"{what} timed out: still running {self.timeout:g} s after the install "
                f"began (--timeout {self.timeout:g}); it was killed with everything it "
                "started, and nothing of the install is left"
            )
        status, stdout, stderr = finished
        if status != 0:
            output = [line for line in (stdout + stderr).splitlines() if line.strip()]
            shown = "\n".join(f"  {line}" for line in output[-SHOWN_LINES:])
            raise TrialError(f"{what} failed ({command[0]} exit status {status}):\n{shown}")
        return stdout


def run_until(
    argv: Sequence[str], deadline: float, env: Mapping[str, str], cwd: Path | None
) -> tuple[int, str, str] | None:
    """(exit status, stdout, stderr) of ``argv``, run in a process group of its own; None
    when it was still running at ``deadline`` (then it is killed, :func:`stop`)."""
    if deadline <= time.monotonic():
        return None
    with subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            stop(process)
            return None
        except BaseException:  # interrupted (SIGINT, SIGTERM): the tool goes too
            stop(process)
            raise
    return process.returncode, stdout, stderr


def stop(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` and its process group: the client itself where it runs
    unsandboxed, with the rpm it started; bwrap where it runs sandboxed, and with it
    the whole sandbox (bwrap's ``--die-with-parent`` kills the sandbox's first process,
    and a PID namespace ends with its first process)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def which(name: str) -> str | None:
    """Where this machine has the tool ``name`` (the sbin directories too)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def require(tool: str, package: str) -> None:
    """One error naming ``tool`` and the Debian ``package`` of it when it is missing."""
    if which(tool) is None:
        raise TrialError(f"{tool} not found: install it with {installer()} {package}")


def installer() -> str:
    """How this machine installs a package."""
    for manager in ("apt-get", "dnf", "zypper"):
        if which(manager):
            return f"{manager} install"
    return "your package manager:"
