"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe):
load a page, collect every console error, uncaught exception, failed load and network
request, read values from the DOM and take a screenshot. No port, no network, no
driver library: the protocol is JSON messages separated by NUL bytes on fds 3 and 4.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
TIMEOUT = 60.0


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One page loaded in a fresh Chromium (its own --user-data-dir)."""

    def __init__(self, profile: Path, width: int = 1366, height: int = 768) -> None:
        binary = executable()
        assert binary is not None, "chromium is not installed (make system-tools installs it)"
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()

        def wire() -> None:  # in the child: the protocol wants its pipe ends on fds 3 and 4
            reading, writing = os.dup(to_browser), os.dup(from_browser)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.log = profile.with_suffix(".stderr")
        with open(self.log, "wb") as stderr:
            self.process = subprocess.Popen(
                [
                    binary,
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={width},{height}",
                    "--remote-debugging-pipe",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                # Our pipe ends are close-on-exec; only the dup2 copies on 3 and 4
                # (which dup2 makes inheritable) reach Chromium.
                close_fds=False,
                preexec_fn=wire,
            )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # --- the protocol ------------------------------------------------------------------

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply.get("result", {})
            self._record(reply)

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0))
            assert ready, f"chromium did not answer in {TIMEOUT:.0f} s; see {self.log}"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, f"chromium exited; see {self.log}"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _record(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event.get("method") == "Network.requestWillBeSent":
            self.requests.append(event["params"]["request"]["url"])

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._receive()
            self._record(event)
            if event.get("method") == method:
                return event

    # --- what tests use ----------------------------------------------------------------

    def load(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads seen so far."""
        self.evaluate("0")  # a round trip: events sent before it have arrived
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details["text"])
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(" ".join(str(a.get("value", "")) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
            elif method == "Network.loadingFailed":
                found.append(f"loading failed: {params.get('errorText')}")
        return found

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(AssertionError):  # it may be gone already
            self.call("Browser.close")
        try:
            self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._out)
        os.close(self._in)
