"""Lambda, as far as the handlers can tell: env, handler string, timeout, concurrency, role.

An invocation imports the function's ``Handler`` (``module.attr``), runs it
with the template's ``Environment`` (intrinsics resolved), a context whose
remaining time is the simulated time left before ``Timeout``, and its stdout
captured (the log lines and the EMF metrics Powertools prints). Reserved
concurrency is enforced: an invocation over it is throttled, not run.

Each invocation runs in a *container* of its function, as on Lambda: a warm
one that is not busy, or a new one (a cold start). A container is its own
Python process as far as the handler can tell: it gets its own copy of the
handler module and of ``adapters.observability`` (loaded afresh for it, so
module-level state such as the tick's lease owner, the worker's clients or
the API's services belongs to that container alone), its own Powertools
metric set, and its function's environment variables. Two overlapping
invocations of one function are two containers; a container whose
invocation timed out is thrown away, as Lambda resets the environment.

What Lambda charges in time, besides the handler's sleeps (docs/simulator.md,
"What the simulator charges: CPU, cold starts, the network"):

- a container's first invocation spends its init phase first, billed and
  before the handler runs, on a full core (``INIT_CPU_FACTOR``): the imports
  (``INIT_IMPORT_CPU_S``), and the clients (``INIT_BUILD_CPU_S``) when the
  handler module builds them there (it has an ``init_container``, which the
  simulator calls after the module's seams are set, as Lambda runs it at the
  module's end); a module that leaves its clients to its first invocation
  spends that CPU at its function's share, after the init phase. The
  function's ``Timeout`` counts from the end of the init phase;
- a container is one share of a core: the CPU its threads spend (its init, its
  AWS requests' botocore work, ``Container.compute``) is served one slice after
  another, so two strands of one invocation wait for each other and two
  containers do not;
- an invocation is throttled over its reserved concurrency, over the account's
  concurrency left to unreserved functions (``AccountConcurrency``), or when it
  needs a new environment and its function has started as many as Lambda's
  scaling rate allows (``ScalingRate``: 1,000 every 10 s).

The API is exempt from the time charges (its cold start and its requests'
CPU and latency): the scenarios call it synchronously to set up schedules, and
``Simulation.api`` expects it to answer without sleeping.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import itertools
import os
import sys
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from sim.aws import Account, Actor, charges_time
from sim.engine import Engine, FunctionTimedOut, Process
from sim.iam import RolePolicy, role_policy
from sim.template import Stack

_invocation_ids = itertools.count(1)

# bench/worker_probe.py, on one full core: the worker's cold start, in CPU seconds, its
# modules imported (about 64% of it, the median of six runs of the probe) and its
# clients built (the rest).
COLD_START_CPU_S = 0.36
INIT_IMPORT_CPU_S = 0.23
INIT_BUILD_CPU_S = COLD_START_CPU_S - INIT_IMPORT_CPU_S
# Lambda runs a function's init phase with burst CPU, whatever its memory, for up to 10 s
# on its managed runtimes (AWS Labs, Lambda Web Adapter docs, "Async Initialization"; the
# Lambda developer guide does not say so), and the function's share applies again from its
# first invocation. The simulator gives the init phase one full core; work a handler
# leaves to its first invocation runs at its function's share.
INIT_CPU_FACTOR = 1.0
# Lambda gives a function one full vCPU at 1,769 MB and a proportional share below it; a
# Python process runs Python on one core at a time, so more memory buys no more than one.
FULL_VCPU_MB = 1769
# Lambda's concurrency scaling rate (AWS docs, "Lambda scaling behavior", since November
# 2023): per function, at most 1,000 new execution environments every 10 seconds, refilled
# continuously and never banked beyond 1,000.
SCALING_ENVIRONMENTS = 1000
SCALING_WINDOW_S = 10.0
# The account's concurrent executions (Lambda's default quota), shared by every function
# without reserved concurrency, less what the reserved ones hold.
ACCOUNT_CONCURRENCY = 1000


def cpu_factor(memory_mb: int) -> float:
    """How many times longer CPU work takes at ``memory_mb`` than on one full core."""
    return max(1.0, FULL_VCPU_MB / memory_mb)


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
    container: int = 0  # which environment of its function ran it
    cold: bool = False  # the container's first invocation
    init_s: float = 0.0  # its init phase (a charged cold start), within its duration
    # Inside planning (the API's at the call, the tick's per-run work): what it does then is
    # a run's, not set-up nor idle cost.
    planning: int = 0
    planning_s: float = 0.0  # simulated time spent planning (within the duration)
    planning_since: float = 0.0

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


# A seam: the simulator's stand-in for something a container's copy of a handler module
# would otherwise do for real (a thread pool, a socket); applied to that copy only.
ModuleSeam = Callable[[ModuleType], None]
OBSERVABILITY = "adapters.observability"
_containers_made = itertools.count(1)


def fresh_module(name: str, use: dict[str, ModuleType] | None = None) -> ModuleType:
    """A new copy of module ``name``, executed afresh (its own globals, caches and
    defaults), importing the modules in ``use`` in place of the shared ones. The
    shared module is imported first, so what it depends on is loaded once."""
    importlib.import_module(name)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a copy of {name}")
    module = importlib.util.module_from_spec(spec)
    replaced = {key: sys.modules[key] for key in [name, *(use or {})] if key in sys.modules}
    sys.modules.update(use or {})
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        for key in [name, *(use or {})]:
            if key in replaced:
                sys.modules[key] = replaced[key]
            else:
                sys.modules.pop(key, None)
    return module


# The helper modules a handler module imports that log or count through the
# observability module on their own: a container loads its own copy of each, as a
# Lambda environment would, so what they emit carries the container's logger and
# metrics (DeadLettered from the sweep and the intents, the attempts' lines and
# metrics from the telemetry, the tick's heartbeat from its pass). A helper that
# defines classes other modules share (the API's errors and routers) must stay
# shared, so the list is explicit.
CONTAINER_HELPERS: dict[str, tuple[str, ...]] = {
    "handlers.worker": ("handlers.sweep", "adapters.telemetry", "handlers.intents"),
    "handlers.tick": ("handlers.tick_pass",),
}


class Container:
    """One Lambda execution environment of a function: its own copy of the handler
    module (and of the module that builds the logger and metrics), its own metric set."""

    def __init__(self, function: Function) -> None:
        self.function = function
        self.id = next(_containers_made)
        self.invocations = 0
        self.discarded = False
        # Powertools keeps the metrics not yet flushed in class-level dicts shared by
        # every ``Metrics`` in a process; each container keeps its own.
        self.metric_sets: tuple[dict[str, Any], ...] = ({}, {}, {})
        self._handler: Callable[..., Any] | None = None
        self._initialized = False
        self._built_at_init = False
        self.modules: dict[str, ModuleType] = {}
        # The container's one share of a core is busy until then (simulated seconds since
        # the epoch): CPU work of its threads is served one after another.
        self.cpu_free_at = 0.0

    def compute(self, engine: Engine, cpu_s: float) -> None:
        """Spend ``cpu_s`` of this container's CPU (already at its function's factor):
        after whatever CPU work of its other threads is ahead, in simulated time."""
        import time

        start = max(engine.now, self.cpu_free_at)
        self.cpu_free_at = start + cpu_s
        time.sleep(self.cpu_free_at - engine.now)  # simulated: other invocations run

    def handler(self) -> Callable[..., Any]:
        """The handler, loaded at this container's first invocation (its cold start)."""
        if self._handler is None:
            module_name, attribute = self.function.handler_path.rsplit(".", 1)
            observability = fresh_module(OBSERVABILITY)
            # The handler's helper modules that log or count (handlers.sweep) are the
            # container's own too, so what they emit carries its logger and metrics.
            own = {OBSERVABILITY: observability}
            for helper in CONTAINER_HELPERS.get(module_name, ()):
                own[helper] = fresh_module(helper, dict(own))  # and the helpers before it
            module = fresh_module(module_name, own)
            for seam in self.function.seams.get(module_name, ()):
                seam(module)
            self.modules = {**own, module_name: module}
            self._handler = getattr(module, attribute)
        return self._handler

    def init(self) -> bool:
        """The rest of the init phase, once: the handler module's ``init_container``
        (what it runs on Lambda as its last statement: its clients built). Whether the
        module builds its clients there."""
        if self._initialized:
            return self._built_at_init
        self._initialized = True
        name = self.function.handler_path.rsplit(".", 1)[0]
        init = getattr(self.modules.get(name), "init_container", None)
        self._built_at_init = callable(init)
        if callable(init):
            init()
        return self._built_at_init

    def drop_unflushed_metrics(self) -> None:
        """A timed-out environment is thrown away, with the metrics it had not printed."""
        for held in self.metric_sets:
            held.clear()
        if _ACTIVE[0] is self:
            for shared in _powertools_metric_sets():
                shared.clear()


