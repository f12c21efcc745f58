"""gfxpack.trial.tools: a step still running at the install's deadline is killed with
every process it started, sandboxed or not, and named in one error."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from gfxpack.sandbox import Sandbox
from gfxpack.trial.tools import Steps, TrialError, TrialTimeout

# What the test commands sleep: a number of seconds no other process sleeps.
SECONDS = 4000 + os.getpid() % 1000


def sleeping() -> list[int]:
    """The processes sleeping :data:`SECONDS`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if words[:2] == [b"sleep", str(SECONDS).encode()]:
            found.append(int(entry.name))
    return found


def none_sleeping() -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not sleeping():
            return True
        time.sleep(0.1)
    return False


# A shell that starts a sleep in the background, then sleeps itself: killing the shell
# alone (what subprocess.run's timeout does) would leave the first sleep running.
TWO_SLEEPS = ["sh", "-c", f"sleep {SECONDS} & sleep {SECONDS}"]


def test_a_step_that_ends_in_time_gives_its_output():
    assert Steps.starting_now(None, 30).run(["echo", "done"], "echoing") == "done\n"


def test_a_failing_step_is_one_error_with_its_last_lines():
    steps = Steps.starting_now(None, 30)
    with pytest.raises(TrialError, match=r"^listing failed \(sh exit status 3\):\n  said$"):
        steps.run(["sh", "-c", "echo said; exit 3"], "listing")


def test_a_step_past_the_deadline_is_killed_with_what_it_started():
    steps = Steps.starting_now(None, 1)
    with pytest.raises(TrialTimeout) as raised:
        steps.run(TWO_SLEEPS, "waiting")
    assert str(raised.value) == (
        "waiting timed out: still running 1 s after the install began (--timeout 1); it "
        "was killed with everything it started, and nothing of the install is left"
    )
    assert none_sleeping()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")
def test_a_sandboxed_step_past_the_deadline_is_killed_with_its_sandbox(tmp_path):
    # In the sandbox the command is in a session of its own (bwrap --new-session): the
    # process group killed is bwrap's, and the sandbox dies with it.
    steps = Steps.starting_now(Sandbox((tmp_path,)), 1)
    with pytest.raises(TrialTimeout, match=r"^waiting in the sandbox timed out: "):
        steps.run(TWO_SLEEPS, "waiting in the sandbox")
    assert none_sleeping()


def test_no_step_starts_past_the_deadline(tmp_path):
    steps = Steps(None, 5, time.monotonic() - 1)
    with pytest.raises(TrialTimeout, match=r"^touching timed out: "):
        steps.run(["touch", str(tmp_path / "made")], "touching")
    assert not (tmp_path / "made").exists()
