"""Which GPU arch a file belongs to, from its name or a directory's: the one answer
split (what it routes to an arch), try-install (its cross-arch file check) and probe
(which arch's data a runtime would read) share.

ROCm libraries name per-arch files in several ways, and a reader that knows only
some of them disagrees with one that knows others (a file split moved to an arch
was invisible to try-install's check). Every spelling below is from real upstream
names; the processors and generic targets are :mod:`gfxpack.amdgpu`'s table:

* a word starting ``gfx`` after a non-alphanumeric character: Tensile's
  ``TensileLibrary_lazy_gfx942.dat``, ``Kernels.so-000-gfx90a-xnack+.hsaco``
  (features spelled after ``-``), ``.kpack`` archives ``blas_lib_gfx942.kpack``,
  AOTriton's ``aotriton.images/amd-gfx942/``, hipBLASLt's ``library/gfx942/``,
  hipDNN's ``arch_content/<provider>/gfx942/``;
* MIOpen glues the compute-unit count to the processor (``gfx942130.kdb``,
  ``gfx90a6e.kdb``: hex above 64 CUs; ``gfx1030_36.kdb`` below), so a word is the
  longest processor it starts with;
* a generic target is a whole word (``x_gfx9-4-generic.co``, ``gfx11-generic``);
* device-libs bitcode drops the ``gfx``: ``oclc_isa_version_90a.bc``.

A path naming two archs belongs to the first, outermost one: a directory named for
an arch holds that arch's files, whatever they are called.

>>> [file_arch(p) for p in ("db/gfx942130.db.txt", "amdgcn/bitcode/oclc_isa_version_90a.bc",
...  "lib/x_gfx9-4-generic.co", "library/TensileLibrary.dat", "gfxpack/gfx11")]
['gfx942', 'gfx90a', 'gfx9-4-generic', None, None]
"""

from __future__ import annotations

import re

from gfxpack.amdgpu import BY_NAME, GENERIC_PROCESSORS, PROCESSORS_BY_LENGTH

# A word starting gfx and a digit, not inside another word (``libgfx9`` is not one),
# with the ``-`` parts that may follow (``gfx9-4-generic``, ``gfx90a-xnack``).
_WORD = re.compile(r"(?<![0-9a-z])gfx[0-9][0-9a-z]*(?:-[0-9a-z]+)*")
_ISA_BITCODE = re.compile(r"^oclc_isa_version_([0-9][0-9a-z]*)\.bc$")
KNOWN = frozenset(BY_NAME) | GENERIC_PROCESSORS  # every name the table gives a target


def file_arch(path: str) -> str | None:
    """The processor or generic target the file ``path`` (relative or absolute, ``/``
    separated) belongs to, or None when its name says no arch.

    >>> file_arch("/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco")
    'gfx90a'
    >>> file_arch("share/miopen/db/gfx90a6e.kdb"), file_arch("lib/libMIOpenCK_gfx1100.so")
    ('gfx90a', 'gfx1100')
    """
    lowered = path.lower()
    for part in lowered.split("/"):
        isa = _ISA_BITCODE.match(part)
        if isa and f"gfx{isa.group(1)}" in BY_NAME:
            return f"gfx{isa.group(1)}"
        for word in _WORD.findall(part):
            arch = _arch_of_word(word)
            if arch is not None:
                return arch
    return None


def _arch_of_word(word: str) -> str | None:
    """The target a ``gfx`` word names: the longest run of its ``-`` parts that is a
    known name (``gfx9-4-generic``; ``gfx90a`` of ``gfx90a-xnack``), else the longest
    processor its first part starts with (``gfx942`` of ``gfx942130``)."""
    parts = word.split("-")
    for count in range(len(parts), 0, -1):
        name = "-".join(parts[:count])
        if name in KNOWN:
            return name
    return next((p for p in PROCESSORS_BY_LENGTH if parts[0].startswith(p)), None)
