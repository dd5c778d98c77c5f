"""One simulated deployment: the account, its stacks' functions driven the way AWS drives them.

- EventBridge Scheduler invokes each ``AWS::Scheduler::Schedule`` target per
  its ``rate(...)`` expression and flexible window, asynchronously, as a
  handler's ``Invoke`` with ``InvocationType="Event"`` of a deployed function
  does: Lambda's async queue runs the event ``ASYNC_QUEUE_DELAY_S`` later, and
  retries a throttled one (reserved or account concurrency reached, or the
  scaling rate) with a back-off from 1 s doubling to 5 minutes, until the
  event is older than the function's ``MaximumEventAgeInSeconds`` (six hours
  by default), then drops it.
- The SQS event source mapping polls its queue every second, gathers up to
  ``BatchSize`` messages within ``MaximumBatchingWindowInSeconds``, invokes
  the function, deletes the successes (with ``ReportBatchItemFailures``, all
  but the reported failures; after a failed or timed-out invocation, none:
  they come back after the queue's visibility timeout, and moto moves them to
  the DLQ after ``maxReceiveCount``).
- The API is called as API Gateway's REST proxy would call it.
- AWS/Lambda (Invocations, Errors, Throttles, Duration) and AWS/SQS
  (ApproximateNumberOfMessagesVisible, each minute) metrics are made from
  the simulation's own counts; custom metrics come from the EMF lines the
  handlers print.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from sim.adversity import Adversities
from sim.at_least_once import AtLeastOnce
from sim.aws import Account, forget_moto_instances
from sim.cloudwatch import MetricStore
from sim.engine import Engine, Process, SimulationError
from sim.fastmoto import faster_moto
from sim.functions import (
    ACCOUNT_CONCURRENCY,
    AccountConcurrency,
    Function,
    ModuleSeam,
    install_stdout,
    reset_containers,
)
from sim.index_lag import IndexLag
from sim.limits import API_GATEWAY_TIMEOUT_S, limits_for
from sim.targets import Receiver
from sim.template import Stack

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400}
DEFAULT_MAX_EVENT_AGE_S = 6 * 3600
# Lambda's async queue (AWS docs, "How Lambda handles errors and retries with asynchronous
# invocation"): a throttled event goes back to the queue and is retried with an interval
# that "increases exponentially from 1 second after the first attempt to a maximum of 5
# minutes", for up to the event's maximum age.
ASYNC_RETRY_FIRST_S = 1.0
ASYNC_RETRY_MAX_S = 300.0
# The time from an event's acceptance (202) to its invocation when the function has room:
# the simulator's assumption (Lambda documents none; a queue poll and a dispatch).
ASYNC_QUEUE_DELAY_S = 0.1


@dataclass
class ScheduleRule:
    stack: Stack
    logical_id: str
    function: Function
    every_s: int
    flexible_s: float
    input: str
    enabled: bool = True
    paused: list[tuple[float, float]] = field(default_factory=list)  # [from, to) elapsed seconds
    fired: int = 0
    dropped: int = 0

    def active(self, elapsed_s: float) -> bool:
        return self.enabled and not any(a <= elapsed_s < b for a, b in self.paused)


# Lambda's SQS event source mapping scaling (standard queues): five concurrent batches when
# messages arrive, up to 300 more a minute while messages remain, at most 1,000 at once, and
# back to five when the queue is quiet. The account's concurrency (1,000 by default) is
# shared by every function without reserved concurrency.
ESM_START_BATCHES = 5
ESM_SCALE_UP_PER_MINUTE = 300
ESM_MAX_BATCHES = 1000
ESM_QUIET_S = 60.0


@dataclass
class EventSourceMapping:
    function: Function
    queue_url: str
    queue_arn: str
    batch_size: int
    window_s: float
    partial: bool
    maximum_concurrency: int | None = None  # ScalingConfig.MaximumConcurrency
    gathering: bool = False
    allowed: int = ESM_START_BATCHES  # concurrent batches the pollers may have in flight now
    in_flight: int = 0
    quiet_since: float | None = None
    peak_in_flight: int = 0
    throttled: int = 0
    received: int = 0  # messages its pollers received, redeliveries included


def esm_ceiling(mapping: EventSourceMapping, functions: list[Function]) -> int:
    """The most batches a mapping may have in flight: its own scaling limits
    (``ScalingConfig.MaximumConcurrency``), its function's reserved concurrency, or else
    what the account's concurrency leaves after every function's reservation."""
    ceiling = ESM_MAX_BATCHES
    if mapping.maximum_concurrency is not None:
        ceiling = min(ceiling, mapping.maximum_concurrency)
    if mapping.function.reserved is not None:
        ceiling = min(ceiling, mapping.function.reserved)
    else:
        reserved = sum(f.reserved or 0 for f in functions)
        ceiling = min(ceiling, ACCOUNT_CONCURRENCY - reserved)
    return max(1, ceiling)


def scale(mapping: EventSourceMapping, backlog: int, now: float, ceiling: int) -> None:
    """One second of the mapping's scaling: up by 300 batches a minute while messages are
    left after its pollers took theirs (``backlog``), back to five after a minute with
    none left, never over ``ceiling``."""
    if backlog == 0:
        if mapping.quiet_since is None:
            mapping.quiet_since = now
        elif now - mapping.quiet_since >= ESM_QUIET_S:
            mapping.allowed = ESM_START_BATCHES
    else:
        mapping.allowed += ESM_SCALE_UP_PER_MINUTE // 60
        mapping.quiet_since = None
    mapping.allowed = min(mapping.allowed, ceiling)


class Simulation:
    def __init__(
        self,
        templates: dict[str, dict[str, Any]],
        start: datetime,
        *,
        seed: int = 7,
        adversities: Adversities | None = None,
    ) -> None:
        self.templates = templates
        self.adversities = Adversities() if adversities is None else adversities
        self.engine = Engine(start)
        self.account = Account(self.engine)
        self.metrics = MetricStore()
        self.receiver = Receiver(self.engine)
        self.rng = random.Random(seed)
        self.stacks: dict[str, Stack] = {}
        self.functions: dict[str, Function] = {}
        self.concurrency = AccountConcurrency(self.functions)
        self.account.async_invoke = self._queue_invoke
        self.account.is_simulated_function = self._is_function
        self.async_dropped = 0  # events of handlers' Invokes older than their maximum age
        self.rules: list[ScheduleRule] = []
        self.mappings: list[EventSourceMapping] = []
        self.items_by_hour: list[dict[str, Any]] = []
        self.esm_requests: Counter[str] = Counter()
        self.scheduler_invocations = 0
        self.notes: list[str] = []
        self.sample_every_s = 3600.0
        self.labels: dict[str, str] = {}  # schedule id -> name, for the report
        on = self.adversities
        self.index_lag = IndexLag(lambda: self.engine.now, seed) if on.index_lag else None
        self.at_least_once = AtLeastOnce(seed) if on.at_least_once else None
        self.limits = limits_for(on, self.account)
        self.account.faults.extend(self.limits.faults())
        self.account.ttl_due = self.limits.ttl_due
        self.limits.running = self._running
        self._stack = ExitStack()
        # Module name -> what each container's copy of it gets (see _patch_code_seams).
        self.seams: dict[str, list[ModuleSeam]] = {}

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> Simulation:
        from moto import mock_aws

        reset_containers()
        self._stack.callback(reset_containers)
        self._stack.enter_context(mock_aws())
        self._stack.enter_context(self.engine)
        self._stack.enter_context(faster_moto(lambda: self.engine.now, self.index_lag))
        self._stack.enter_context(self.account)
        self._stack.callback(install_stdout(self.engine))
        self._patch_code_seams()
        self.engine.on_process_end = self._process_ended
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _patch_code_seams(self) -> None:
        """The places the code would wait on a real socket or a real thread.

        Each is set on a container's own copy of the handler module (``self.seams``,
        applied at the container's cold start), never on a shared module, so nothing
        outside the simulation sees it; where the handler has a parameter for it, through
        that parameter. A container's copy is loaded while simulated time runs, so
        defaults bound at definition time (``run_tick``'s ``sleep`` and ``monotonic``)
        are the simulated ones already."""
        from sim.engine import SimExecutor

        receiver = self.receiver
        seeds = random.Random(self.rng.random())

        def worker_seams(module: ModuleType) -> None:
            # The worker runs a batch's records on a thread pool: here each record is a
            # strand of its invocation, waiting (a slow target) in simulated time.
            module.ThreadPoolExecutor = functools.partial(SimExecutor, self.engine)  # type: ignore[attr-defined]
            # Its webhooks answer from the simulated receiver (only the HTTP exchange is
            # replaced), and its retry back-off draws from a seeded generator.
            build = getattr(module, "build_aws_worker", None)
            if build is not None:
                module.build_aws_worker = functools.partial(  # type: ignore[attr-defined]
                    build, webhook_exchange=receiver.post, rng=random.Random(seeds.random())
                )

        self.seams.setdefault("handlers.worker", []).append(worker_seams)

        engine = self.engine

        def api_seams(module: ModuleType) -> None:
            # The API plans an occurrence due within the tick's horizon at the call (its
            # the record, the HEAD's advance, the intent): that is a run's work, not the
            # schedule's set-up, and the account meters it apart (``Invocation.planning``).
            build = getattr(module, "build_services", None)
            if build is None:
                return

            @functools.wraps(build)
            def built(*args: Any, **kwargs: Any) -> Any:
                services = build(*args, **kwargs)
                planning = getattr(services.schedules, "planning", None)
                if planning is not None:
                    for name in ("plan", "send"):
                        setattr(planning, name, _planning(engine, getattr(planning, name)))
                return services

            module.build_services = built  # type: ignore[attr-defined]

        self.seams.setdefault("handlers.api", []).append(api_seams)

        from adapters.dynamodb import store

        original_concurrency = store_concurrency = store.CONCURRENCY

        def tick_seams(module: ModuleType) -> None:
            # A thread pool of the tick's (its fan-out of invocations) runs its tasks as
            # strands of the invocation, in simulated time, as the worker's do.
            module.ThreadPoolExecutor = functools.partial(SimExecutor, self.engine)  # type: ignore[attr-defined]
            # The tick's per-run work (planning a page of due schedules, walking a shard's
            # due records to admit and send them) is metered as planning, like the API's:
            # a run's, counted whole. What a pass does whatever is due (the due query, a
            # look at each shard, the heartbeat, releasing leases) is its idle cost.
            build = getattr(module, "build_aws_ticker", None)
            if build is None:
                return

            @functools.wraps(build)
            def built(*args: Any, **kwargs: Any) -> Any:
                parts = build(*args, **kwargs)  # bootstrap.aws.AwsTick
                ticker = parts.ticker
                # The store overlaps a page's requests on its pool, as on Lambda: here the
                # pool's threads are strands (they take turns, so moto sees one request
                # at a time), as many at once as it has threads.
                for port in (ticker.store.schedules, ticker.store.records):
                    if hasattr(port, "_executor"):
                        port.concurrency = store_concurrency
                        port._executor = SimExecutor(engine, store_concurrency)
                for part, name in ((ticker.planner, "_plan_page"), (ticker.dispatcher, "_walk")):
                    method = getattr(part, name, None)
                    if method is None:
                        raise SimulationError(
                            f"the tick's {type(part).__name__} has no {name}: the simulator "
                            "cannot tell its per-run writes from its idle ones"
                        )
                    setattr(part, name, _planning(engine, method))
                # A surge's wait and invokes are its runs' work; reading the ledger is
                # every pass's.
                if parts.surges is not None:
                    parts.surges.start = _planning(engine, parts.surges.start)
                return parts

            module.build_aws_ticker = built  # type: ignore[attr-defined]

        self.seams.setdefault("handlers.tick", []).append(tick_seams)

        # The one patch of a shared module left: the DynamoDB adapter overlaps independent
        # writes on a thread pool, and moto is not safe for concurrent requests (a
        # transaction copies a table while another thread's read adds to it), so the
        # adapter runs them one after the other here, but for the tick's (above), whose
        # pool becomes strands. The store is built inside each function's own builder,
        # which has no parameter for it.
        setattr(store, "CONCURRENCY", 1)  # noqa: B010
        self._stack.callback(lambda: setattr(store, "CONCURRENCY", original_concurrency))

    # --- deploying -----------------------------------------------------------------------------

    def deploy(self, name: str) -> Stack:
        stack = Stack(name, self.templates[name])
        self.stacks[name] = stack
        self.account.deploy(stack)
        for logical_id in stack.of_type("AWS::Lambda::Function"):
            function = Function(self.account, stack, logical_id, self.seams)
            function.concurrency = self.concurrency
            self.functions[function.key] = function
        for logical_id, resource in stack.of_type("AWS::Scheduler::Schedule").items():
            self._add_rule(stack, logical_id, resource["Properties"])
        for resource in stack.of_type("AWS::Lambda::EventSourceMapping").values():
            props = stack.resolve(resource["Properties"])
            function = self._function_named(props["FunctionName"])
            arn = props["EventSourceArn"]
            name_ = arn.rsplit(":", 1)[-1]
            from sim.template import queue_url

            mapping = EventSourceMapping(
                function=function,
                queue_url=queue_url(name_),
                queue_arn=arn,
                batch_size=int(props.get("BatchSize", 10)),
                window_s=float(props.get("MaximumBatchingWindowInSeconds", 0)),
                partial="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
                maximum_concurrency=(
                    int(props["ScalingConfig"]["MaximumConcurrency"])
                    if props.get("ScalingConfig", {}).get("MaximumConcurrency")
                    else None
                ),
            )
            self.mappings.append(mapping)
            self._poll(mapping)
        return stack

    def _is_function(self, name_or_arn: str) -> bool:
        try:
            self._function_named(name_or_arn)
        except KeyError:
            return False
        return True

    def _function_named(self, name_or_arn: str) -> Function:
        for function in self.functions.values():
            if name_or_arn in (function.name, function.arn) or name_or_arn.startswith(
                function.arn + ":"
            ):
                return function
        raise KeyError(f"no function {name_or_arn} in the deployed stacks")

    def function(self, stack: str, prefix: str) -> Function:
        """The function of ``stack`` whose logical id starts with ``prefix`` (FunctionsTick)."""
        found = [
            f
            for f in self.functions.values()
            if f.stack.name == stack and f.logical_id.startswith(prefix)
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} functions in {stack} start with {prefix}")
        return found[0]

    def _add_rule(self, stack: Stack, logical_id: str, raw: dict[str, Any]) -> None:
        props = stack.resolve(raw)
        match = _RATE.match(props["ScheduleExpression"])
        if match is None:
            raise ValueError(
                f"{logical_id}: schedule expression {props['ScheduleExpression']} is not modelled"
            )
        every_s = int(match.group(1)) * _UNIT_S[match.group(2).rstrip("s")]
        window = props.get("FlexibleTimeWindow", {"Mode": "OFF"})
        flexible_s = (
            60.0 * float(window.get("MaximumWindowInMinutes", 0))
            if window.get("Mode") == "FLEXIBLE"
            else 0.0
        )
        rule = ScheduleRule(
            stack=stack,
            logical_id=logical_id,
            function=self._function_named(props["Target"]["Arn"]),
            every_s=every_s,
            flexible_s=flexible_s,
            input=props["Target"].get("Input", "{}"),
            enabled=props.get("State", "ENABLED") == "ENABLED",
        )
        self.rules.append(rule)
        first = self.engine.now + every_s - (self.engine.now % every_s)
        self.engine.at(first, lambda: self._fire(rule, first))

    def rule(self, stack: str, prefix: str) -> ScheduleRule:
        found = [r for r in self.rules if r.stack.name == stack and r.logical_id.startswith(prefix)]
        if len(found) != 1:
            raise KeyError(f"{len(found)} schedules in {stack} start with {prefix}")
        return found[0]

    # --- EventBridge Scheduler and Lambda's async queue ----------------------------------------

    def _fire(self, rule: ScheduleRule, nominal: float) -> None:
        following = nominal + rule.every_s
        self.engine.at(following, lambda: self._fire(rule, following))
        if not rule.active(self.engine.now - self.engine.start.timestamp()):
            return
        rule.fired += 1
        self.scheduler_invocations += 1
        offset = self.rng.uniform(0, rule.flexible_s) if rule.flexible_s else 0.0
        scheduled = datetime.fromtimestamp(nominal, UTC).isoformat().replace("+00:00", "Z")
        event = json.loads(rule.input.replace("<aws.scheduler.scheduled-time>", scheduled))
        for delay in self._deliveries():
            self.engine.at(
                self.engine.now + offset + delay,
                lambda: self._invoke_async(rule.function, event, self.engine.now, rule),
            )

    def _queue_invoke(self, name_or_arn: str, event: Any) -> bool:
        """A handler's ``Invoke`` with ``InvocationType="Event"``: accepted now, run by the
        async queue ``ASYNC_QUEUE_DELAY_S`` later (the account's hook, sim/aws.py)."""
        try:
            function = self._function_named(name_or_arn)
        except KeyError:
            return False
        queued_at = self.engine.now
        for delay in self._deliveries():
            self.engine.after(
                ASYNC_QUEUE_DELAY_S + delay,
                lambda: self._invoke_async(function, event, queued_at),
            )
        return True

    def _running(self, invocation: int) -> bool:
        return any(
            getattr(p, "record", None) is not None and p.record.id == invocation  # type: ignore[attr-defined]
            for f in self.functions.values()
            for p in f.busy()
        )

    def _deliveries(self) -> list[float]:
        """When an accepted event is delivered (after its due time): once at once, or as
        ``sim.at_least_once`` has it (twice, late)."""
        return [0.0] if self.at_least_once is None else self.at_least_once.deliveries()

    def _invoke_async(
        self,
        function: Function,
        event: Any,
        queued_at: float,
        rule: ScheduleRule | None = None,
        retry_s: float = ASYNC_RETRY_FIRST_S,
    ) -> None:
        """Lambda's async queue runs one event; a throttled one goes back to the queue for
        ``retry_s`` (doubling to ``ASYNC_RETRY_MAX_S``), or is dropped past its max age."""
        if function.invoke(self.engine, event, "scheduler" if rule else "async") is not None:
            return
        max_age = self._max_event_age(function)
        if self.engine.now + retry_s - queued_at > max_age:
            if rule is not None:
                rule.dropped += 1
            else:
                self.async_dropped += 1
            return
        following = min(ASYNC_RETRY_MAX_S, retry_s * 2)
        self.engine.after(
            retry_s, lambda: self._invoke_async(function, event, queued_at, rule, following)
        )

    def _max_event_age(self, function: Function) -> float:
        for resource in function.stack.of_type("AWS::Lambda::EventInvokeConfig").values():
            props = resource["Properties"]
            if props.get("FunctionName", {}).get("Ref") == function.logical_id:
                return float(props.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE_S))
        return DEFAULT_MAX_EVENT_AGE_S

    # --- the SQS event source mapping ----------------------------------------------------------

    def _queue(self, url: str) -> Any:
        from moto.sqs.models import sqs_backends

        from sim.template import ACCOUNT, REGION

        return sqs_backends[ACCOUNT][REGION].queues[url.rsplit("/", 1)[-1]]

    def _visible(self, url: str) -> int:
        return int(self._queue(url).approximate_number_of_messages)

    def _in_flight(self, url: str) -> int:
        return int(self._queue(url).approximate_number_of_messages_not_visible)

    def _next_visible_s(self, url: str, before: float) -> float | None:
        """The first instant after now, and before ``before``, at which a message of the
        queue held back (delayed, or in flight) becomes visible: moto's own tests
        (``Message.delayed``: now >= delayed_until; ``Message.visible``: now >
        visible_at, both in milliseconds)."""
        now_ms = self.engine.now * 1000
        first: float | None = None
        for message in self._queue(url)._messages:
            at_ms = max(float(message.delayed_until), float(message.visible_at) + 1.0)
            if now_ms < at_ms < before * 1000 and (first is None or at_ms < first):
                first = at_ms
        return None if first is None else first / 1000

    def esm_ceiling(self, mapping: EventSourceMapping) -> int:
        return esm_ceiling(mapping, list(self.functions.values()))

    def _poll(self, mapping: EventSourceMapping) -> None:
        """One second of the mapping: its pollers take what they may, then it scales.
        Its pollers long-poll: a message that becomes visible within the second (a
        delay counted from a send at a fraction of a second) is received then, not at
        the next whole second."""
        following = self.engine.now + 1.0
        self.engine.at(following, lambda: self._poll(mapping))
        self._pull(mapping)
        scale(mapping, self._visible(mapping.queue_url), self.engine.now, self.esm_ceiling(mapping))
        self._wake_within(mapping, following)

    def _wake_within(self, mapping: EventSourceMapping, before: float) -> None:
        at = self._next_visible_s(mapping.queue_url, before)
        if at is None:
            return

        def wake() -> None:
            self._pull(mapping)
            self._wake_within(mapping, before)

        self.engine.at(at, wake)

    def _pull(self, mapping: EventSourceMapping) -> None:
        """Idle pollers receive batches and invoke the function, up to the batches allowed
        in flight. A poller whose invocation ended polls again at once (it long-polls)."""
        while not mapping.gathering and mapping.in_flight < mapping.allowed:
            if self._visible(mapping.queue_url) == 0:
                return
            messages = self._receive(mapping, mapping.batch_size)
            if not messages:
                return
            if len(messages) < mapping.batch_size and mapping.window_s > 0:
                mapping.gathering = True
                mapping.in_flight += 1  # a poller holds these while it waits for more

                def complete(first: list[dict[str, Any]] = messages) -> None:
                    mapping.gathering = False
                    mapping.in_flight -= 1
                    more = self._receive(mapping, mapping.batch_size - len(first))
                    self._deliver(mapping, first + more)

                self.engine.after(mapping.window_s, complete)
                return
            self._deliver(mapping, messages)

    def _receive(self, mapping: EventSourceMapping, count: int) -> list[dict[str, Any]]:
        """Up to ``count`` messages, ten a request (SQS's most): a batch larger than ten
        takes a poller several receives, until it is full or the queue has no more."""
        messages: list[dict[str, Any]] = []
        while len(messages) < count:
            self.esm_requests["sqs:ReceiveMessage"] += 1
            if self.limits.over_in_flight_cap(self._in_flight(mapping.queue_url)):
                break  # OverLimit: the poller gets nothing until messages leave flight
            answer = self.account.sim.sqs.receive_message(
                QueueUrl=mapping.queue_url,
                MaxNumberOfMessages=min(10, count - len(messages)),
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["All"],
            )
            got: list[dict[str, Any]] = answer.get("Messages", [])
            mapping.received += len(got)
            messages.extend(got)
            if len(got) < 10:
                break
        return messages

    def _deliver(self, mapping: EventSourceMapping, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": mapping.queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
        mapping.in_flight += 1
        mapping.peak_in_flight = max(mapping.peak_in_flight, mapping.in_flight)

        def ended(record: Any) -> None:
            mapping.in_flight -= 1
            self.engine.after(0.0, lambda: self._pull(mapping))
            if record.outcome != "ok":
                return  # the messages come back after the visibility timeout
            failed: set[str] = set()
            if mapping.partial and isinstance(record.result, dict):
                failed = {f["itemIdentifier"] for f in record.result.get("batchItemFailures", [])}
            entries = [
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]}
                for i, r in enumerate(records)
                if r["messageId"] not in failed
            ]
            if entries:
                self.esm_requests["sqs:DeleteMessageBatch"] += 1
                self.account.sim.sqs.delete_message_batch(
                    QueueUrl=mapping.queue_url, Entries=entries
                )

        started = mapping.function.invoke(
            self.engine,
            {"Records": records},
            "sqs",
            on_end=lambda p: ended(getattr(p, "record", None)),
        )
        if started is None:
            mapping.in_flight -= 1
            mapping.throttled += 1
            return  # throttled: the messages come back after the visibility timeout

    # --- invocation ends -----------------------------------------------------------------------

    def _process_ended(self, process: Process) -> None:
        function: Function | None = getattr(process, "function", None)
        if function is None:
            return
        function.finish(process, self.engine)
        record = process.record  # type: ignore[attr-defined]
        t = self.engine.start.timestamp() + (record.ended_s or 0.0)
        self.metrics.read_emf(record.lines, t)
        dims = {"FunctionName": function.name}
        start_t = self.engine.start.timestamp() + record.started_s
        self.metrics.put("AWS/Lambda", "Invocations", dims, start_t, 1.0)
        self.metrics.put("AWS/Lambda", "Errors", dims, t, 0.0 if record.outcome == "ok" else 1.0)
        self.metrics.put("AWS/Lambda", "Duration", dims, t, record.duration_s * 1000)
        on_end = getattr(process, "on_end", None)
        if on_end is not None:
            on_end(process)

    # --- the API, as API Gateway calls it ------------------------------------------------------

    def api(
        self,
        stack: str,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        from cli.local_http import to_event

        data = b"" if body is None else json.dumps(body).encode()
        event = to_event(
            method, path, {"Content-Type": "application/json", **(headers or {})}, data
        )
        function = self.function(stack, "FunctionsApi")
        record = function.invoke(self.engine, event, "api")
        if record is None:
            return 429, {"message": "Rate exceeded"}
        if record.outcome == "running":
            # Only a fault makes the API wait: time runs until it answers, or API Gateway
            # gives up at 29 s (the function runs on to its own timeout).
            gives_up = self.engine.now + API_GATEWAY_TIMEOUT_S
            while record.outcome == "running":
                following = self.engine.next_at()
                if self.limits.api_timeout and (following is None or following > gives_up):
                    self.engine.run_until(gives_up)
                    if record.outcome == "running":
                        waited_s = self.engine.elapsed_s() - record.started_s
                        self.limits.api_gateway_timed_out(waited_s)
                        return 504, {"message": "Endpoint request timed out"}
                    break
                if following is None:
                    raise RuntimeError("the API handler waits for nothing the simulation holds")
                self.engine.run_until(following)
        if record.outcome != "ok":
            return 502, {"message": record.error}
        response = record.result
        try:
            answer = json.loads(response.get("body") or "null")
        except ValueError:
            answer = response.get("body")
        return int(response["statusCode"]), answer

    # --- running -------------------------------------------------------------------------------

    def run_for(self, seconds: float, *, sample_every_s: float = 3600.0) -> None:
        """Let simulated time pass, with the built-in metrics and samples taken on the way."""
        end = self.engine.now + seconds
        self.sample_every_s = sample_every_s
        self.sample_items()
        next_minute = self.engine.now + 60 - (self.engine.now % 60)
        while next_minute <= end:
            self.engine.run_until(next_minute)
            self._queue_metrics()
            forget_moto_instances()  # what the simulator's own requests made moto keep
            elapsed = self.engine.elapsed_s()
            if int(elapsed) % int(sample_every_s) == 0:
                self.sample_items()
                self.account.expire_ttl()
            next_minute += 60
        self.engine.run_until(end)
        self.sample_items()

    def _queue_metrics(self) -> None:
        t = self.engine.now - 1e-6
        for stack in self.stacks.values():
            for logical_id in stack.of_type("AWS::SQS::Queue"):
                url = stack.ref(logical_id)
                self.metrics.put(
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    {"QueueName": stack.names[logical_id]},
                    t,
                    float(self._visible(url)),
                )

    def sample_items(self) -> None:
        sample: dict[str, Any] = {"at_s": round(self.engine.elapsed_s(), 3)}
        for stack in self.stacks.values():
            for logical_id in stack.of_type("AWS::DynamoDB::Table"):
                sample[f"{stack.name}/{logical_id}"] = self.account.item_count(
                    stack.names[logical_id]
                )
        if self.items_by_hour and self.items_by_hour[-1]["at_s"] == sample["at_s"]:
            return
        self.items_by_hour.append(sample)

    @contextmanager
    def faults(self, *faults: Any) -> Iterator[None]:
        self.account.faults.extend(faults)
        try:
            yield
        finally:
            for fault in faults:
                self.account.faults.remove(fault)


def _planning(engine: Engine, method: Any) -> Any:
    """``method`` with the running invocation marked as planning while it runs."""

    @functools.wraps(method)
    def marked(*args: Any, **kwargs: Any) -> Any:
        process = engine.current()
        record = getattr(process, "record", None)
        if record is None:
            return method(*args, **kwargs)
        if record.planning == 0:
            record.planning_since = engine.now
        record.planning += 1
        try:
            return method(*args, **kwargs)
        finally:
            record.planning -= 1
            if record.planning == 0:
                record.planning_s += engine.now - record.planning_since

    return marked
