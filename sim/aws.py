"""The account: moto resources made from the templates, and every request judged and counted.

Every botocore client built while the simulation runs gets two hooks on its
own event emitter (``before-parameter-build`` and ``after-call``), bound to
the invocation that built it: the request is stopped if that invocation is
past its timeout, counted by operation, judged against the function role's
policies from the template (an ``AccessDenied`` ClientError if refused,
raised into the handler as AWS would answer), and metered in DynamoDB
request units from item sizes (``bench/meter.py``'s rules). Faults a scenario
injects (a throttled write, a slow call) are applied at the same point.
Clients the simulator builds for itself carry no invocation and are not
judged or counted.

Each request of an invocation (but the API's: ``charges_time``)
also takes time, as on Lambda: botocore's CPU work (``CPU_PER_REQUEST_S``, at
the function's CPU factor, on its container's one share of a core), then a
round trip (``NETWORK_LATENCY_S``). A Lambda ``Invoke`` of a function
deployed in the simulation is answered here, as Lambda answers it, and never
reaches moto: an ``Event`` invocation is accepted (202) and handed to the
simulation's async queue (``Account.async_invoke``).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from botocore.exceptions import ClientError

from adapters.definitions import Index, Key, TableDefinition
from bench.meter import Meter
from sim.engine import Engine
from sim.iam import RolePolicy, checks
from sim.template import REGION, Stack, queue_url

# The phase of what an invocation does while it plans occurrences: the API at the call, the
# tick planning a page of due schedules or walking a shard's due records (see ``_phase``).
PLANNING = "planning"

# bench/worker_probe.py: about 4.3 ms of CPU a warm worker record on one full core, 83% of it
# botocore building, signing and parsing the record's three DynamoDB requests: 1.45 ms a
# request, whole. A batch request (a SendMessageBatch of ten, a TransactWriteItems, a
# BatchWriteItem) also serializes and parses each entry: ``CPU_PER_ENTRY_S`` for each past
# the first, an assumption (a tenth of a request's) the probe does not measure.
CPU_PER_REQUEST_S = 0.00145
CPU_PER_ENTRY_S = 0.000145
# One in-region round trip from Lambda, by service: assumptions (bench/prices.py assumes
# 8 ms for a DynamoDB or SQS request; DynamoDB's single-digit-millisecond reads are
# faster, an Invoke's authorization and queueing slower).
NETWORK_LATENCY_S = {"dynamodb": 0.004, "sqs": 0.008, "lambda": 0.015}
DEFAULT_NETWORK_LATENCY_S = 0.010


def charges_time(source: str) -> bool:
    """Whether an invocation from ``source`` is charged its cold start and its requests'
    CPU and latency: all but the API's (sim/functions.py's docstring says why)."""
    return source != "api"


_DENIED_CODES = {
    "dynamodb": "AccessDeniedException",
    "secretsmanager": "AccessDeniedException",
    "ssm": "AccessDeniedException",
    "sqs": "AccessDenied",
    "lambda": "AccessDeniedException",
}


@dataclass
class Actor:
    """Who a client acts for: a function, under its role. A client outlives an
    invocation (a warm container keeps its clients), so the invocation a request
    belongs to is the one whose turn it is when the request is made."""

    function: str  # "<stack>/<logical id>"
    policy: RolePolicy


@dataclass
class Denied:
    at_s: float
    function: str
    action: str
    resource: str
    operation: str
    reason: str


# A fault: (actor, service, operation, params) -> an error the service answers, seconds the
# request takes, or None. An error is answered per HTTP attempt, so botocore's retries see it
# as they would see AWS's answer (a throttle is retried with back-off, in simulated time).
Fault = Callable[[Actor, str, str, dict[str, Any]], "ClientError | float | None"]


def client_error(code: str, message: str, operation: str, status: int = 400) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


@dataclass
class Ledger:
    """What the account saw: requests, refusals, units, grants used."""

    requests: Counter[str] = field(default_factory=Counter)  # "service:Operation"
    requests_by_function: Counter[tuple[str, str]] = field(default_factory=Counter)
    requests_by_invocation: Counter[int] = field(default_factory=Counter)
    requests_by_hour: Counter[int] = field(default_factory=Counter)
    sqs_by_invocation: Counter[int] = field(default_factory=Counter)
    secrets_by_invocation: Counter[int] = field(default_factory=Counter)
    # SSM SecureString reads and writes: each is one KMS request SSM makes (the
    # parameter itself, standard tier at standard throughput, costs nothing).
    kms_by_invocation: Counter[int] = field(default_factory=Counter)
    # Items DynamoDB read to answer Scans and Queries (ScannedCount), by invocation.
    scanned_by_invocation: Counter[int] = field(default_factory=Counter)
    # The share of the three counts above made while the invocation planned (``_phase``).
    planning_requests_by_invocation: Counter[int] = field(default_factory=Counter)
    planning_sqs_by_invocation: Counter[int] = field(default_factory=Counter)
    planning_secrets_by_invocation: Counter[int] = field(default_factory=Counter)
    planning_kms_by_invocation: Counter[int] = field(default_factory=Counter)
    denied: list[Denied] = field(default_factory=list)
    used_grants: set[tuple[str, str, str]] = field(default_factory=set)
    injected: list[dict[str, Any]] = field(default_factory=list)
    # SNS Publish requests answered (sim/aws.py ``_answer_publish``), in order.
    published: list[dict[str, Any]] = field(default_factory=list)


class Account:
    """One AWS account on moto (in-process), holding one or more stacks."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.ledger = Ledger()
        self.faults: list[Fault] = []
        self.stacks: list[Stack] = []
        self.tables: dict[str, TableDefinition] = {}  # physical name -> keys and indexes
        self._local = threading.local()
        self._lock = threading.Lock()
        self._moto_lock = threading.RLock()
        self._meters: list[Meter] = []
        self._actor: Actor | None = None  # set while an invocation builds its clients
        self._original_create_client: Any = None
        self._original_create_loader: Any = None
        self._original_stubber_call: Any = None
        self.sim: Any = None  # the simulator's own, unjudged clients
        # The simulation's async queue: (function name or ARN, event) -> False when no
        # function of that name is deployed in it (the request then goes to moto).
        self.async_invoke: Callable[[str, Any], bool] | None = None
        self.is_simulated_function: Callable[[str], bool] = lambda _: False
        # Whether DynamoDB's TTL sweep has deleted an item by now: (table, key as text,
        # expiry, now) -> bool; at expiry unless the simulation lags it (sim.limits).
        self.ttl_due: Callable[[str, str, float, float], bool] = lambda t, k, at, now: at < now

    # --- hooks on every client -----------------------------------------------------------------

    def __enter__(self) -> Account:
        original = botocore.session.Session.create_client
        self._original_create_client = original
        account = self

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            process = account.engine.current()
            function = getattr(process, "function", None) if process is not None else None
            actor = getattr(function, "actor", None)
            if actor is not None:
                account._attach(client, actor)
            return client

        setattr(botocore.session.Session, "create_client", create_client)  # noqa: B010
        # Every container builds its own session and clients, as on Lambda; here they share
        # one loader of botocore's (read-only) service models, or a burst's hundreds of
        # containers would each hold their own copy in this one process.
        self._original_create_loader = botocore.session.create_loader
        setattr(  # noqa: B010
            botocore.session,
            "create_loader",
            functools.lru_cache(maxsize=4)(self._original_create_loader),
        )
        boto3.DEFAULT_SESSION = None
        self.sim = _SimClients()
        # moto's stubber passes by a request this account's hook answered (see ``_attach``).
        from moto.core.botocore_stubber import BotocoreStubber

        self._original_stubber_call = BotocoreStubber.__call__
        original_call = BotocoreStubber.__call__

        def stubber_call(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
            if getattr(request, "sim_answered", False):
                return None
            return original_call(stubber, event_name, request, **kwargs)

        setattr(BotocoreStubber, "__call__", stubber_call)  # noqa: B010
        return self

    def __exit__(self, *exc: object) -> None:
        from moto.core.botocore_stubber import BotocoreStubber

        setattr(BotocoreStubber, "__call__", self._original_stubber_call)  # noqa: B010
        setattr(botocore.session.Session, "create_client", self._original_create_client)  # noqa: B010
        setattr(botocore.session, "create_loader", self._original_create_loader)  # noqa: B010
        boto3.DEFAULT_SESSION = None

    def _attach(self, client: Any, actor: Actor) -> None:
        events = client.meta.events
        service = client.meta.service_model.service_name

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            self._before(actor, service, model.name, params)

        def after(model: Any, parsed: dict[str, Any], **_: Any) -> None:
            if service == "dynamodb":
                meter = self._meter()
                invocation = self._invocation()
                meter.phase = self._phase()  # type: ignore[assignment]
                meter._after_call(model=model, parsed=parsed)
                scanned = parsed.get("ScannedCount")
                if isinstance(scanned, int):
                    with self._lock:
                        self.ledger.scanned_by_invocation[invocation] += scanned

        def send(request: Any, event_name: str = "", **kwargs: Any) -> Any:
            # botocore calls *every* before-send handler and takes the first answer: moto's
            # own (registered for every client) would run the request a second time after
            # this one (a second message sent, a write made twice, a faulted write made
            # anyway). An answered request is marked so that moto's passes it by.
            request.sim_answered = False
            pending = getattr(self._local, "request", None)
            if pending is not None:
                answer = self._answer_fault(actor, *pending)
                if answer is None and pending[0] == "lambda":
                    answer = self._answer_invoke(*pending)
                if answer is None and pending[0] == "sns":
                    answer = self._answer_publish(actor, *pending)
                if answer is not None:
                    request.sim_answered = True
                    return answer
            # moto answers here. Its backends are not safe for concurrent requests (a query
            # iterating a table another thread writes to), and an invocation may make
            # requests from threads of its own (the DynamoDB adapter's pool): one at a time.
            from moto.core.models import botocore_stubber

            with self._moto_lock:
                try:
                    answer = botocore_stubber(event_name=event_name, request=request, **kwargs)
                finally:
                    forget_moto_instances()
            request.sim_answered = answer is not None
            return answer

        events.register("before-parameter-build.*.*", before)
        events.register_first("before-send.*.*", send)
        events.register("after-call.*.*", after)

    def _invocation(self) -> int:
        process = self.engine.current()
        record = getattr(process, "record", None)
        return int(record.id) if record is not None else 0

    def _phase(self) -> int | tuple[int, str]:
        """The meter's phase: the invocation, or ``(invocation, PLANNING)`` for what it
        does while it plans occurrences (a run's work, whatever invocation does it)."""
        process = self.engine.current()
        record = getattr(process, "record", None)
        if record is None:
            return 0
        return (int(record.id), PLANNING) if getattr(record, "planning", 0) else int(record.id)

    def _meter(self) -> Meter:
        meter = getattr(self._local, "meter", None)
        if meter is None:
            meter = Meter(_Locked(self.sim.dynamodb, self._moto_lock), self.tables)
            self._local.meter = meter
            with self._lock:
                self._meters.append(meter)
        return meter

    def _spend(self, service: str, params: dict[str, Any]) -> None:
        """A request's time inside the invocation making it: botocore's CPU on its
        container's share of a core, then the round trip; simulated, so other invocations
        run meanwhile. The API's requests, and any outside an invocation, take none."""
        import time

        process = self.engine.current()
        record = getattr(process, "record", None)
        container = getattr(process, "container", None)
        if process is None or record is None or container is None:
            return
        if not charges_time(record.source):
            return
        entries = _entries(params)
        cpu_s = (CPU_PER_REQUEST_S + CPU_PER_ENTRY_S * max(0, entries - 1)) * (
            container.function.cpu_factor
        )
        container.compute(self.engine, cpu_s)
        time.sleep(NETWORK_LATENCY_S.get(service, DEFAULT_NETWORK_LATENCY_S))
        process.check_deadline()

    def _answer_invoke(self, service: str, operation: str, params: dict[str, Any]) -> Any:
        """Lambda's answer to an ``Invoke`` of a function deployed in the simulation (never
        moto's, which would run a container): ``Event`` is accepted, 202 and an empty
        payload, and the event queued; ``DryRun`` is 204."""
        if operation != "Invoke" or self.async_invoke is None:
            return None
        name = str(params.get("FunctionName", ""))
        if not self.is_simulated_function(name):
            return None
        kind = params.get("InvocationType", "RequestResponse")
        if kind == "DryRun":
            return _lambda_response(204)
        if kind != "Event":
            from sim.engine import SimulationError

            raise SimulationError(
                f"Invoke of {name} with InvocationType {kind}: the simulator models "
                "Event (asynchronous) and DryRun invocations of its functions only"
            )
        self.async_invoke(name, _payload(params.get("Payload")))
        return _lambda_response(202)

    def _answer_publish(
        self, actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> Any:
        """SNS's answer to a ``Publish`` (never moto's, which needs the topic made): the
        message is recorded (who, when, to which topic, its attributes) and acknowledged
        with a message id. Subscribers are not modelled."""
        if operation != "Publish":
            return None
        attributes = {
            name: value.get("StringValue")
            for name, value in (params.get("MessageAttributes") or {}).items()
        }
        with self._lock:
            self.ledger.published.append(
                {
                    "at_s": round(self.engine.elapsed_s(), 3),
                    "function": actor.function,
                    "topic": params.get("TopicArn"),
                    "subject": params.get("Subject"),
                    "attributes": attributes,
                }
            )
            number = len(self.ledger.published)
        return _sns_publish_response(f"sim-{number:08d}")

    def _before(self, actor: Actor, service: str, operation: str, params: dict[str, Any]) -> None:
        self._spend(service, params)
        process = self.engine.current()
        if process is not None:
            process.check_deadline()
        self._local.request = (service, operation, params)
        self._count(actor, service, operation)
        for check in checks(service, operation, params):
            verdict = actor.policy.judge(check)
            if not verdict.allowed:
                self.ledger.denied.append(
                    Denied(
                        round(self.engine.elapsed_s(), 3),
                        actor.function,
                        check.action,
                        check.resource,
                        f"{service}:{operation}",
                        verdict.reason,
                    )
                )
                code = _DENIED_CODES.get(service, "AccessDenied")
                raise client_error(
                    code,
                    f"User: {actor.policy.role} is not authorized to perform: {check.action} "
                    f"on resource: {check.resource} because {verdict.reason}",
                    operation,
                )
            for action, resource in verdict.used:
                self.ledger.used_grants.add((actor.function, action, resource))
        if service == "dynamodb":
            meter = self._meter()
            meter.phase = self._phase()  # type: ignore[assignment]
            meter._before_call(model=_Model(service, operation), params=params)

    def _answer_fault(
        self, actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> Any:
        """A fault's effect on one HTTP attempt: an error response, or time spent."""
        import time

        from botocore.awsrequest import AWSResponse
        from moto.core.botocore_stubber import MockRawResponse

        for fault in list(self.faults):
            effect = fault(actor, service, operation, params)
            if effect is None:
                continue
            self.ledger.injected.append(
                {
                    "at_s": round(self.engine.elapsed_s(), 3),
                    "function": actor.function,
                    "operation": f"{service}:{operation}",
                    "effect": effect
                    if isinstance(effect, float)
                    else effect.response["Error"]["Code"],
                }
            )
            if isinstance(effect, float):
                time.sleep(effect)  # simulated: other invocations run meanwhile
                process = self.engine.current()
                if process is not None:
                    process.check_deadline()
                continue
            error = effect.response["Error"]
            answer = {"__type": error["Code"], "message": error["Message"]}
            if "CancellationReasons" in effect.response:
                answer["CancellationReasons"] = effect.response["CancellationReasons"]
            body = json.dumps(answer).encode()
            status = int(effect.response["ResponseMetadata"]["HTTPStatusCode"])
            headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "sim"}
            return AWSResponse("https://sim", status, headers, MockRawResponse(body))
        return None

    def _count(self, actor: Actor, service: str, operation: str) -> None:
        key = f"{service}:{operation}"
        with self._lock:
            self.ledger.requests[key] += 1
            self.ledger.requests_by_function[(actor.function, key)] += 1
            invocation = self._invocation()
            planning = isinstance(self._phase(), tuple)
            self.ledger.requests_by_invocation[invocation] += 1
            self.ledger.requests_by_hour[int(self.engine.elapsed_s() // 3600)] += 1
            if planning:
                self.ledger.planning_requests_by_invocation[invocation] += 1
            if service == "sqs":
                self.ledger.sqs_by_invocation[invocation] += 1
                if planning:
                    self.ledger.planning_sqs_by_invocation[invocation] += 1
            if service == "secretsmanager":
                self.ledger.secrets_by_invocation[invocation] += 1
                if planning:
                    self.ledger.planning_secrets_by_invocation[invocation] += 1
            if service == "ssm" and operation in ("GetParameter", "PutParameter"):
                self.ledger.kms_by_invocation[invocation] += 1
                if planning:
                    self.ledger.planning_kms_by_invocation[invocation] += 1

    def units(self) -> dict[tuple[Any, str], float]:
        """DynamoDB units by (invocation, "wru" | "rru")."""
        total: defaultdict[tuple[Any, str], float] = defaultdict(float)
        for meter in self._meters:
            for (phase, kind), value in meter.units.items():
                invocation = phase[0] if isinstance(phase, tuple) else phase
                total[(invocation, kind)] += value
        return dict(total)

    def units_by_phase(self) -> dict[tuple[Any, str], float]:
        """DynamoDB units by (phase, "wru" | "rru"): the phase is the invocation, or
        ``(invocation, PLANNING)`` for what it read and wrote while planning."""
        total: defaultdict[tuple[Any, str], float] = defaultdict(float)
        for meter in self._meters:
            for (phase, kind), value in meter.units.items():
                total[(phase, kind)] += value
        return dict(total)

    def write_units(self) -> dict[tuple[Any, str], float]:
        """DynamoDB write units by (invocation, where): where is the table's logical id
        (the CDK's hash suffix dropped), or ``<table>/index/<index name>``; the invocation
        is ``(id, PLANNING)`` for an invocation's writes while it plans (``_phase``)."""
        total: defaultdict[tuple[Any, str], float] = defaultdict(float)
        for meter in self._meters:
            for (invocation, where), value in meter.write_units.items():
                table, _, index = where.partition("/index/")
                definition = self.tables.get(table)
                label = _label(definition.logical_id) if definition is not None else table
                total[(invocation, f"{label}/index/{index}" if index else label)] += value
        return dict(total)

    # --- resources from the template -----------------------------------------------------------

    def deploy(self, stack: Stack) -> None:
        """Create the stack's tables, queues and secrets from their own properties."""
        self.stacks.append(stack)
        for logical_id in stack.of_type("AWS::DynamoDB::Table"):
            self._create_table(stack, logical_id)
        queues = stack.of_type("AWS::SQS::Queue")
        # Dead-letter queues first: a redrive policy names an existing queue.
        for logical_id in sorted(queues, key=lambda q: "RedrivePolicy" in stack.props(q)):
            self._create_queue(stack, logical_id)
        for logical_id in stack.of_type("AWS::SecretsManager::Secret"):
            props = stack.resolve(stack.props(logical_id))
            self.sim.secretsmanager.create_secret(
                Name=stack.names[logical_id],
                SecretString=props.get("SecretString") or "generated-by-the-simulator",
            )

    def _create_table(self, stack: Stack, logical_id: str) -> None:
        props = stack.resolve(stack.props(logical_id))
        name = stack.names[logical_id]
        args: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PROVISIONED"),
        }
        if args["BillingMode"] == "PROVISIONED":
            args["ProvisionedThroughput"] = props["ProvisionedThroughput"]
        if props.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if props.get("LocalSecondaryIndexes"):
            args["LocalSecondaryIndexes"] = props["LocalSecondaryIndexes"]
        self.sim.dynamodb.create_table(**args)
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            self.sim.dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        self.tables[name] = _definition(logical_id, props)

    def _create_queue(self, stack: Stack, logical_id: str) -> None:
        props = stack.resolve(stack.props(logical_id))
        attributes: dict[str, str] = {}
        for key in (
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "DelaySeconds",
            "ReceiveMessageWaitTimeSeconds",
            "MaximumMessageSize",
            "FifoQueue",
            "ContentBasedDeduplication",
        ):
            if key in props:
                attributes[key] = (
                    str(props[key]).lower() if isinstance(props[key], bool) else str(props[key])
                )
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        name = stack.names[logical_id]
        url = self.sim.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        if url != queue_url(name):
            raise RuntimeError(f"moto answered queue URL {url}, expected {queue_url(name)}")

    # --- what the simulator reads without counting ---------------------------------------------

    def item_count(self, table: str) -> int:
        from moto.dynamodb.models import dynamodb_backends

        backend = dynamodb_backends[_account()][REGION]
        return sum(1 for _ in backend.get_table(table).all_items())

    def queue_depth(self, url: str) -> tuple[int, int]:
        """(visible, in flight) messages, from moto's state (no request)."""
        attributes = self.sim.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]), int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    def expire_ttl(self) -> int:
        """DynamoDB's TTL sweep (free on AWS, never done by moto): delete expired items
        whose deletion is due (``ttl_due``)."""
        removed = 0
        now = self.engine.now
        for table, definition in self.tables.items():
            if not definition.ttl_attribute:
                continue
            keys = [definition.partition_key.name] + (
                [definition.sort_key.name] if definition.sort_key else []
            )
            pages = self.sim.dynamodb.get_paginator("scan").paginate(TableName=table)
            for page in pages:
                for item in page["Items"]:
                    value = item.get(definition.ttl_attribute, {}).get("N")
                    key = json.dumps({k: item[k] for k in keys}, sort_keys=True)
                    if value is not None and self.ttl_due(table, key, float(value), now):
                        self.sim.dynamodb.delete_item(
                            TableName=table, Key={k: item[k] for k in keys}
                        )
                        removed += 1
        return removed


def _entries(params: dict[str, Any]) -> int:
    """How many entries one request carries (a batch's), 1 for a plain request."""
    if isinstance(params.get("Entries"), list):
        return max(1, len(params["Entries"]))
    if isinstance(params.get("TransactItems"), list):
        return max(1, len(params["TransactItems"]))
    if isinstance(params.get("RequestItems"), dict):
        count = 0
        for value in params["RequestItems"].values():
            count += len(value) if isinstance(value, list) else len(value.get("Keys", []))
        return max(1, count)
    return 1


def _payload(raw: Any) -> Any:
    """An Invoke's ``Payload`` (bytes, text or a file), JSON-decoded: the event."""
    if raw is None:
        return {}
    if hasattr(raw, "read"):
        raw = raw.read()
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode()
    return json.loads(raw) if str(raw).strip() else {}


def _lambda_response(status: int) -> Any:
    from botocore.awsrequest import AWSResponse
    from moto.core.botocore_stubber import MockRawResponse

    headers = {"Content-Type": "application/json", "x-amzn-RequestId": "sim"}
    return AWSResponse("https://sim", status, headers, MockRawResponse(b""))


def _sns_publish_response(message_id: str) -> Any:
    from botocore.awsrequest import AWSResponse
    from moto.core.botocore_stubber import MockRawResponse

    body = (
        '<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">'
        f"<PublishResult><MessageId>{message_id}</MessageId></PublishResult>"
        "<ResponseMetadata><RequestId>sim</RequestId></ResponseMetadata></PublishResponse>"
    ).encode()
    headers = {"Content-Type": "text/xml", "x-amzn-RequestId": "sim"}
    return AWSResponse("https://sim", 200, headers, MockRawResponse(body))


def forget_moto_instances() -> None:
    """Let go of every model instance moto has made so far.

    moto appends each instance of its models to a class-level list, for its server's
    dashboard only: every DynamoDB item ever written, every SQS message ever sent, and
    the copy of each table a ``TransactWriteItems`` takes before it writes (to roll back
    with). Nothing frees them before moto's reset, so a run's memory grew with the square
    of its size (a burst's creations each copy tables as large as the burst). The state
    moto answers from (its backends) is not in these lists; moto's own reset empties them
    the same way."""
    from moto.core.model_instances import reset_model_data

    reset_model_data()


class _SimClients:
    """The simulator's own clients: built outside any invocation, so never judged or counted."""

    def __init__(self) -> None:
        session = boto3.session.Session(region_name=REGION)
        self.dynamodb = session.client("dynamodb")
        self.sqs = session.client("sqs")
        self.secretsmanager = session.client("secretsmanager")


class _Locked:
    """The meter's reads of items before and after a write, one moto request at a time
    with the functions' own (moto's ``get_item`` may add an empty partition).

    A read of one item by its whole key (what the meter asks, twice per item written)
    is answered from moto's table directly, as the client would parse moto's answer
    (``stored_item``), without a request's serializing and parsing; anything else
    goes through the client."""

    def __init__(self, client: Any, lock: threading.RLock) -> None:
        self._client = client
        self._lock = lock

    def get_item(self, **kwargs: Any) -> Any:
        with self._lock:
            if set(kwargs) <= {"TableName", "Key", "ConsistentRead"}:
                found = stored_item(kwargs["TableName"], kwargs["Key"])
                if found is not _UNANSWERED:
                    return {} if found is None else {"Item": found}
            return self._client.get_item(**kwargs)


_UNANSWERED: Any = object()


def stored_item(table_name: str, key: dict[str, Any]) -> Any:
    """The item of ``key`` in moto's table, in the form a client's ``get_item`` gives
    it (numbers as text, binaries as bytes), None if there is none, or ``_UNANSWERED``
    where a request would be refused (no such table, not the table's whole key)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = dynamodb_backends[_account()][REGION].tables.get(table_name)
    if table is None:
        return _UNANSWERED
    names = {table.hash_key_attr} | ({table.range_key_attr} if table.range_key_attr else set())
    if set(key) != names or not all(isinstance(v, dict) and len(v) == 1 for v in key.values()):
        return _UNANSWERED
    hash_value = DynamoType(key[table.hash_key_attr])
    if table.range_key_attr:
        item = table.items.get(hash_value, {}).get(DynamoType(key[table.range_key_attr]))
    else:
        item = table.items.get(hash_value)
    if item is None:
        return None
    return {name: _parsed(value.to_json()) for name, value in item.attrs.items()}


def _parsed(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as botocore parses it from moto's JSON (binaries decoded)."""
    import base64

    [(kind, inner)] = value.items()
    if kind == "B":
        return {kind: inner if isinstance(inner, bytes) else base64.b64decode(inner)}
    if kind == "BS":
        return {kind: [v if isinstance(v, bytes) else base64.b64decode(v) for v in inner]}
    if kind == "L":
        return {kind: [_parsed(v if isinstance(v, dict) else v.to_json()) for v in inner]}
    if kind == "M":
        return {
            kind: {k: _parsed(v if isinstance(v, dict) else v.to_json()) for k, v in inner.items()}
        }
    return {kind: list(inner) if isinstance(inner, list) else inner}


@dataclass(frozen=True)
class _ServiceModel:
    service_name: str


class _Model:
    """The two fields of a botocore OperationModel that ``bench.meter.Meter`` reads."""

    def __init__(self, service: str, operation: str) -> None:
        self.service_model = _ServiceModel(service)
        self.name = operation


def _label(logical_id: str) -> str:
    """A logical id without the eight-character hash the CDK appends (TablesOccurrences)."""
    return re.sub(r"[0-9A-F]{8}$", "", logical_id) or logical_id


def _account() -> str:
    from sim.template import ACCOUNT

    return ACCOUNT


def _definition(logical_id: str, props: dict[str, Any]) -> TableDefinition:
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}

    def keys(schema: list[dict[str, str]]) -> tuple[Key, Key | None]:
        hash_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
        range_key = next((k["AttributeName"] for k in schema if k["KeyType"] == "RANGE"), None)
        return Key(hash_key, types[hash_key]), (
            Key(range_key, types[range_key]) if range_key else None
        )

    pk, sk = keys(props["KeySchema"])

    def indexes(name: str) -> tuple[Index, ...]:
        found = []
        for index in props.get(name, []):
            ipk, isk = keys(index["KeySchema"])
            found.append(Index(index["IndexName"], ipk, isk, index["Projection"]["ProjectionType"]))
        return tuple(found)

    ttl = props.get("TimeToLiveSpecification") or {}
    return TableDefinition(
        logical_id=logical_id,
        env_var="",
        partition_key=pk,
        sort_key=sk,
        global_indexes=indexes("GlobalSecondaryIndexes"),
        local_indexes=indexes("LocalSecondaryIndexes"),
        ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
    )
