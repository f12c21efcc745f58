"""Trying an install: packages of a repository installed into a throwaway root by the
real client (apt-get, dnf or zypper), then a report of what is there.

``gfxpack try-install`` is :func:`try_install` (:mod:`gfxpack.trial.run`). In order:

1. The repository is read as ``gfxpack verify`` reads it (its indexes checked against
   Release or repomd.xml), and every requested name must be a package of it or
   provided by one: a typo is one error, with suggestions, before any client runs.
2. The root starts as a machine with the system packages the release depends on
   installed. For each package of the system list (``--system``; by default the
   bundled Debian 12 or Enterprise Linux 9 list that ``gfxpack verify`` assumes) an
   empty *stand-in* is written by gfxpack's own writer (:mod:`~gfxpack.trial.stand_ins`).
   dpkg or rpm installs the stand-ins first, so the client resolves the release
   against them as on a real machine; the report lists them apart.
3. The client installs the packages from the repository, served over HTTP on
   127.0.0.1, with its own configuration, state, cache and log in a client directory
   beside the root: nothing of the machine's package configuration is read or changed.
   Signatures are not checked here (``gfxpack verify --keyring`` checks them). Each
   client is an adapter (:mod:`~gfxpack.trial.clients`): apt-get with dpkg ``--root``
   (:mod:`~gfxpack.trial.apt`), ``dnf --installroot`` or ``zypper --root``
   (:mod:`~gfxpack.trial.rpm`, with :mod:`~gfxpack.trial.scriptlets` for rpm's
   chrooted scriptlets). The client, and every script it runs, runs in a sandbox
   (:mod:`gfxpack.sandbox`): the root and the client directory are the only trees it
   may write, this machine's system directories are read-only, its network is its own
   loopback, on which the repository is served. Where the sandbox cannot be made the
   install is refused; ``scripts=False`` (``--no-scripts``, dnf only) installs without
   running any scriptlet, outside the sandbox if need be (rpm installs the files
   chrooted, the repository served from this process: :mod:`~gfxpack.trial.serving`).
   Every step runs against one deadline (``timeout``, :mod:`~gfxpack.trial.tools`):
   a step still running at it is killed with its sandbox. Interrupted or timed out,
   the root and the client directory are removed, and what killed runs left in the
   temporary directory is removed by the next run (:mod:`~gfxpack.trial.roots`).
4. The report (:mod:`~gfxpack.trial.report`): every package installed (stand-ins
   aside) with the bytes of the regular files it owns in the root, the alternatives
   its scripts registered, and every package or file of another GPU arch than the
   archs the install is held to (``--arch``; by default the arch suffixes of the
   requested packages: ``amdrocm-core8.2-gfx942``, gfx942).

This package re-exports the names other modules and tests use, from the module that
holds each.
"""

from gfxpack.trial.apt import (
    APT_ARCHITECTURE,
    DPKG_DIRECTORIES,
    DPKG_OPTIONS,
    AptClient,
    apt_options,
    dpkg_database,
)
from gfxpack.trial.clients import CLIENTS, Client, client_named, default_client
from gfxpack.trial.report import ForeignFile, Installed, Trial, file_archs, other_archs
from gfxpack.trial.roots import CLIENT_PREFIX, MARKER, ROOT_PREFIX, RUNNING, sweep_stale
from gfxpack.trial.rpm import (
    RPM_RELEASEVER,
    DnfClient,
    ZypperClient,
    beside,
    dnf_options,
    repo_section,
    zypper_environment,
    zypper_options,
)
from gfxpack.trial.run import held_archs, try_install
from gfxpack.trial.scriptlets import (
    SCRIPTLET_DIRECTORIES,
    SCRIPTLET_TOOLS,
    scriptlet_sources,
    scriptlet_tools,
)
from gfxpack.trial.serving import serve
from gfxpack.trial.stand_ins import StandIn, stand_ins
from gfxpack.trial.tools import DEFAULT_TIMEOUT, TrialError, TrialTimeout

__all__ = [
    "APT_ARCHITECTURE",
    "CLIENTS",
    "CLIENT_PREFIX",
    "DEFAULT_TIMEOUT",
    "DPKG_DIRECTORIES",
    "DPKG_OPTIONS",
    "MARKER",
    "ROOT_PREFIX",
    "RPM_RELEASEVER",
    "RUNNING",
    "SCRIPTLET_DIRECTORIES",
    "SCRIPTLET_TOOLS",
    "AptClient",
    "Client",
    "DnfClient",
    "ForeignFile",
    "Installed",
    "StandIn",
    "Trial",
    "TrialError",
    "TrialTimeout",
    "ZypperClient",
    "apt_options",
    "beside",
    "client_named",
    "default_client",
    "dnf_options",
    "dpkg_database",
    "file_archs",
    "held_archs",
    "other_archs",
    "repo_section",
    "scriptlet_sources",
    "scriptlet_tools",
    "serve",
    "stand_ins",
    "sweep_stale",
    "try_install",
    "zypper_environment",
    "zypper_options",
]
