"""The root of gfxpack's exception tree.

Every error a user can cause derives from :class:`GfxpackError`; the CLI
prints its message on one line and exits non-zero, never with a traceback.
"""


class GfxpackError(Exception):
    """An error caused by the user's input, with a message that names it."""