class ScalingRate:
    """Lambda's concurrency scaling rate for one function: a bucket of new execution
    environments, ``SCALING_ENVIRONMENTS`` full, refilled continuously over
    ``SCALING_WINDOW_S``; each new environment takes one."""

    def __init__(self) -> None:
        self.tokens = float(SCALING_ENVIRONMENTS)
        self.at: float | None = None

    def take(self, now: float) -> bool:
        if self.at is not None:
            refill = (now - self.at) * SCALING_ENVIRONMENTS / SCALING_WINDOW_S
            self.tokens = min(float(SCALING_ENVIRONMENTS), self.tokens + refill)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class AccountConcurrency:
    """The account's concurrent executions: every function without reserved concurrency
    shares what the reservations leave of ``limit``."""

    def __init__(self, functions: dict[str, Function], limit: int = ACCOUNT_CONCURRENCY) -> None:
        self.functions = functions
        self.limit = limit

    def unreserved_left(self) -> int:
        reserved = sum(f.reserved or 0 for f in self.functions.values())
        running = sum(len(f.busy()) for f in self.functions.values() if f.reserved is None)
        return self.limit - reserved - running


class Function:
    def __init__(
        self,
        account: Account,
        stack: Stack,
        logical_id: str,
        seams: dict[str, list[ModuleSeam]] | None = None,
    ) -> None:
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
        self.seams: dict[str, list[ModuleSeam]] = seams if seams is not None else {}
        self.actor = Actor(self.key, self.policy)
        self.idle: list[Container] = []  # warm containers, most recently used last
        self.containers_started = 0
        self.peak_concurrency = 0
        self.cpu_factor = cpu_factor(self.memory_mb)
        self.scaling = ScalingRate()
        self.concurrency: AccountConcurrency | None = None  # set by the simulation
        self.throttled_by: Counter[str] = Counter()  # "reserved" | "account" | "scaling"

    @property
    def short(self) -> str:
        return self.logical_id

    def busy(self) -> list[Process]:
        self.running = [p for p in self.running if not p.done]
        return self.running

    def _throttle(self, engine: Engine) -> str | None:
        """Why an invocation now would be throttled, or None."""
        if self.reserved is not None:
            if len(self.busy()) >= self.reserved:
                return "reserved"
        elif self.concurrency is not None and self.concurrency.unreserved_left() <= 0:
            return "account"
        if not self.idle and not self.scaling.take(engine.now):
            return "scaling"  # a new environment is needed, and the rate allows none now
        return None

    def _container(self) -> Container:
        if self.idle:
            return self.idle.pop()
        self.containers_started += 1
        return Container(self)

    def invoke(
        self,
        engine: Engine,
        event: dict[str, Any],
        source: str,
        *,
        on_end: Callable[[Process], None] | None = None,
    ) -> Invocation | None:
        """Start an invocation now (it runs until it first sleeps); None when throttled.
        ``on_end`` is called once it has ended and been recorded (its caller's answer)."""
        reason = self._throttle(engine)
        if reason is not None:
            self.throttles.append(engine.elapsed_s())
            self.throttled_by[reason] += 1
            return None
        record = Invocation(next(_invocation_ids), self.key, source, engine.elapsed_s())
        self.invocations.append(record)
        container = self._container()
        container.invocations += 1
        record.container = container.id
        record.cold = container.invocations == 1
        charged = record.cold and charges_time(source)

        def activate() -> None:
            _switch_container(container)

        def body() -> Any:
            handler = container.handler()
            if charged:
                built = container.init()
                record.init_s = INIT_CPU_FACTOR * (
                    INIT_IMPORT_CPU_S + (INIT_BUILD_CPU_S if built else 0.0)
                )
                container.compute(engine, record.init_s)  # the init phase, billed
                # The function's Timeout counts from the end of the init phase.
                process.deadline = engine.now + self.timeout_s
                if not built:  # the first invocation builds the clients, at the share
                    container.compute(engine, INIT_BUILD_CPU_S * self.cpu_factor)
            else:
                container.init()
            context = Context(self, process)
            return handler(event, context)

        deadline = None if charged else engine.now + self.timeout_s
        process = Process(engine, f"{self.short}#{record.id}", body, deadline)
        process.record = record  # type: ignore[attr-defined]
        process.function = self  # type: ignore[attr-defined]
        process.container = container  # type: ignore[attr-defined]
        process.out = io.StringIO()  # type: ignore[attr-defined]
        process.on_activate = activate
        process.on_end = on_end  # type: ignore[attr-defined]
        self.busy().append(process)
        self.peak_concurrency = max(self.peak_concurrency, len(self.running))
        process.resume()
        return record

    def finish(self, process: Process, engine: Engine) -> None:
        """Record how an invocation ended (the engine calls this once it is done)."""
        record: Invocation = process.record  # type: ignore[attr-defined]
        container: Container = process.container  # type: ignore[attr-defined]
        record.ended_s = min(
            engine.elapsed_s(), (process.deadline or engine.now) - engine.start.timestamp()
        )
        error = process.error
        if isinstance(error, FunctionTimedOut):
            record.outcome = "timeout"
            record.error = f"Task timed out after {self.timeout_s:g} seconds"
            container.drop_unflushed_metrics()
            container.discarded = True  # Lambda resets an environment after a timeout
        elif error is not None:
            record.outcome = "error"
            record.error = f"{type(error).__name__}: {error}"
            record.trace = "".join(traceback.format_exception(error))
        else:
            record.outcome = "ok"
            record.result = process.result
        if not container.discarded:
            self.idle.append(container)
        text = process.out.getvalue()  # type: ignore[attr-defined]
        record.log_bytes = len(text.encode())
        record.lines = text.splitlines()


