"""Lambda, as far as the handlers can tell: env, handler string, timeout, concurrency, role.

An invocation imports the function's ``Handler`` (``module.attr``), runs it
with the template's ``Environment`` (intrinsics resolved), a context whose
remaining time is the simulated time left before ``Timeout``, and its stdout
captured (the log lines and the EMF metrics Powertools prints). Reserved
concurrency is enforced: an invocation over it is throttled, not run.
"""

from __future__ import annotations

import importlib
import io
import itertools
import os
import sys
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sim.aws import Account, Actor
from sim.engine import Engine, FunctionTimedOut, Process
from sim.iam import RolePolicy, role_policy
from sim.template import Stack

_invocation_ids = itertools.count(1)


@dataclass
class Invocation:
    id: int
    function: str
    source: str
    started_s: float
    ended_s: float | None = None
    outcome: str = "running"  # ok | error | timeout
    error: str = ""
    trace: str = ""
    result: Any = None
    log_bytes: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return 0.0 if self.ended_s is None else self.ended_s - self.started_s


class Context:
    """The parts of the Lambda context object the handlers and Powertools read."""

    def __init__(self, function: Function, process: Process | None) -> None:
        self.function_name = function.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.arn
        self.memory_limit_in_mb = function.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.name}"
        self.log_stream_name = "sim"
        self._process = process

    def get_remaining_time_in_millis(self) -> int:
        process = self._process
        if process is None or process.deadline is None:
            return 900_000
        return max(0, int((process.deadline - process.engine.now) * 1000))


class Function:
    def __init__(self, account: Account, stack: Stack, logical_id: str) -> None:
        props = stack.props(logical_id)
        self.account = account
        self.stack = stack
        self.logical_id = logical_id
        self.key = f"{stack.name}/{logical_id}"
        self.name = stack.names[logical_id]
        self.arn = stack.arn(logical_id)
        self.handler_path = props["Handler"]
        self.env = {
            k: str(v)
            for k, v in stack.resolve(props.get("Environment", {}).get("Variables", {})).items()
        }
        self.timeout_s = float(props.get("Timeout", 3))
        self.memory_mb = int(props.get("MemorySize", 128))
        reserved = props.get("ReservedConcurrentExecutions")
        self.reserved: int | None = None if reserved is None else int(reserved)
        role = props["Role"]["Fn::GetAtt"][0]
        self.policy: RolePolicy = role_policy(stack, role)
        self.running: list[Process] = []
        self.invocations: list[Invocation] = []
        self.throttles: list[float] = []
        self.wrap: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None
        self.actor = Actor(self.key, self.policy)

    @property
    def short(self) -> str:
        return self.logical_id

    def _handler(self) -> Callable[..., Any]:
        module, attribute = self.handler_path.rsplit(".", 1)
        fn: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
        return self.wrap(fn) if self.wrap is not None else fn

    def invoke(self, engine: Engine, event: dict[str, Any], source: str) -> Invocation | None:
        """Start an invocation now (it runs until it first sleeps); None when throttled."""
        self.running = [p for p in self.running if not p.done]
        if self.reserved is not None and len(self.running) >= self.reserved:
            self.throttles.append(engine.elapsed_s())
            return None
        record = Invocation(next(_invocation_ids), self.key, source, engine.elapsed_s())
        self.invocations.append(record)

        def activate() -> None:
            _switch_container(self)

        def body() -> Any:
            context = Context(self, process)
            return self._handler()(event, context)

        process = Process(engine, f"{self.short}#{record.id}", body, engine.now + self.timeout_s)
        process.record = record  # type: ignore[attr-defined]
        process.function = self  # type: ignore[attr-defined]
        process.out = io.StringIO()  # type: ignore[attr-defined]
        process.on_activate = activate
        self.running.append(process)
        process.resume()
        return record

    def finish(self, process: Process, engine: Engine) -> None:
        """Record how an invocation ended (the engine calls this once it is done)."""
        record: Invocation = process.record  # type: ignore[attr-defined]
        record.ended_s = min(
            engine.elapsed_s(), (process.deadline or engine.now) - engine.start.timestamp()
        )
        error = process.error
        if isinstance(error, FunctionTimedOut):
            record.outcome = "timeout"
            record.error = f"Task timed out after {self.timeout_s:g} seconds"
            _drop_unflushed_metrics()
        elif error is not None:
            record.outcome = "error"
            record.error = f"{type(error).__name__}: {error}"
            record.trace = "".join(traceback.format_exception(error))
        else:
            record.outcome = "ok"
            record.result = process.result
        text = process.out.getvalue()  # type: ignore[attr-defined]
        record.log_bytes = len(text.encode())
        record.lines = text.splitlines()


