"""The named scenarios. Each builds a simulation, drives it, and returns its summary.

Durations and the number of schedules have defaults for a full run and can
be shortened (``hours``, ``scale``); the summary says what was run.
``tick_interval_s`` thins the tick's passes: the deployed tick loops a
one-second pass for its whole budget (50 passes a minute), and a pass on
moto costs tens of requests, so a long run may space the passes further
apart (every invocation still runs, with fewer passes); the summary notes it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from botocore.exceptions import ClientError

from sim.aws import Actor, client_error
from sim.lateness import lateness
from sim.results import percentile, summary
from sim.routes import routes
from sim.scenario_blocks import PRIMARY, Options, create_schedule, thin_tick, webhook_target
from sim.world import Simulation

OTHER = "DuetimeOther"


def _minutely(after: datetime, until: datetime, step_s: int = 60) -> list[datetime]:
    """UTC instants that are multiples of ``step_s``, strictly after ``after``, up to ``until``."""
    t = int(after.timestamp()) // step_s * step_s + step_s
    found = []
    while t <= until.timestamp():
        found.append(datetime.fromtimestamp(t, UTC))
        t += step_s
    return found


def _weekdays_at_nine(zone: str, after: datetime, until: datetime) -> list[datetime]:
    tz = ZoneInfo(zone)
    found = []
    day = (after - timedelta(days=1)).astimezone(tz).date()
    while day <= until.astimezone(tz).date() + timedelta(days=1):
        if day.weekday() < 5:
            at = datetime(day.year, day.month, day.day, 9, 0, tzinfo=tz).astimezone(UTC)
            if after < at <= until:
                found.append(at)
        day += timedelta(days=1)
    return found


# --- idle-week -------------------------------------------------------------------------------


def idle_week(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """No schedules for a week: items per table and requests per hour must stay flat."""
    hours = 168.0 if options.hours is None else options.hours
    start = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        sample_s = 3600.0 if hours >= 3 else 600.0 if hours >= 1 else 300.0
        sim.run_for(hours * 3600, sample_every_s=sample_s)
        return summary(sim, "idle-week", {}, 0.0, {"sample_every_s": sample_s})


# --- mixed-day -------------------------------------------------------------------------------

ZONES = ("America/New_York", "Europe/London", "Asia/Kolkata", "Australia/Lord_Howe", "Asia/Tokyo")


def mixed_day(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """1,000 schedules (times ``scale``) over a day that crosses New York's spring-forward night."""
    hours = 24.0 if options.hours is None else options.hours
    # 2026-03-08 07:00Z is 02:00 EST -> 03:00 EDT in New York.
    start = datetime(2026, 3, 8, 6, 50, tzinfo=UTC)
    count = max(10, round(1000 * options.scale))
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        until = start + timedelta(hours=hours)
        expected: dict[str, list[datetime]] = {}
        for i in range(count):
            kind = i % 10
            now = sim.engine.moment()
            if kind < 4:  # every minute, most targets answer in 200 ms, a few slowly
                query = "ms=8000" if i % 40 == 1 else "ms=200"
                s = create_schedule(
                    sim,
                    PRIMARY,
                    {
                        "name": f"minutely-{i}",
                        "spec": {"cron": "* * * * *"},
                        "target": webhook_target(f"m{i}", query),
                    },
                )
                expected[s["id"]] = _minutely(now, until)
            elif kind < 6:  # hourly, in New York: follows elapsed time through the gap
                s = create_schedule(
                    sim,
                    PRIMARY,
                    {
                        "name": f"hourly-{i}",
                        "spec": {"cron": "0 * * * *", "time_zone": "America/New_York"},
                        "target": webhook_target(f"h{i}"),
                    },
                )
                expected[s["id"]] = _minutely(now, until, 3600)
            elif kind < 8:  # 09:00 on weekdays in five zones
                zone = ZONES[i % len(ZONES)]
                s = create_schedule(
                    sim,
                    PRIMARY,
                    {
                        "name": f"nine-{i}",
                        "spec": {"cron": "0 9 * * MON-FRI", "time_zone": zone},
                        "target": webhook_target(f"n{i}"),
                    },
                )
                expected[s["id"]] = _weekdays_at_nine(zone, now, until)
            elif kind == 8:  # every 10 seconds from the next minute
                anchor = _minutely(now, now + timedelta(minutes=2))[0]
                s = create_schedule(
                    sim,
                    PRIMARY,
                    {
                        "name": f"ten-{i}",
                        "spec": {
                            "every": "PT10S",
                            "start_at": anchor.isoformat().replace("+00:00", "Z"),
                        },
                        "target": webhook_target(f"t{i}"),
                    },
                )
                expected[s["id"]] = [
                    anchor + timedelta(seconds=10 * k)
                    for k in range(int((until - anchor).total_seconds() // 10) + 1)
                ]
            else:  # every minute, to a target that fails
                query = "status=500" if i % 20 == 9 else "ms=200&fail_first=1"
                s = create_schedule(
                    sim,
                    PRIMARY,
                    {
                        "name": f"failing-{i}",
                        "spec": {"cron": "* * * * *"},
                        "target": webhook_target(f"f{i}", query),
                    },
                )
                expected[s["id"]] = _minutely(now, until)
        if options.scale != 1.0:
            sim.notes.append(
                f"scaled: {count} schedules instead of 1,000 (--scale {options.scale:g})"
            )
        sim.run_for((until - start).total_seconds())
        return summary(sim, "mixed-day", expected, 180.0, {"schedules": count})


# --- faults ----------------------------------------------------------------------------------


def _once(
    predicate: Callable[[Actor, str, str, dict[str, Any]], bool],
    effect: Callable[[str], ClientError | float],
    times: int = 1,
) -> Callable[..., Any]:
    left = [times]

    def fault(
        actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> ClientError | float | None:
        if left[0] <= 0 or not predicate(actor, service, operation, params):
            return None
        left[0] -= 1
        return effect(operation)

    return fault


def faults(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """Everything that goes wrong in production, one after the other, in one run."""
    minutes = 22.0 if options.hours is None else options.hours * 60
    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        tick = sim.function(PRIMARY, "FunctionsTick")
        rule = sim.rule(PRIMARY, "SchedulesTick")
        now = sim.engine.moment()
        until = start + timedelta(minutes=minutes)
        expected: dict[str, list[datetime]] = {}
        for name, query in (("steady", "ms=200"), ("flaky", "ms=200&fail_first=1")):
            s = create_schedule(
                sim,
                PRIMARY,
                {
                    "name": name,
                    "spec": {"cron": "* * * * *"},
                    "target": webhook_target(name, query),
                    "policy": {"overdue": "catch_up_all"},
                },
            )
            expected[s["id"]] = _minutely(now, until)
        failing = create_schedule(
            sim,
            PRIMARY,
            {
                "name": "always-fails",
                "spec": {"cron": "* * * * *"},
                "target": webhook_target("broken", "status=500"),
                "policy": {
                    "overdue": "catch_up_all",
                    "retry": {"max_attempts": 2, "base": "PT1S", "cap": "PT2S"},
                },
            },
        )
        expected[failing["id"]] = _minutely(now, until)
        # Three targets that never answer within their 120 s timeout, due once at the same
        # instant, when nothing else is due: their intents arrive in one batch of their own.
        slow_at = start + timedelta(minutes=4, seconds=30)
        for name in ("slow-a", "slow-b", "slow-c"):
            slow = create_schedule(
                sim,
                PRIMARY,
                {
                    "name": name,
                    "spec": {"at": slow_at.isoformat().replace("+00:00", "Z")},
                    "target": {**webhook_target(name, "ms=200000"), "timeout_s": 120},
                    "policy": {"overdue": "catch_up_all"},
                },
            )
            expected[slow["id"]] = [slow_at]
        events: list[str] = []

        def is_tick(actor: Actor) -> bool:
            return actor.function == tick.key

        # 1. From 2m10s, the tick's next DynamoDB request stalls for longer than the function's
        # Timeout (from the template), so Lambda cuts the invocation off in the middle of a pass.
        stall_s = tick.timeout_s + 30.0
        stall = _once(lambda a, s, o, p: is_tick(a) and s == "dynamodb", lambda _: stall_s)
        sim.engine.at(start.timestamp() + 130, lambda: sim.account.faults.append(stall))
        events.append(
            f"2m10s: the tick's next DynamoDB request stalls {stall_s:g} s "
            f"(the tick is cut off at its {tick.timeout_s:g} s timeout)"
        )
        # 2. From 4m20s, extra tick invocations overlap whatever tick is running. Each extra
        # one's first DynamoDB request takes half the tick's Timeout, so it is still running
        # when the next arrives, however short a tick's own pass is; over the reserved
        # concurrency, one is throttled.
        hold_s = min(30.0, tick.timeout_s / 2)

        held: set[int] = set()

        def is_extra_tick(actor: Actor) -> bool:
            """An extra tick invocation's first request (each is held once at most)."""
            record = getattr(sim.engine.current(), "record", None)
            if not is_tick(actor) or getattr(record, "source", None) != "manual":
                return False
            if record is None or record.id in held:
                return False
            held.add(record.id)
            return True

        hold = _once(
            lambda a, s, o, p: s == "dynamodb" and is_extra_tick(a), lambda _: hold_s, times=2
        )
        sim.engine.at(start.timestamp() + 260, lambda: sim.account.faults.append(hold))
        for at_s in (260, 261, 262):
            sim.engine.at(
                start.timestamp() + at_s,
                lambda: _ignore(tick.invoke(sim.engine, {"source": "sim.extra"}, "manual")),
            )
        events.append(
            "4m20s, 4m21s, 4m22s: extra tick invocations, each holding its first DynamoDB "
            f"request {hold_s:g} s: they overlap the running tick, and one is over the "
            "reserved concurrency"
        )
        # 3. From minute 6 to 16 the tick's schedule does not fire.
        rule.paused.append((360.0, 960.0))
        events.append("6m-16m: the tick is stopped, then back")
        # 4. At minute 17, three writes to DynamoDB are throttled.
        throttle = _once(
            lambda a, s, o, p: (
                s == "dynamodb" and o in ("PutItem", "UpdateItem", "TransactWriteItems")
            ),
            lambda op: client_error(
                "ProvisionedThroughputExceededException",
                "Rate of requests exceeds the allowed throughput.",
                op,
            ),
            times=3,
        )
        sim.engine.at(start.timestamp() + 1020, lambda: sim.account.faults.append(throttle))
        events.append("17m: three DynamoDB writes answer ProvisionedThroughputExceededException")
        # 5. At minute 18, one delivery intent is delivered twice (SQS is at-least-once).
        sim.engine.at(start.timestamp() + 1080, lambda: _duplicate_next_intent(sim))
        events.append("18m: the next delivery intent sent is delivered a second time")
        # 6. At 1m40s, a copy of the next delivery intent is moved to the DLQ, as SQS's
        # redrive moves a message no worker finished with: the sweep closes (here: finds
        # already closed) its run and counts it, and DeadLettersArrived fires, then clears.
        sim.engine.at(start.timestamp() + REDRIVE_AT_S, lambda: _redrive_next_intent(sim))
        events.append("1m40s: a copy of the next delivery intent lands in the DLQ, as a redrive")
        events.append(
            "4m30s: three targets due together that never answer within their 120 s timeout"
        )
        events.append(
            "always-fails answers 500 to every attempt: its runs fail (a user's error, "
            "not a dead letter)"
        )
        sim.run_for((until - start).total_seconds())
        return summary(
            sim,
            "faults",
            expected,
            180.0,
            {
                "events": events,
                "always_failing_schedule": failing["id"],
                "stall_at_s": next(
                    (f["at_s"] for f in sim.account.ledger.injected if f["effect"] == stall_s),
                    None,
                ),
            },
        )


def _ignore(_: object) -> None:
    pass


# When the faults scenario moves an intent to the DLQ (tests/sim reads it).
REDRIVE_AT_S = 100.0


def _redrive_next_intent(sim: Simulation) -> None:
    """Put a copy of the next delivery intent the tick sends in the delivery DLQ, without
    a reason: what SQS's redrive does with a message received maxReceiveCount times."""
    env = sim.function(PRIMARY, "FunctionsWorker").env
    queue_url, dlq_url = env["DUETIME_DELIVERY_QUEUE_URL"], env["DUETIME_DELIVERY_DLQ_URL"]
    done = [False]

    def redrive(actor: Actor, service: str, operation: str, params: dict[str, Any]) -> None:
        if done[0] or service != "sqs" or operation not in ("SendMessageBatch", "SendMessage"):
            return None
        if params.get("QueueUrl") != queue_url:
            return None
        done[0] = True
        entries = params.get("Entries") or [{"MessageBody": params["MessageBody"]}]
        sim.account.sim.sqs.send_message(QueueUrl=dlq_url, MessageBody=entries[0]["MessageBody"])
        sim.account.ledger.injected.append(
            {
                "at_s": round(sim.engine.elapsed_s(), 3),
                "function": actor.function,
                "operation": "sqs:redrive",
                "effect": "a copy of the intent moved to the DLQ",
            }
        )
        return None

    sim.account.faults.append(redrive)


def _duplicate_next_intent(sim: Simulation) -> None:
    """Send a copy of the next delivery intent the tick sends: a second SQS delivery of it."""
    queue_url = sim.function(PRIMARY, "FunctionsWorker").env["DUETIME_DELIVERY_QUEUE_URL"]
    done = [False]

    def copy(actor: Actor, service: str, operation: str, params: dict[str, Any]) -> None:
        if done[0] or service != "sqs" or operation not in ("SendMessageBatch", "SendMessage"):
            return None
        if params.get("QueueUrl") != queue_url:
            return None
        done[0] = True
        entries = params.get("Entries") or [
            {"MessageBody": params["MessageBody"], "DelaySeconds": params.get("DelaySeconds", 0)}
        ]
        entry = entries[0]
        sim.account.sim.sqs.send_message(
            QueueUrl=queue_url,
            MessageBody=entry["MessageBody"],
            DelaySeconds=int(entry.get("DelaySeconds", 0)) + 5,
        )
        sim.account.ledger.injected.append(
            {
                "at_s": round(sim.engine.elapsed_s(), 3),
                "function": actor.function,
                "operation": "sqs:duplicate",
                "effect": "the intent delivered twice",
            }
        )
        return None

    sim.account.faults.append(copy)


# --- two-stacks ------------------------------------------------------------------------------


def two_stacks(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """Two stacks in one account; the second is stopped (its schedules disabled) after 5 minutes."""
    minutes = 30.0 if options.hours is None else options.hours * 60
    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        sim.deploy(OTHER)
        until = start + timedelta(minutes=minutes)
        expected: dict[str, list[datetime]] = {}
        now = sim.engine.moment()
        s = create_schedule(
            sim,
            PRIMARY,
            {"name": "live", "spec": {"cron": "* * * * *"}, "target": webhook_target("live")},
        )
        expected[s["id"]] = _minutely(now, until)
        create_schedule(
            sim,
            OTHER,
            {"name": "stopped", "spec": {"cron": "* * * * *"}, "target": webhook_target("stopped")},
        )
        for rule in sim.rules:
            if rule.stack.name == OTHER:
                rule.paused.append((300.0, float("inf")))
        sim.run_for((until - start).total_seconds())
        return summary(
            sim,
            "two-stacks",
            expected,
            180.0,
            {"live_stack": PRIMARY, "stopped_stack": OTHER, "stopped_at_s": 300.0},
        )


# --- alerts ----------------------------------------------------------------------------------

# The recovering target answers 500 until minute 16: the watchdog's pass at minute 5
# finds both schedules overdue, the one at 20 finds "recovers" ok again, more than the
# stack's minimum interval between two messages about one schedule after the first.
RECOVERS_AT_S = 960.0
ACKNOWLEDGE_AT_S = 420.0
# When a message no worker can run (not a delivery intent) reaches the delivery queue.
POISON_AT_S = 180.0


def alerts(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """Two schedules whose target fails from the start; one recovers at minute 16, the
    other's failure is acknowledged at minute 7; a third's webhook answers 410 (gone)
    throughout. The watchdog publishes each changed verdict to the alarm topic
    (``sns_messages``). Users' errors, all: the operator's alarms on dead letters and
    lateness stay OK through them, but for one message the worker cannot run at all,
    sent to the delivery queue at minute 3, which raises ``DeadLettersArrived`` once."""
    minutes = 22.0 if options.hours is None else options.hours * 60
    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        now = sim.engine.moment()
        until = start + timedelta(minutes=minutes)
        retry = {"max_attempts": 2, "base": "PT1S", "cap": "PT2S"}
        expected: dict[str, list[datetime]] = {}
        ids: dict[str, str] = {}
        for name, query in (
            ("recovers", f"fail_until_s={RECOVERS_AT_S:g}"),
            ("always-fails", "status=500"),
            ("gone", "status=410"),
        ):
            s = create_schedule(
                sim,
                PRIMARY,
                {
                    "name": name,
                    "spec": {"cron": "* * * * *"},
                    "target": webhook_target(name, query),
                    "policy": {"overdue": "catch_up_all", "retry": retry},
                },
            )
            expected[s["id"]] = _minutely(now, until)
            ids[name] = s["id"]
        # At minute 7 a user acknowledges always-fails' newest failure, under the API's role
        # (it writes two heartbeats of the leases table, by a LeadingKeys condition).
        acknowledged: list[int] = []

        def acknowledge() -> None:
            path = f"/schedules/{ids['always-fails']}/acknowledge"
            acknowledged.append(sim.api(PRIMARY, "POST", path, {"note": "known outage"})[0])

        sim.engine.at(start.timestamp() + ACKNOWLEDGE_AT_S, acknowledge)
        queue_url = sim.function(PRIMARY, "FunctionsWorker").env["DUETIME_DELIVERY_QUEUE_URL"]
        sim.engine.at(
            start.timestamp() + POISON_AT_S,
            lambda: _ignore(
                sim.account.sim.sqs.send_message(QueueUrl=queue_url, MessageBody='{"not": 1}')
            ),
        )
        sim.run_for((until - start).total_seconds())
        return summary(
            sim,
            "alerts",
            expected,
            180.0,
            {
                "schedules": ids,
                "recovers_at_s": RECOVERS_AT_S,
                "acknowledge_at_s": ACKNOWLEDGE_AT_S,
                "acknowledge_status": acknowledged,
                "poison_at_s": POISON_AT_S,
                # What each schedule's target answered, attempt by attempt, counted.
                "target_statuses": {
                    name: dict(
                        Counter(
                            str(d.status)
                            for d in sim.receiver.deliveries
                            if d.schedule_id == schedule_id
                        )
                    )
                    for name, schedule_id in ids.items()
                },
            },
        )


# --- burst -----------------------------------------------------------------------------------

BURST_COUNT = 10_000


def burst(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """N one-off occurrences due at the same instant, to webhook targets answering in 200 ms:
    how late their first attempts start once Lambda's concurrency and the SQS event source
    mapping's scaling are in the way."""
    count = BURST_COUNT if options.count is None else options.count
    ahead_s = 80.0 if options.ahead_s is None else options.ahead_s
    due_at = datetime(2026, 12, 1, 8, 3, tzinfo=UTC)  # created ahead_s before, all at once
    start = due_at - timedelta(seconds=ahead_s)
    settle_s = 60.0
    instants = [due_at, due_at + timedelta(hours=1)] if options.hourly else [due_at]
    spec: dict[str, Any] = {"at": due_at.isoformat().replace("+00:00", "Z")}
    if options.hourly:
        spec = {"cron": f"{due_at.minute} * * * *", "time_zone": "UTC", "start_at": spec["at"]}
    span_s = (instants[-1] - start).total_seconds() + 300.0
    if options.hours is not None:
        span_s = options.hours * 3600
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        expected: dict[str, list[datetime]] = {}
        # Wall time of each phase (this machine's, not simulated): what a size costs to run.
        began = time.perf_counter()
        for i in range(count):
            s = create_schedule(
                sim,
                PRIMARY,
                {"name": f"burst-{i}", "spec": spec, "target": webhook_target(f"b{i}")},
            )
            expected[s["id"]] = instants
        if count != BURST_COUNT:
            sim.notes.append(f"scaled: {count} occurrences instead of {BURST_COUNT:,} (--count)")
        if options.ahead_s is not None:
            sim.notes.append(f"created {ahead_s:g} s before the instant (--ahead)")
        if options.hourly:
            sim.notes.append("hourly crons, two instants an hour apart (--hourly)")
        created = time.perf_counter()
        sim.run_for(start.timestamp() + span_s - sim.engine.now)
        ran = time.perf_counter()
        worker = sim.function(PRIMARY, "FunctionsWorker")
        [mapping] = [m for m in sim.mappings if m.function is worker]
        return summary(
            sim,
            "burst",
            expected,
            settle_s,
            {
                "occurrences": count,
                "due_at_s": (due_at - start).total_seconds(),
                "tick_planning": _tick_planning(sim, due_at - start),
                "lateness_by_instant_s": _lateness_by_instant(sim, instants),
                # The worker's asynchronous invocations: the surges' drains.
                "drains": sum(1 for i in worker.invocations if i.source == "async"),
                "worker_peak_concurrency": worker.peak_concurrency,
                "worker_containers": worker.containers_started,
                "worker_invocations": len(worker.invocations),
                "event_source_mapping": {
                    "peak_batches_in_flight": mapping.peak_in_flight,
                    "ceiling": sim.esm_ceiling(mapping),
                    "throttled_batches": mapping.throttled,
                    "messages_received": mapping.received,
                },
                "wall_s": {
                    "creating": round(created - began, 1),
                    "running": round(ran - created, 1),
                },
            },
        )


def _lateness_by_instant(sim: Simulation, instants: list[datetime]) -> dict[str, Any]:
    """Each instant's first-attempt start lateness (p50, p99, max), when there are several."""
    if len(instants) < 2:
        return {}
    first: dict[tuple[str, str], float] = {}
    for d in sim.receiver.deliveries:
        first.setdefault((d.schedule_id, d.scheduled_at), d.started_s)
    start = sim.engine.start.timestamp()
    found: dict[str, Any] = {}
    for instant in instants:
        text = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
        late = [s + start - instant.timestamp() for (_, at), s in first.items() if at == text]
        found[text] = {
            "started": len(late),
            "p50": percentile(late, 50),
            "p99": percentile(late, 99),
            "max": round(max(late), 3) if late else None,
        }
    return found


def _tick_planning(sim: Simulation, due_at: timedelta) -> dict[str, Any]:
    """What the tick's invocations planned (their results): how many schedules in all,
    how many of them early (beyond the lookahead), and how long before the instant
    the first invocation that planned any started."""
    results = [
        (i.started_s, i.result)
        for i in sim.function(PRIMARY, "FunctionsTick").invocations
        if isinstance(i.result, dict)
    ]
    planning = [at for at, r in results if r.get("materialized") or r.get("planned_early")]
    return {
        "materialized": sum(r.get("materialized", 0) for _, r in results),
        "planned_early": sum(r.get("planned_early", 0) for _, r in results),
        "first_s_before_instant": (
            round(due_at.total_seconds() - min(planning), 1) if planning else None
        ),
        "out_of_time_passes": sum(1 for _, r in results if r.get("out_of_planning_time")),
    }


SCENARIOS: dict[str, Callable[[dict[str, Any], Options], dict[str, Any]]] = {
    "idle-week": idle_week,
    "mixed-day": mixed_day,
    "faults": faults,
    "two-stacks": two_stacks,
    "alerts": alerts,
    "burst": burst,
    "routes": routes,
    "lateness": lateness,
}

# What ``--short`` runs (``make simulate``): each scenario long enough to show what it is
# for, in a few minutes of wall time on moto.
SHORT: dict[str, Options] = {
    "idle-week": Options(hours=1.0, tick_interval_s=50),
    "mixed-day": Options(hours=0.25, scale=0.01, tick_interval_s=25),
    "faults": Options(tick_interval_s=25),
    "two-stacks": Options(hours=0.25, tick_interval_s=50),
    "alerts": Options(tick_interval_s=25),
    "burst": Options(count=200, tick_interval_s=25),
    "routes": Options(tick_interval_s=25),
    "lateness": Options(tick_interval_s=50),
}
