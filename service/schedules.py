"""Schedule use cases: create, read, edit, pause, resume, delete, trigger, backfill.

Rules they keep:
- create with an idempotency key already used returns the first schedule;
- an edit names the version it read; a stale one is refused (VersionConflict)
  and changes nothing; it writes version N+1, keeps every earlier version, and
  its ``next_due`` is the new spec's first slot strictly after
  ``max(now, last_materialized_at)``, so it never fires retroactively and
  occurrences already materialized keep their instant and version;
- pause stops admissions at once: the slots planned after it (not started)
  are withdrawn, their records deleted in one step; the ones that came due
  and wait for dispatch are recorded as skipped (paused); runs already
  started are not touched (a run admitted and due is judged by the start
  decision when the worker takes it);
- resume plans from now; the pause is recorded by one skipped (paused)
  summary that counts the slots it kept from running (first, last, how
  many), not by one record per slot (an edit while paused records one for
  the time paused before it);
- delete withdraws the planned slots too, and keeps the history readable;
- a 500 never leaves anything stored: create, edit and resume compute all
  that can fail (the first ``next_due``, the occurrences the answer shows,
  the stored form) before their first write, and a spec whose occurrences
  cannot be computed is refused as bad input naming ``spec``;
- reading never fails on one schedule: a schedule whose next occurrences
  cannot be computed is shown with none (the tick and the watchdog
  quarantine it, and the quarantine is shown).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Final, Protocol, TypeVar

from domain.errors import InvalidSchedule
from domain.identity import new_schedule_id, occurrence_id
from domain.partition import Partitioning
from domain.run import (
    Reason,
    Run,
    RunKind,
    RunStatus,
    new_occurrence,
    pause_summary_text,
    summary_business_key,
    trigger_business_key,
)
from domain.schedule import (
    Definition,
    Schedule,
    ScheduleState,
    ScheduleVersion,
    dumps,
    version_to_dict,
)
from domain.spec import AtSpec, ScheduleSpec, Slot, slots_after, spec_zone_name
from domain.targets import CommandTarget, Target
from domain.timezones import load_zone, wall_of
from service.errors import (
    Contention,
    RunNotFound,
    ScheduleNotActive,
    ScheduleNotFound,
    UnknownPageToken,
    VersionConflict,
    schedule_gone,
)
from service.ports import Clock, DueSchedule, Page, RunQuery, Store

MAX_BACKFILL: Final = 1000
MAX_PAGE: Final = 100
# Slots an edit finds unplanned (every dispatcher down): one waiting record
# each up to this many, then a skipped summary.
UNPLANNED_RECORD_LIMIT: Final = 100
# How far a summary counts before it says "at least".
SUMMARY_COUNT_LIMIT: Final = 100_000
_T = TypeVar("_T")
_RETRIES: Final = 5
_EPSILON: Final = timedelta(microseconds=1)
# How many next occurrences a schedule's answer shows (and create/edit check).
NEXT_SHOWN: Final = 5
_log: Final = logging.getLogger("duetime")


@dataclass(frozen=True)
class TargetSupport:
    """The target types the running deployment can deliver to, and what
    would enable the others (said in the refusal of a schedule that names one).

    ``None`` in place of a TargetSupport means every type is delivered but
    ``command``, which needs a jobs file. ``jobs`` are the names of the jobs
    file's jobs, where one is loaded (``duetime local --jobs FILE``): a command
    target must name one of them.
    """

    types: frozenset[str]
    enable: str  # e.g. "deploy to AWS (cdk deploy), or run `duetime local --store emulator`"
    jobs: frozenset[str] | None = None

    def check_target(self, target: Target) -> None:
        """Refuse (naming the field) a target this deployment cannot deliver to."""
        if isinstance(target, CommandTarget):
            check_command_job(target, self.jobs if "command" in self.types else None)
            return
        self.check(target.type)

    def check(self, target_type: str) -> None:
        """Refuse (naming ``target.type``) a type this deployment cannot deliver to."""
        if target_type not in self.types:
            accepted = ", ".join(sorted(self.types)) or "none"
            raise InvalidSchedule(
                "target.type",
                f"{target_type} targets cannot be delivered by this deployment "
                f"(it delivers to: {accepted}); to use them, {self.enable}",
            )


NO_JOBS_FILE = (
    "command targets run a job of the jobs file the machine's owner gives "
    "`duetime local --jobs FILE` (docs/commands.md); this deployment has no jobs file"
)


def check_command_job(target: CommandTarget, jobs: frozenset[str] | None) -> None:
    """A command target names a job of the loaded jobs file, or is refused."""
    if jobs is None:
        raise InvalidSchedule("target.type", NO_JOBS_FILE)
    if target.job not in jobs:
        known = ", ".join(sorted(jobs)[:20]) or "none"
        raise InvalidSchedule(
            "target.job", f"no job {target.job!r} in this machine's jobs file (it has: {known})"
        )


def upcoming(schedule: Schedule, count: int, after: datetime) -> list[Slot]:
    """The schedule's next ``count`` slots not planned yet (from ``next_due``),
    strictly after ``after``."""
    version = schedule.current
    if schedule.next_due is None or count < 1:
        return []
    start = max(after, schedule.next_due - _EPSILON)
    slots: list[Slot] = []
    for slot in slots_after(version.spec, version.policy.dst, start):
        slots.append(slot)
        if len(slots) >= count:
            break
    return slots


def local_time(spec: ScheduleSpec, instant: datetime) -> datetime:
    """An instant as an aware local time in the spec's zone."""
    return instant.astimezone(load_zone(spec_zone_name(spec)))


