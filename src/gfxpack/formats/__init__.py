"""Package formats behind one small interface.

A format is a :class:`PackageFormat` (package_format.py): :data:`DEB` or
:data:`RPM`, owning every DEB/RPM difference, with ``filename(info)`` and
``write(info, out)``; ``info`` is a :class:`PackageInfo`: everything one
package needs, already in that format's spelling. The planner never knows
which format its packages become; the writers are ``deb.py`` and ``rpm.py``.
This package imports nothing above it (tests/test_layers.py): repositories,
install checks, inventories, signing and maintainer scripts each own their
per-format part, looked up by the format's name.
"""

from __future__ import annotations

from gfxpack.formats.info import PackageInfo
from gfxpack.formats.package_format import DEB, FORMATS, RPM, PackageFormat, format_named

__all__ = ["DEB", "FORMATS", "RPM", "PackageFormat", "PackageInfo", "format_named"]
