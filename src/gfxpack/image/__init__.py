"""OCI container images per GPU arch (``gfxpack image``).

A release's packages are installed by the real client into a root over a base image's
files (:mod:`.install`), the root's files are put into layers by what they hold
(:mod:`.layers`: every arch-independent package's files in one host layer, each arch's
device packages' files in its own, the package database and the rest on top), each
layer written as a reproducible tar (:mod:`.layer`), and the images as an OCI image
layout (:mod:`.layout`) with labels naming the arch, version and repository
(:mod:`.labels`), optionally pushed to a registry (:mod:`.registry`). A base is read
from a layout, a docker-archive or a registry (:mod:`.base`) and unpacked without
following a symlink (:mod:`.unpack`); :mod:`.workflow` is the command's whole run and
:mod:`.report` what it built. No daemon is involved: the OCI image and distribution
specifications are written directly (tar, JSON, sha256).
"""

from __future__ import annotations

from gfxpack.errors import GfxpackError


class ImageError(GfxpackError):
    """An image could not be built, read or pushed; the message names what and why."""
