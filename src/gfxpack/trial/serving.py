"""Serving a repository over HTTP on 127.0.0.1, from this process: for a client that runs
outside the sandbox (dnf ``--no-scripts``), and for tests pointing a client at a
repository. In the sandbox, the sandbox serves it on its own loopback
(:meth:`gfxpack.sandbox.Sandbox.command`)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """An HTTP server for ``directory`` on a free port of 127.0.0.1, in a thread of this
    process; yields its URL and stops it on the way out."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
