"""The root of gfxpack's exception tree.

Every error a user can cause derives from :class:`GfxpackError`; the CLI
prints its message on one line and exits non-zero, never with a traceback.
"""

from collections.abc import Sequence


class GfxpackError(Exception):
    """An error caused by the user's input, with a message that names it."""


class StrictFailure(GfxpackError):
    """--strict and at least one warning: each warning is reported as an error."""

    reason = "strict"  # what a --json error says, for scripts (docs/reference/errors.md)

    def __init__(self, warnings: Sequence[str]) -> None:
        count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
        super().__init__("\n".join([*warnings, f"{count}, and --strict makes warnings errors"]))
