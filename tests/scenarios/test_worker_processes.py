"""`duetime local --worker-processes N`: delivery in N processes on one SQLite file.

The stack's own process runs one worker pool, each other one is a child
process under the supervisor: a child killed with SIGKILL is started again,
the stack's stop ends them all, and a stack killed with SIGKILL takes its
children with it (Linux), so nothing keeps delivering for a stack that is gone.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from cli.local import LocalStack
from cli.main import build_parser
from cli.supervisor import Restart
from tests.scenarios.local_processes import Receiver, call, start, wait_for

pytestmark = pytest.mark.slow

FAST = Restart(first_s=0.05, cap_s=0.2, healthy_after_s=30, give_up_after=1000)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) is not running either.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def test_worker_processes_deliver_come_back_when_killed_and_stop_with_the_stack(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    args = build_parser().parse_args(
        ["local", "--data-dir", str(tmp_path / "data"), "--port", "0", "--echo-port", "0",
         "--tick-interval", "0.2s", "--worker-processes", "3", "--workers", "2"]
    )  # fmt: skip
    stack = LocalStack(args, restart=FAST)
    children: list[int] = []
    try:
        stack.start()
        # Given a stack with two worker processes beside its own,
        wait_for(lambda: len(stack.children) == 2, 30, "two worker processes")
        first = {name: child.pid for name, child in stack.children.items()}
        assert set(first) == {"worker-2", "worker-3"}
        assert stack.api_url is not None
        call(
            "POST",
            f"{stack.api_url}/schedules",
            {"name": "every second", "spec": {"every": "PT1S"},
             "target": {"type": "webhook", "url": receiver.url}},
        )  # fmt: skip
        wait_for(lambda: len(receiver.deliveries()) >= 2, 30, "two deliveries")
        # when one of them is killed,
        os.kill(first["worker-2"], signal.SIGKILL)
        # then the supervisor starts another in its place, the other one untouched,
        wait_for(
            lambda: (
                stack.children.get("worker-2") is not None
                and stack.children["worker-2"].pid != first["worker-2"]
            ),
            30,
            "the killed worker process started again",
        )
        assert stack.children["worker-3"].pid == first["worker-3"]
        children = [child.pid for child in stack.children.values()]
        # and deliveries go on, one per occurrence.
        seen = len(receiver.deliveries())
        wait_for(lambda: len(receiver.deliveries()) >= seen + 2, 30, "more deliveries")
    finally:
        stack.shutdown()
    # When the stack stops, its worker processes have stopped too.
    assert stack.children == {}
    assert children and not any(_alive(pid) for pid in children)
    keys = [key for key, _ in receiver.deliveries()]
    assert len(keys) == len(set(keys))


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--child-of" in command and command[command.index(b"--child-of") + 1] == (
                str(pid).encode()
            ):
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_a_stack_killed_with_sigkill_takes_its_worker_processes_with_it(tmp_path: Path) -> None:
    stack = start(tmp_path, "--only", "tick,worker", "--worker-processes", "2")
    try:
        wait_for(lambda: len(_children_of(stack.pid)) == 1, 30, "the worker process")
        (child,) = _children_of(stack.pid)
        stack.send_signal(signal.SIGKILL)
        stack.wait(timeout=10)
        wait_for(lambda: not _alive(child), 10, "the worker process to end")
    finally:
        if stack.poll() is None:
            stack.kill()
            stack.wait(timeout=10)