def shown_slots(schedule: Schedule, count: int, after: datetime) -> list[Slot]:
    """``upcoming``, each with its local time computed once as the answer
    shows it: whatever raises here, raises before anything is stored."""
    slots = upcoming(schedule, count, after)
    for slot in slots:
        local_time(schedule.current.spec, slot.scheduled_at)
    return slots


class Planning(Protocol):
    """Planning at the API call (``service.planning.ticker.PlanNow``): where the tick
    comes once a minute, a schedule created, edited or resumed less than the
    horizon before its next slot, and a trigger, are not left waiting for it."""

    horizon: timedelta

    def plan(self, schedule: DueSchedule) -> bool:
        """Plan the schedule's slots within the horizon; True if anything was written."""
        ...

    def send(self, runs: Sequence[Run]) -> object:
        """Send the intents of records just stored admitted."""
        ...


class ScheduleService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        partitioning: Partitioning | None = None,
        *,
        new_id: Callable[[], str] = new_schedule_id,
        target_support: TargetSupport | None = None,
        planning: Planning | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.partitioning = partitioning or Partitioning()
        self._new_id = new_id
        # None: every target type is delivered (see TargetSupport).
        self.target_support = target_support
        self.planning = planning

    # --- reading ----------------------------------------------------------------------

    def get(self, schedule_id: str, *, include_deleted: bool = False) -> Schedule:
        schedule = self.store.schedules.get(schedule_id)
        if schedule is None or (schedule.deleted and not include_deleted):
            raise schedule_gone(schedule_id, schedule)
        return schedule

    def list_schedules(self, limit: int = 50, token: str | None = None) -> Page[Schedule]:
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidSchedule("limit", f"must be 1-{MAX_PAGE}")
        try:
            return self.store.schedules.list_schedules(limit, token)
        except ValueError:
            raise UnknownPageToken() from None

    def version(self, schedule_id: str, version: int) -> ScheduleVersion:
        found = self.store.schedules.get_version(schedule_id, version)
        if found is None:
            raise ScheduleNotFound(schedule_id)
        return found

    def runs(self, schedule_id: str, limit: int = 50, token: str | None = None) -> Page[Run]:
        self.get(schedule_id, include_deleted=True)
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidSchedule("limit", f"must be 1-{MAX_PAGE}")
        try:
            return self.store.records.runs(schedule_id, limit, token)
        except ValueError:
            raise UnknownPageToken() from None

    def run(self, occurrence_id: str) -> Run:
        found = self.store.records.get_run(occurrence_id)
        if found is None:
            raise RunNotFound(occurrence_id)
        return found

    def next_occurrences(self, schedule: Schedule, count: int = NEXT_SHOWN) -> list[Slot]:
        """The next ``count`` occurrences not planned yet (from ``next_due``),
        strictly after now; none when paused, deleted or quarantined, or when
        they cannot be computed (reading one schedule never fails a listing
        of every schedule). The planned ones are runs (``include=planned``)."""
        if not schedule.active or schedule.quarantine is not None:
            return []
        try:
            return shown_slots(schedule, count, self.clock.now())
        except Exception as error:  # any error: shown without them
            _log.error(
                "next occurrences cannot be computed",
                extra={"schedule_id": schedule.schedule_id, "error": f"{error!r}"[:500]},
            )
            return []

    # --- writing ---------------------------------------------------------------------------

    def create(
        self, definition: Definition, idempotency_key: str | None = None
    ) -> tuple[Schedule, bool]:
        """Store a new schedule at version 1. Returns it and whether it is new."""
        now = self.clock.now()
        schedule_id = self._new_id()
        version = self._version(definition, schedule_id, 1, now, None)
        first = _computed(lambda: _first_slot(version, now))
        schedule = Schedule(
            schedule_id=schedule_id,
            version=1,
            state=ScheduleState(),
            current=version,
            next_due=first,
            last_materialized_at=None,
            created_at=now,
            updated_at=now,
        )
        _check_shown(schedule, now)
        stored, created = self.store.schedules.create(schedule, idempotency_key)
        if created:
            stored = self._plan_now(stored)
        return stored, created

    def edit(self, schedule_id: str, expected_version: int, definition: Definition) -> Schedule:
        """Write version N+1 if the schedule is still at ``expected_version``."""
        now = self.clock.now()
        # The whole definition is judged before the version: one refused is
        # 422 naming its field, whatever If-Match names. (Header values sent
        # as null are the stored ones, as in the write below.)
        read = self.get(schedule_id)
        self._version(definition, schedule_id, expected_version + 1, now, read.current.target)
        for _ in range(_RETRIES):
            schedule = self.get(schedule_id)
            if schedule.version != expected_version:
                raise VersionConflict(schedule_id, expected_version, schedule.version)
            new = self._version(
                definition, schedule_id, schedule.version + 1, now, schedule.current.target
            )
            # Slots of the version being replaced that came due while no tick
            # planned them (every dispatcher down) keep their version: recorded
            # waiting, for dispatch to admit or close by that version's policy;
            # while paused, the pause so far is summarized, as a resume would.
            # Everything that can fail is computed before the first write.
            if schedule.state.paused:
                missed = _computed(lambda: self._paused(schedule, now))  # noqa: B023
            else:
                missed = _computed(lambda: self._unplanned(schedule, now))  # noqa: B023
            after = now
            if schedule.last_materialized_at is not None:
                after = max(after, schedule.last_materialized_at)
            next_due = _computed(lambda: _first_slot(new, after, check=False))  # noqa: B023
            _check_shown(
                replace(schedule, version=new.version, current=new, next_due=next_due), now
            )
            self._record_missed(missed)
            if self.store.schedules.save_version(
                new, expected_next_due=schedule.next_due, next_due=next_due, now=now
            ):
                return self._plan_now(self.get(schedule_id))
            # Refused: another edit won (VersionConflict on the next read), the
            # schedule was deleted, or a planner moved next_due (try again).
        raise Contention(f"schedule {schedule_id!r} kept changing; try again")

    def pause(self, schedule_id: str, note: str | None = None) -> Schedule:
        now = self.clock.now()
        if not self.store.schedules.pause(schedule_id, note, now):
            raise schedule_gone(schedule_id, self.store.schedules.get(schedule_id))
        # After the flag: nothing is planned or admitted for it any more. The
        # slots planned after now are withdrawn; what came due and waits is
        # closed as skipped.
        self.store.records.withdraw_planned(schedule_id, now)
        self.store.records.close_scheduled(schedule_id, RunStatus.SKIPPED, Reason.PAUSED, now)
        return self.get(schedule_id)

    def resume(self, schedule_id: str) -> Schedule:
        now = self.clock.now()
        for _ in range(_RETRIES):
            schedule = self.get(schedule_id)
            if not schedule.state.paused:
                return schedule
            version = schedule.current
            # From now; what the pause kept from running is one summary (its
            # business key is its first slot's: a repeated resume records it once).
            missed = _computed(lambda: self._paused(schedule, now))  # noqa: B023
            next_due = _computed(lambda: _first_slot(version, now, check=False))  # noqa: B023
            self._record_missed(missed)
            if self.store.schedules.resume(
                schedule_id, expected_next_due=schedule.next_due, next_due=next_due, now=now
            ):
                return self._plan_now(self.get(schedule_id))
        raise Contention(f"schedule {schedule_id!r} kept changing; try again")

    def delete(self, schedule_id: str) -> Schedule:
        now = self.clock.now()
        if not self.store.schedules.delete(schedule_id, now):
            raise schedule_gone(schedule_id, self.store.schedules.get(schedule_id))
        self.store.records.withdraw_planned(schedule_id, now)
        self.store.records.close_scheduled(schedule_id, RunStatus.CANCELLED, Reason.DELETED, now)
        return self.get(schedule_id, include_deleted=True)

    def trigger(self, schedule_id: str) -> Run:
        """One extra occurrence now, with its own identity. With planning at the
        call, it is stored admitted and its intent sent at once; without, the
        next tick admits it."""
        schedule = self._active(schedule_id)
        now = self.clock.now()
        at = now
        zone = load_zone(spec_zone_name(schedule.current.spec))
        for _ in range(_RETRIES):
            run = Run(
                occurrence_id=occurrence_id(schedule_id, schedule.version, at),
                business_key=trigger_business_key(schedule_id, at),
                schedule_id=schedule_id,
                version=schedule.version,
                scheduled_at=at,
                wall=wall_of(at, zone),
                fold=0,
                bucket=self.partitioning.placement(at, now),
                shard=self.partitioning.shard(schedule_id),
                kind=RunKind.TRIGGER,
                materialized_at=now,
            )
            if self.planning is not None:
                run = run.admitted(now)
            if self.store.records.insert([run]):
                if self.planning is not None:
                    self._send_now(run)
                return run
            # The instant is taken (a slot or another trigger): one microsecond later.
            at += _EPSILON
        raise Contention(f"could not trigger schedule {schedule_id!r}; try again")

    def backfill(
        self, schedule_id: str, start_at: datetime, end_at: datetime, *, dry_run: bool = False
    ) -> list[Run]:
        """Materialize the slots in ``[start_at, end_at]`` that have no occurrence
        yet. With ``dry_run`` nothing is stored: the runs that would be created."""
        schedule = self._active(schedule_id)
        now = self.clock.now()
        for name, value in (("start_at", start_at), ("end_at", end_at)):
            if value.tzinfo is None:
                raise InvalidSchedule(name, "must have an offset")
        if start_at > now:
            raise InvalidSchedule("start_at", "must not be in the future: backfill is for the past")
        if end_at < start_at:
            raise InvalidSchedule("end_at", "must not be before start_at")
        if end_at > now:
            raise InvalidSchedule("end_at", "must not be in the future: backfill is for the past")
        version = schedule.current
        slots: list[Slot] = []
        for slot in slots_after(version.spec, version.policy.dst, start_at - _EPSILON):
            if slot.scheduled_at > end_at:
                break
            if len(slots) >= MAX_BACKFILL:
                raise InvalidSchedule(
                    "end_at", f"the range holds more than {MAX_BACKFILL} occurrences; split it"
                )
            slots.append(slot)
        runs = [
            new_occurrence(
                schedule_id,
                schedule.version,
                slot,
                bucket=self.partitioning.placement(slot.scheduled_at, now),
                shard=self.partitioning.shard(schedule_id),
                materialized_at=now,
                kind=RunKind.BACKFILL,
            )
            for slot in slots
        ]
        if dry_run:
            taken = self._business_keys(schedule_id, start_at, end_at)
            return [run for run in runs if run.business_key not in taken]
        written = set(self.store.records.insert(runs))
        return [run for run in runs if run.occurrence_id in written]

    def _business_keys(self, schedule_id: str, start_at: datetime, end_at: datetime) -> set[str]:
        """The business keys of the occurrences a schedule has in ``[start_at, end_at]``."""
        query = RunQuery(schedule_id=schedule_id, since=start_at, until=end_at + _EPSILON)
        keys: set[str] = set()
        token: str | None = None
        while True:
            page = self.store.records.find_runs(query, MAX_PAGE, token)
            keys.update(run.business_key for run in page.items)
            token = page.next_token
            if token is None:
                return keys

    # --- planning at the call --------------------------------------------------------------

    def _plan_now(self, schedule: Schedule) -> Schedule:
        """Plan ``schedule`` now if its next slot falls within the horizon
        (see ``Planning``); the schedule as stored after it. A failure is
        logged and left to the tick, which plans or resends what is missing:
        the call that stored the schedule still succeeds."""
        planning = self.planning
        if (
            planning is None
            or schedule.next_due is None
            or not schedule.active
            or schedule.quarantine is not None
            or schedule.next_due > self.clock.now() + planning.horizon
        ):
            return schedule
        try:
            changed = planning.plan(DueSchedule.of(schedule))
        except Exception as error:  # the tick plans it instead
            _log.warning(
                "planning at the call failed; the tick plans the schedule",
                extra={"schedule_id": schedule.schedule_id, "error": f"{error!r}"[:500]},
            )
            return schedule
        return self.get(schedule.schedule_id) if changed else schedule

    def _send_now(self, run: Run) -> None:
        assert self.planning is not None
        try:
            self.planning.send([run])
        except Exception as error:  # admitted and pending: dispatch sends it
            _log.warning(
                "sending a trigger failed; the tick sends it",
                extra={"occurrence_id": run.occurrence_id, "error": f"{error!r}"[:500]},
            )

    # --- helpers ---------------------------------------------------------------------------

    def _active(self, schedule_id: str) -> Schedule:
        schedule = self.get(schedule_id)
        if schedule.state.paused:
            raise ScheduleNotActive(schedule_id, "paused")
        if schedule.quarantine is not None:
            raise ScheduleNotActive(
                schedule_id, "quarantined: edit it, or pause and resume it, to clear that"
            )
        return schedule

    def _version(
        self,
        definition: Definition,
        schedule_id: str,
        number: int,
        now: datetime,
        current: Target | None,
    ) -> ScheduleVersion:
        """The version ``definition`` saves, if this deployment delivers to its target."""
        version = definition.version(schedule_id, number, now, current)
        if self.target_support is not None:
            self.target_support.check_target(version.target)
        elif isinstance(version.target, CommandTarget):
            check_command_job(version.target, None)
        return version

    def _unplanned(self, schedule: Schedule, now: datetime) -> list[Run]:
        """Waiting records for the slots from next_due to now (no tick planned
        them): one each up to a bound, then a skipped summary of the rest."""
        if schedule.next_due is None or schedule.next_due > now:
            return []
        records: list[Run] = []
        rest: tuple[Slot, Slot] | None = None  # the first and last slot past the bound
        count = 0
        for slot in self._slots(schedule, schedule.next_due - _EPSILON, now):
            count += 1
            if len(records) < UNPLANNED_RECORD_LIMIT:
                records.append(self._record(schedule, slot, now))
            else:
                rest = (rest[0] if rest else slot, slot)
        if rest is not None:
            more = count - UNPLANNED_RECORD_LIMIT
            text = f"{Reason.EDITED_UNPLANNED}: {_at_least(count)}{more} more occurrences skipped"
            records.append(self._summary(schedule, *rest, text, now))
        return records

    def _paused(self, schedule: Schedule, now: datetime) -> list[Run]:
        """The record of a pause, at its resume (or an edit while paused): one
        skipped summary of the slots from the pause to now, none if none.

        A paused schedule's ``updated_at`` is when it was paused (or last edited
        while paused, which summarized the time before); slots before
        ``next_due`` that no tick planned (an outage before the pause) count too."""
        since = schedule.updated_at
        if schedule.next_due is not None:
            since = min(since, schedule.next_due - _EPSILON)
        first: Slot | None = None
        last: Slot | None = None
        count = 0
        for slot in self._slots(schedule, since, now):
            count += 1
            first = first or slot
            last = slot
        if first is None or last is None:
            return []
        text = pause_summary_text(count, at_least=count >= SUMMARY_COUNT_LIMIT)
        return [self._summary(schedule, first, last, text, now)]

    def _record_missed(self, records: Sequence[Run]) -> None:
        """Write the records of slots no pass planned (an edit's, a resume's).
        A slot already recorded (a backfill ran it) keeps its record. A
        summary is no slot: one whose instant another record holds (its
        first slot, backfilled) moves a microsecond later, as a trigger does,
        until it is written or found written by a call before (its business
        key is its first slot's); otherwise the slots it counts would have
        no record at all."""
        written = set(self.store.records.insert(records))
        for run in records:
            if run.kind is not RunKind.SUMMARY or run.occurrence_id in written:
                continue
            for _ in range(_RETRIES):
                if self.store.records.get_by_business_key(run.business_key) is not None:
                    break
                at = run.scheduled_at + _EPSILON
                run = replace(
                    run,
                    scheduled_at=at,
                    occurrence_id=occurrence_id(run.schedule_id, run.version, at),
                )
                if self.store.records.insert([run]):
                    break

    @staticmethod
    def _slots(schedule: Schedule, after: datetime, upto: datetime) -> Iterator[Slot]:
        """The current version's slots strictly after ``after`` up to ``upto``,
        at most SUMMARY_COUNT_LIMIT of them."""
        version = schedule.current
        slots = slots_after(version.spec, version.policy.dst, after)
        for slot in islice(slots, SUMMARY_COUNT_LIMIT):
            if slot.scheduled_at > upto:
                return
            yield slot

    def _record(
        self, schedule: Schedule, slot: Slot, now: datetime, kind: RunKind = RunKind.SCHEDULED
    ) -> Run:
        parts = self.partitioning
        return new_occurrence(
            schedule.schedule_id,
            schedule.version,
            slot,
            bucket=parts.placement(slot.scheduled_at, now),
            shard=parts.shard(schedule.schedule_id),
            materialized_at=now,
            kind=kind,
        )

    def _summary(
        self, schedule: Schedule, first: Slot, last: Slot, text: str, now: datetime
    ) -> Run:
        """A skipped record that counts the slots from ``first`` to ``last``:
        ``text`` (what and how many), then the range, e.g. "paused: 60 slots
        skipped, 2026-12-01T10:00:01Z to 2026-12-01T10:01:00Z". Its business key
        is its first slot's: written twice, it is stored once."""
        run = replace(
            self._record(schedule, first, now, RunKind.SUMMARY),
            business_key=summary_business_key(schedule.schedule_id, first),
        )
        reason = f"{text}, {_iso(first.scheduled_at)} to {_iso(last.scheduled_at)}"
        return run.closed(RunStatus.SKIPPED, reason, now)


