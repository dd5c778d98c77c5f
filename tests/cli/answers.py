"""Answers of the API as its contract gives them, for the CLI's rendering tests.

Each function returns a fresh copy, so a test may change one freely.
"""

from __future__ import annotations

from typing import Any

SID = "sch_c3vh2kzwfv7nyzjp"


def run(
    tail: str = "20261201T090000Z",
    status: str = "succeeded",
    *,
    version: int = 2,
    kind: str = "scheduled",
    attempts: int = 1,
    late_s: float | None = 0.4,
    reason: str | None = None,
    attempts_log: list[dict[str, Any]] | None = None,
    progress: dict[str, Any] | None = None,
) -> dict[str, Any]:
    at = f"{tail[0:4]}-{tail[4:6]}-{tail[6:8]}T{tail[9:11]}:{tail[11:13]}:{tail[13:15]}Z"
    return {
        "occurrence_id": f"{SID}.v{version}.{tail}",
        "schedule_id": SID,
        "version": version,
        "status": status,
        "kind": kind,
        "attempts": attempts,
        "scheduled_at": at,
        "admitted_at": at if status != "scheduled" else None,
        "started_at": at if attempts else None,
        "finished_at": at if status in ("succeeded", "failed") else None,
        "local": at.replace("Z", "+00:00"),
        "reason": reason,
        "result": {"status_code": 200} if status == "succeeded" else None,
        "progress": progress,
        "late_s": late_s,
        "attempts_log": attempts_log or [],
    }


def schedule(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": SID,
        "name": "sales report",
        "version": 2,
        "status": "active",
        "state": {"paused": False, "note": None},
        "spec": {
            "cron": "30 2 * * *",
            "at": None,
            "every": None,
            "anchor_at": None,
            "time_zone": "Europe/London",
            "start_at": None,
            "end_at": None,
        },
        "policy": {
            "overdue": "expire",
            "catchup_window": "PT1H",
            "dst_gap": "shift",
            "dst_fold": "first",
            "overlap": "skip",
            "retry": {"max_attempts": 3, "base": "PT2S", "cap": "PT1M"},
            "run_timeout": "PT5M",
            "grace": None,
        },
        "target": {
            "type": "webhook",
            "url": "https://hooks.example.com/duetime",
            "headers": {},
            "timeout_s": 10.0,
            "queue_url": None,
            "message_group_id": None,
            "function_arn": None,
            "invocation_type": None,
            "event_bus_name": None,
            "source": None,
            "detail_type": None,
        },
        "payload": {"report": "sales"},
        "next_occurrences": [
            {
                "scheduled_at": "2027-03-28T02:00:00Z",
                "local": "2027-03-28T03:00:00+01:00",
                "dst_note": "02:30 does not exist on this day (DST gap); "
                "runs at 03:00 by dst_gap=shift",
                "version": 2,
            },
            {
                "scheduled_at": "2027-03-29T01:30:00Z",
                "local": "2027-03-29T02:30:00+01:00",
                "dst_note": None,
                "version": 2,
            },
        ],
        "next_due": "2027-03-28T02:00:00Z",
        "created_at": "2026-12-01T08:00:00Z",
        "updated_at": "2026-12-01T08:30:00Z",
        "deleted_at": None,
        "webhook_secret": None,
        "watch": {
            "status": "overdue",
            "checked_at": "2026-12-02T03:00:00Z",
            "expected_at": "2026-12-02T02:30:00Z",
            "last_success_at": "2026-12-01T02:30:00Z",
            "grace_s": 1020.0,
        },
        "quarantine": None,
        "recent_runs": [
            run(
                "20261202T023000Z",
                "failed",
                attempts=3,
                late_s=75.2,
                reason="HTTP 500 from the target",
            ),
            run("20261201T023000Z", "succeeded", version=1, late_s=0.4),
        ],
        "planned_under_older_versions": [
            run("20261203T023000Z", "scheduled", version=1, attempts=0, late_s=None),
        ],
    }
    body.update(changes)
    return body


def attempts_log() -> list[dict[str, Any]]:
    return [
        {
            "number": 1,
            "started_at": "2026-12-02T02:31:15Z",
            "finished_at": "2026-12-02T02:31:16Z",
            "outcome": "retrying",
            "status_code": 500,
            "error": "HTTP 500",
            "wait_s": 2.0,
        },
        {
            "number": 2,
            "started_at": "2026-12-02T02:31:18Z",
            "finished_at": "2026-12-02T02:31:48Z",
            "outcome": "retrying",
            "status_code": None,
            "error": "timed out after 30 s",
            "wait_s": 4.0,
        },
        {
            "number": 3,
            "started_at": "2026-12-02T02:31:52Z",
            "finished_at": "2026-12-02T02:31:53Z",
            "outcome": "failed",
            "status_code": 500,
            "error": "HTTP 500",
            "wait_s": None,
        },
    ]


def version(number: int = 2) -> dict[str, Any]:
    body = schedule()
    return {
        "version": number,
        "created_at": "2026-12-01T08:30:00Z",
        "spec": body["spec"],
        "policy": body["policy"],
        "target": body["target"],
        "payload": body["payload"],
        "name": body["name"],
        "changed": ["spec.cron", "policy.overdue"] if number > 1 else [],
    }


def dead_letter() -> dict[str, Any]:
    return {
        "id": "dl_1",
        "occurrence_id": f"{SID}.v2.20261202T023000Z",
        "schedule_id": SID,
        "reason": "received 5 times without an answer",
        "dead_lettered_at": "2026-12-02T02:40:00Z",
        "receive_count": 5,
        "body": {"occurrence_id": f"{SID}.v2.20261202T023000Z"},
    }


def deleted_404(deleted_at: str = "2026-12-02T09:00:00Z") -> dict[str, Any]:
    """GET /schedules/{id} of a deleted schedule: 404, saying when it was deleted."""
    return {
        "error": {
            "code": "schedule_deleted",
            "message": f"schedule {SID!r} was deleted at {deleted_at}",
            "field": None,
        },
        "deleted_at": deleted_at,
    }


def not_found_404(schedule_id: str = SID) -> dict[str, Any]:
    """GET /schedules/{id} of an id that never existed."""
    return {
        "error": {
            "code": "schedule_not_found",
            "message": f"schedule {schedule_id!r} not found",
            "field": None,
        }
    }


def backfill_preview(*runs: dict[str, Any]) -> dict[str, Any]:
    """POST /schedules/{id}/backfill with dry_run: the slots it would create."""
    return {"runs": list(runs), "created": 0, "dry_run": True}
