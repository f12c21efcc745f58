"""Running a tool in a sandbox whose only writable trees are the ones given: bubblewrap.

A package's scripts run as root. chroot is no boundary for root (a scriptlet mounts
/proc and walks out through /proc/1/root), and dpkg's chrootless scripts run on this
machine itself, so gfxpack try-install runs the client, and the scripts it starts, in
a bubblewrap sandbox (Debian's ``bubblewrap``): new user, mount, PID, IPC, UTS and
network namespaces, in which

- /usr, /etc and the other top directories of the system (``SYSTEM``) are this
  machine's, read-only; /tmp, /var/tmp and /run are empty and private (no socket of a
  daemon of this machine is reachable), /dev holds only null, zero, random and the
  like, /proc is the sandbox's own;
- the ``writable`` trees (the throwaway root, the client's scratch) are bound at their
  own paths, and the ``readable`` ones (the repository, this Python) read-only;
- the network is the sandbox's own loopback only;
- CAP_SYS_ADMIN is dropped and no further user namespace can be made, so nothing in it
  can remount a tree writable or mount another.

:func:`probe` asks bwrap to make such a sandbox once: it needs user namespaces
(``CONFIG_USER_NS``, with ``user.max_user_namespaces`` above 0 and no LSM denying
them), and mount, PID and network namespaces. Where they are missing it is one
:class:`SandboxUnavailable` saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gfxpack.errors import GfxpackError

BWRAP = "bwrap"
# What the kernel must offer bwrap (for the messages saying why it could not).
KERNEL_FEATURES = (
    "user, mount, PID and network namespaces (CONFIG_USER_NS, CONFIG_NET_NS, "
    "CONFIG_PID_NS; sysctl user.max_user_namespaces above 0; no seccomp or LSM rule "
    "denying unshare or mount), and bwrap 0.8 or later"
)
# The machine's system directories the sandbox sees read-only (a symlink, as /bin of a
# merged-/usr system, stays that symlink).
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# Empty and private in the sandbox: scratch space, and no path to a daemon's socket.
PRIVATE = ("/tmp", "/var/tmp", "/run")
# The port a directory is served on (:meth:`Sandbox.command`): free, as the network
# namespace is new.
PORT = 8080
URL = f"http://127.0.0.1:{PORT}"

_NAMESPACES = (
    *("--unshare-user", "--uid", "0", "--gid", "0", "--disable-userns"),
    *("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"),
    *("--die-with-parent", "--new-session", "--cap-drop", "CAP_SYS_ADMIN"),
)

# Run inside the sandbox by this Python (standard library only): serve argv[1] on
# 127.0.0.1:argv[2], the sandbox's own loopback, while the command argv[3:] runs.
_SERVE_WHILE_RUNNING = """\
import functools, http.server, subprocess, sys, threading
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
handler = functools.partial(Quiet, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.exit(subprocess.run(sys.argv[3:], stdin=subprocess.DEVNULL).returncode)
"""


class SandboxUnavailable(GfxpackError):
    """bwrap is missing, or the kernel does not let it make the sandbox."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """Where a command may write (``writable``) and what else it may read of this
    machine besides the system directories (``readable``)."""

    writable: tuple[Path, ...]
    readable: tuple[Path, ...] = ()
    # Trees of this machine seen read-only at another path: (tree, where it is seen).
    elsewhere: tuple[tuple[Path, Path], ...] = ()

    def command(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        serve: Path | None = None,
        cwd: Path | None = None,
    ) -> list[str]:
        """``command`` run in the sandbox with ``env`` as its whole environment, in
        ``cwd`` (default /); with ``serve``, that directory is served on :data:`URL`
        while it runs."""
        if serve is not None:
            command = [_python(), "-I", "-c", _SERVE_WHILE_RUNNING, str(serve), str(PORT), *command]
        arguments = [_bwrap(), *_NAMESPACES, "--clearenv"]
        for name, value in (env or {}).items():
            arguments += ["--setenv", name, value]
        arguments += _system()
        for path in (*self.readable, *_python_home()):
            arguments += ["--ro-bind", str(path), str(path)]
        for path, seen_at in self.elsewhere:
            arguments += ["--ro-bind", str(path), str(seen_at)]
        for path in self.writable:
            arguments += ["--bind", str(path), str(path)]
        return [*arguments, "--chdir", str(cwd or "/"), "--", *command]


def probe() -> None:
    """Make the sandbox once, running ``true`` in it; :class:`SandboxUnavailable`
    naming what is missing when it cannot be made."""
    command = Sandbox(()).command(["true"])
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, errors="replace", check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"{BWRAP} could not be run: {e}") from None
    if result.returncode != 0:
        said = " ".join(result.stderr.split()) or f"exit status {result.returncode}"
        raise SandboxUnavailable(
            f"{BWRAP} cannot make the sandbox here ({said}): it needs {KERNEL_FEATURES}"
        )


def _bwrap() -> str:
    found = shutil.which(BWRAP)
    if found is None:
        raise SandboxUnavailable(f"{BWRAP} not found: install it with apt-get install bubblewrap")
    return found


def _system() -> list[str]:
    """bwrap's arguments for this machine's system directories and the private ones."""
    arguments = []
    for path in SYSTEM:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    arguments += ["--dev", "/dev", "--proc", "/proc"]
    for path in PRIVATE:
        arguments += ["--tmpfs", path]
    return [*arguments, "--symlink", "../run", "/var/run"]


def _python() -> str:
    """This Python's interpreter itself (not a virtual environment's link to it): the
    server in the sandbox needs the standard library only."""
    return os.path.realpath(sys.executable)


def _python_home() -> list[Path]:
    """The installation :func:`_python` runs from, unless the system directories hold it."""
    home = Path(sys.base_prefix).resolve()
    return [] if any(home.is_relative_to(s) for s in SYSTEM) else [home]