def _at_least(count: int) -> str:
    """A count's prefix: "at least " once counting stopped at its limit."""
    return "at least " if count >= SUMMARY_COUNT_LIMIT else ""


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _computed(compute: Callable[[], _T]) -> _T:
    """``compute()``; an unexpected error (an overflow, a zone rule that cannot
    be read) is a spec that cannot be computed: refused, naming ``spec``."""
    try:
        return compute()
    except InvalidSchedule:
        raise
    except Exception as error:
        raise InvalidSchedule(
            "spec", f"its occurrences cannot be computed ({type(error).__name__}: {error})"
        ) from error


def _check_shown(schedule: Schedule, now: datetime) -> None:
    """Everything the answer and the store will compute from ``schedule``,
    computed now, before anything is written."""
    _computed(lambda: shown_slots(schedule, NEXT_SHOWN, now))
    _computed(lambda: dumps(version_to_dict(schedule.current)))


def _first_slot(
    version: ScheduleVersion, after: datetime, *, check: bool = True
) -> datetime | None:
    """The version's first slot strictly after ``after``; with ``check``, refuse a
    spec that has none (a one-off in the past, an end_at gone by)."""
    slot = next(iter(slots_after(version.spec, version.policy.dst, after)), None)
    if slot is None and check:
        field = "spec.at" if isinstance(version.spec, AtSpec) else "spec.end_at"
        raise InvalidSchedule(field, "leaves no occurrence after now")
    return None if slot is None else slot.scheduled_at
