"""The ``routes`` scenario: every operation of the API, called as a user calls it, under its role.

The other scenarios create schedules and let them run; a grant the API's
other routes need is never asked for there. Here each operation of
docs/openapi.json is called through the simulated API Gateway (the API
function, its role judged request by request) with a valid request, in a
state where it has work to do: an acknowledgement after a run that failed
for good, a retry of that run, progress and completion of a run whose target
answered 202, a backfill of a past range, versions after an edit. The
summary lists each call (``route_calls``: operation, status), the calls
answered 5xx (``route_errors``) and the operations called
(``operations_called``); ``denied_calls`` holds what IAM refused.

An operation the scenario calls that the document does not have (one still
being added) may answer 404 for its missing route: ``route_missing`` lists
those, and they count as neither errors nor coverage.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sim.results import summary
from sim.scenario_blocks import PRIMARY, Options, create_schedule, thin_tick, webhook_target
from sim.world import Simulation

OPENAPI = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"


def documented_operations(path: Path = OPENAPI) -> set[str]:
    """Every operation of the OpenAPI document, as "METHOD /path/{param}"."""
    document = json.loads(path.read_text())
    return {
        f"{method.upper()} {route}"
        for route, methods in document["paths"].items()
        for method in methods
        if method in {"get", "put", "post", "delete", "patch"}
    }


class _Caller:
    def __init__(self, sim: Simulation, documented: set[str]) -> None:
        self.sim = sim
        self.documented = documented
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self,
        method: str,
        template: str,
        values: dict[str, str],
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        path = template.format(**values)
        status, answer = self.sim.api(PRIMARY, method, path, body, headers)
        operation = f"{method} {template}"
        self.calls.append(
            {
                "operation": operation,
                "status": status,
                "documented": operation in self.documented,
                **({"answer": answer} if status >= 400 else {}),
            }
        )
        return status, answer


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _runs(call: _Caller, schedule_id: str) -> list[dict[str, Any]]:
    status, answer = call("GET", "/schedules/{schedule_id}/runs", {"schedule_id": schedule_id})
    return list(answer.get("runs", [])) if status == 200 and isinstance(answer, dict) else []


def routes(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """Every API operation once, with a valid request, after a few minutes of runs."""
    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    documented = documented_operations()
    with Simulation(templates, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        call = _Caller(sim, documented)
        call("GET", "/health", {})
        # A target that refuses for good (410: no retry), one that accepts and reports back
        # itself (202), and a plain one to edit, pause, resume, trigger, backfill and delete.
        gone = create_schedule(
            sim,
            PRIMARY,
            {
                "name": "gone",
                "spec": {"cron": "* * * * *"},
                "target": webhook_target("gone", "status=410"),
                "policy": {"retry": {"max_attempts": 1}},
            },
        )
        accepting = create_schedule(
            sim,
            PRIMARY,
            {
                "name": "accepting",
                "spec": {"cron": "* * * * *"},
                "target": webhook_target("accepting", "status=202"),
            },
        )
        plain_body = {
            "name": "plain",
            "spec": {"cron": "* * * * *"},
            "target": webhook_target("plain"),
            "policy": {"overdue": "catch_up_all"},
        }
        # Created through the route itself (the others through the scenarios' helper).
        status, plain = call("POST", "/schedules", {}, plain_body)
        if status != 201:
            raise RuntimeError(f"the API refused a schedule: {status} {plain}")
        sim.labels[plain["id"]] = "plain"
        sim.run_for(150.0)

        ids = {"schedule_id": plain["id"]}
        call("GET", "/schedules", {})
        _, read = call("GET", "/schedules/{schedule_id}", ids)
        edited = {**plain_body, "spec": {"cron": "*/2 * * * *"}}
        version = str(read.get("version", 1)) if isinstance(read, dict) else "1"
        call("PUT", "/schedules/{schedule_id}", ids, edited, {"If-Match": version})
        call("GET", "/schedules/{schedule_id}/versions", ids)
        call("GET", "/schedules/{schedule_id}/versions/{number}", {**ids, "number": "2"})
        call("POST", "/schedules/{schedule_id}/pause", ids, {"note": "maintenance"})
        call("POST", "/schedules/{schedule_id}/resume", ids)
        call("POST", "/schedules/{schedule_id}/rotate-secret", ids, {})
        call("POST", "/schedules/{schedule_id}/trigger", ids, {})
        now = sim.engine.moment()
        call(
            "POST",
            "/schedules/{schedule_id}/backfill",
            ids,
            {"start_at": _iso(now - timedelta(minutes=10)), "end_at": _iso(now)},
        )
        call("GET", "/runs", {})
        call("GET", "/dead-letters", {})

        # The run that failed for good: read, acknowledged, retried.
        failed = [r for r in _runs(call, gone["id"]) if r.get("status") in ("failed", "expired")]
        if failed:
            run = {"occurrence_id": failed[0]["occurrence_id"]}
            call("GET", "/runs/{occurrence_id}", run)
            call("POST", "/schedules/{schedule_id}/acknowledge", {"schedule_id": gone["id"]}, {})
            call("POST", "/runs/{occurrence_id}/retry", run, {})
        else:
            sim.notes.append("routes: no run of 'gone' had failed: acknowledge, retry not called")

        # The job that answered 202: progress, completion, and a cancel of another run.
        running = [r for r in _runs(call, accepting["id"]) if r.get("status") == "running"]
        found = _token_of_running(sim, accepting["id"], running)
        if found is not None:
            run_id, token = found
            run = {"occurrence_id": run_id}
            progress = {"run_token": token, "progress": {"done": 1}}
            call("POST", "/runs/{occurrence_id}/progress", run, progress)
            done = {"run_token": token, "succeeded": True, "result": {"rows": 1}}
            call("POST", "/runs/{occurrence_id}/complete", run, done)
        else:
            sim.notes.append("routes: no run answered 202: progress, complete not called")
        later = [
            r for r in _runs(call, plain["id"]) if r.get("status") in ("scheduled", "admitted")
        ]
        cancel_of = later[0]["occurrence_id"] if later else "missing-run"
        call("POST", "/runs/{occurrence_id}/cancel", {"occurrence_id": cancel_of}, {})

        call("DELETE", "/schedules/{schedule_id}", ids)
        sim.run_for(30.0)
        return summary(sim, "routes", {}, 0.0, _report(call.calls, documented))


def _token_of_running(
    sim: Simulation, schedule_id: str, running: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """A running run of the schedule and the token its (latest) delivery carried."""
    for delivery in reversed(sim.receiver.deliveries):
        if delivery.schedule_id != schedule_id or not delivery.run_token:
            continue
        for run in running:
            if run.get("scheduled_at") == delivery.scheduled_at:
                return str(run["occurrence_id"]), delivery.run_token
    return None


def _report(calls: list[dict[str, Any]], documented: set[str]) -> dict[str, Any]:
    missing_route = [c["operation"] for c in calls if not c["documented"] and c["status"] == 404]
    return {
        "route_calls": calls,
        "operations_called": sorted({c["operation"] for c in calls if c["documented"]}),
        "operations_not_called": sorted(documented - {c["operation"] for c in calls}),
        "route_errors": [c for c in calls if c["status"] >= 500],
        "route_missing": sorted(set(missing_route)),
    }