_ENV_KEYS: set[str] = set()
_CONTAINERS: dict[str, str] = {}  # handler module -> the function whose container it is now
OBSERVABILITY = "handlers.observability"
_ACTIVE: str | None = None  # the function whose invocation ran last


def _switch_container(function: Function) -> None:
    """Make the process look like ``function``'s own Lambda environment: its variables
    only, and module-level caches (clients, services) that belong to it alone."""
    for key in _ENV_KEYS - function.env.keys():
        os.environ.pop(key, None)
    os.environ.update(function.env)
    _ENV_KEYS.update(function.env)
    module_name = function.handler_path.rsplit(".", 1)[0]
    if _CONTAINERS.get(module_name) != function.key:
        _clear_caches(module_name)  # a cold start: nothing cached by another function survives
    _CONTAINERS[module_name] = function.key
    global _ACTIVE
    if function.key != _ACTIVE:
        # Each function has its own process on Lambda, so its own logger and metrics,
        # built from its own variables (the ``service`` dimension is the stack's name).
        _clear_caches(OBSERVABILITY)
        _ACTIVE = function.key


def reset_containers() -> None:
    """Forget every function's environment: a new simulation starts with cold containers."""
    for module_name in _CONTAINERS:
        _clear_caches(module_name)
    _CONTAINERS.clear()
    global _ACTIVE
    _ACTIVE = None
    _clear_caches(OBSERVABILITY)
    for key in _ENV_KEYS:
        os.environ.pop(key, None)
    _ENV_KEYS.clear()
    _drop_unflushed_metrics()


def _clear_caches(module_name: str) -> None:
    module = sys.modules.get(module_name)
    for name, value in list(vars(module).items()) if module is not None else ():
        clear = getattr(value, "cache_clear", None)
        if callable(clear) and getattr(value, "__module__", None) == module_name:
            clear()
        elif name.startswith("_container_") and value is not None:
            # A handler's per-container object (the tick's ticker, the worker and its
            # queue), kept in a module global: another function's container starts cold.
            setattr(module, name, None)


def _drop_unflushed_metrics() -> None:
    """A timed-out Lambda environment is thrown away, with the metrics it had not printed."""
    from handlers.observability import metrics

    metrics().clear_metrics()


class CapturedStdout(io.TextIOBase):
    """sys.stdout while simulating: each invocation's output goes to its own buffer."""

    def __init__(self, engine: Engine, fallback: Any) -> None:
        self.engine = engine
        self.fallback = fallback

    def write(self, text: str) -> int:
        process = self.engine.current()
        if process is None or not hasattr(process, "out"):
            return len(text)  # the simulator's own output is not the handlers'
        if process.deadline is not None and self.engine.now > process.deadline:
            return len(text)  # written after Lambda stopped the invocation: never seen
        out: io.StringIO = process.out
        return out.write(text)

    def flush(self) -> None:
        pass


def install_stdout(engine: Engine) -> Callable[[], None]:
    saved = sys.stdout
    sys.stdout = CapturedStdout(engine, saved)

    def restore() -> None:
        sys.stdout = saved

    return restore