_ENV_KEYS: set[str] = set()
_ACTIVE: list[Container | None] = [None]  # the container whose invocation ran last


def _powertools_metric_sets() -> tuple[dict[str, Any], ...]:
    from aws_lambda_powertools import Metrics

    return (Metrics._metrics, Metrics._dimensions, Metrics._metadata)


def _switch_container(container: Container) -> None:
    """Make the process look like ``container``'s own Lambda environment: its
    function's variables only, and its own unflushed metrics."""
    active = _ACTIVE[0]
    if active is container:
        return
    function = container.function
    for key in _ENV_KEYS - function.env.keys():
        os.environ.pop(key, None)
    os.environ.update(function.env)
    _ENV_KEYS.update(function.env)
    shared = _powertools_metric_sets()
    if active is not None:
        for held, live in zip(active.metric_sets, shared, strict=True):
            held.clear()
            held.update(live)
    for held, live in zip(container.metric_sets, shared, strict=True):
        live.clear()
        live.update(held)
    _ACTIVE[0] = container


def reset_containers() -> None:
    """Forget every environment: a new simulation starts with cold containers."""
    _ACTIVE[0] = None
    for key in _ENV_KEYS:
        os.environ.pop(key, None)
    _ENV_KEYS.clear()
    for shared in _powertools_metric_sets():
        shared.clear()


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
