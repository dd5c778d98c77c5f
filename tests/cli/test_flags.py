"""The table of API fields and flags: every field a schedule's body takes has a
flag, and every flag the table names exists on the command."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from cli.flags import FIELD_FLAGS, flag_for
from cli.main import build_parser
from handlers.api_bodies import BackfillIn
from handlers.api_models import ScheduleIn
from tests.cli.test_help import everything

# Set by which target flag is given (--webhook, --sqs, --lambda, --eventbridge).
IMPLIED = {"target.type"}


def fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    found = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        nested = [
            arg
            for arg in (info.annotation, *getattr(info.annotation, "__args__", ()))
            if isinstance(arg, type) and issubclass(arg, BaseModel)
        ]
        found += fields(nested[0], path + ".") if nested else [path]
    return found


def flags_of(*command: str) -> set[str]:
    return {
        flag for path, action in everything() if path == command for flag in action.option_strings
    }


def test_every_field_of_a_schedule_has_a_flag_on_create_and_edit() -> None:
    body = [f for f in fields(ScheduleIn) if f not in IMPLIED]
    assert "spec.start_at" in body and "policy.retry.cap" in body
    for command in (("schedules", "create"), ("schedules", "edit")):
        given = flags_of(*command)
        missing = [f for f in body if FIELD_FLAGS.get(f) not in given]
        assert missing == [], command


def test_every_field_of_a_backfill_has_a_flag() -> None:
    given = flags_of("schedules", "backfill")
    assert all(FIELD_FLAGS[f] in given for f in fields(BackfillIn))


def test_every_flag_in_the_table_exists() -> None:
    build_parser()
    every: set[Any] = {flag for _, action in everything() for flag in action.option_strings}
    assert sorted(set(FIELD_FLAGS.values()) - every) == []


def test_a_field_under_a_flagged_one_keeps_the_rest_of_its_path() -> None:
    assert flag_for("spec.cron.minute") == "--cron minute"
    assert flag_for("spec.cron", "explain") == "EXPRESSION"
    assert flag_for("spec.time_zone", "explain") == "--tz"
    assert flag_for("unknown") is None
