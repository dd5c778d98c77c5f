"""`duetime demo`, run in process: what it prints and what it leaves in the store.

The demo narrates five promises; each test here checks one of them twice, in
the printed story and in the SQLite store the story leaves behind, so a
broken promise fails here even if the narration still reads well.

Timeline (Monday 2026-11-30, New York on EST, UTC-5; London on GMT, UTC+0),
planned 24 h ahead: the schedule is created and edited to version 4 by
12:15Z; Monday 09:00 New York = 14:00Z (written at 12:20Z, admitted by tick-1,
sent by tick-2, emailed once); Tuesday 09:00 New York = 2026-12-01T14:00Z
(written under version 4 at Monday 14:00Z, a day ahead, while tick-3 froze
between its read and its write; untouched by the move to London at 16:00Z
and by tick-3's late write; skipped by the pause at 22:00Z); Wednesday 09:00
London = 2026-12-02T09:00Z (the first slot of version 5).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.store import SqliteStore
from cli.demo import DemoResult, run_demo
from cli.main import main
from domain.run import Run, RunStatus
from domain.spec import spec_zone_name
from tests.conftest import utc

DOC = Path(__file__).resolve().parents[2] / "docs" / "demo.md"


@dataclass
class Told:
    result: DemoResult
    output: str
    store: SqliteStore
    db: Path

    @property
    def sid(self) -> str:
        return self.result.schedule_id

    def runs(self) -> list[Run]:
        return list(reversed(self.store.records.runs(self.sid, 100).items))

    def run_at(self, instant: str) -> Run:
        [run] = [r for r in self.runs() if r.scheduled_at == utc(instant)]
        return run

    def section(self, number: int) -> str:
        """The printed text of step ``number``."""
        start = self.output.index(f"\n{number}. ")
        end = self.output.find(f"\n{number + 1}. ", start)
        if end == -1:
            end = self.output.index("\nIn the store at the end")
        return self.output[start:end]


@pytest.fixture(scope="module")
def told(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Told]:
    db = tmp_path_factory.mktemp("demo") / "duetime.db"
    out = io.StringIO()
    result = run_demo(out, db_path=db)
    store = SqliteStore.open(db)
    yield Told(result, out.getvalue(), store, db)
    store.close()


def _says(text: str, phrase: str) -> bool:
    """``phrase`` appears in ``text``, however the lines and columns wrapped it."""
    return " ".join(phrase.split()) in " ".join(text.split())


def _row(text: str, *cells: str) -> bool:
    """Some line of ``text`` holds ``cells`` in order, separated by table spacing."""
    pattern = r"\s+".join(re.escape(c) for c in cells)
    return re.search(rf"^\s*{pattern}\s*$", text, re.MULTILINE) is not None


MONDAY = "2026-11-30T14:00:00Z"
TUESDAY = "2026-12-01T14:00:00Z"
TUESDAY_IN_LONDON = "2026-12-01T09:00:00Z"
WEDNESDAY_IN_LONDON = "2026-12-02T09:00:00Z"
TUESDAY_WALL = datetime(2026, 12, 1, 9, 0)  # naive: a wall time


def _tuesdays(runs: list[Run]) -> list[Run]:
    """The records for Tuesday 09:00's slot, whatever their zone or version."""
    return [r for r in runs if r.wall == TUESDAY_WALL]


def test_the_demo_plans_a_day_ahead(told: Told) -> None:
    assert _says(told.output, "The demo plans 24 h ahead, as a deployment may")
    monday = told.run_at(MONDAY)
    [tuesday] = _tuesdays(told.result.after_move)  # the pause withdraws it later
    assert monday.materialized_at == utc("2026-11-30T12:20:00Z")
    # Tuesday's occurrence is written on Monday at 09:00 New York, a full day ahead,
    # under the version the schedule had then.
    assert tuesday.materialized_at == utc("2026-11-30T14:00:00Z")
    assert tuesday.version == 4
    text = told.section(2)
    assert _says(text, "wrote 1 occurrence: Mon 09:00 EST (v4)")
    assert _says(text, "wrote 1 occurrence: Tue 09:00 EST (v4); admitted 1;")
    assert _says(text, "written 24 h ahead under version 4, waits for its time (scheduled)")


def test_one_record_per_slot_across_the_whole_story(told: Told) -> None:
    runs = list(told.result.after_move)  # before the pause withdrew Tuesday's
    assert [(r.version, r.scheduled_at.isoformat()) for r in runs] == [
        (4, "2026-11-30T14:00:00+00:00"),
        (4, "2026-12-01T14:00:00+00:00"),
    ]
    assert len({r.business_key for r in runs}) == len(runs)
    assert _says(told.output, "2 occurrences for 2 slots")


def test_a_tick_killed_before_sending_is_repaired_by_the_next_one_with_one_intent(
    told: Told,
) -> None:
    monday = told.run_at(MONDAY)
    assert monday.occurrence_id == f"{told.sid}.v4.20261130T140000Z"
    # Admitted once, by the killed tick; sent by the next process once its leases lapsed.
    assert monday.admitted_at == utc("2026-11-30T14:00:00Z")
    assert monday.sent_at == utc("2026-11-30T14:00:31Z")
    assert told.result.intents_sent == 1
    text = told.section(2)
    assert _says(text, "killed before sending its intent")
    assert _says(text, "sent 1 intent (1 admitted earlier, never sent)")
    assert _says(text, f"Monday's occurrence: 1 record, 1 intent id: {monday.occurrence_id}.")
    assert _row(text, "#1", monday.occurrence_id, "0", "ready")


def test_a_message_delivered_twice_runs_once_and_sends_one_email(told: Told) -> None:
    monday = told.run_at(MONDAY)
    assert monday.status is RunStatus.SUCCEEDED and monday.attempts == 1
    [email] = told.result.emails
    assert email.idempotency_key == monday.occurrence_id
    assert (email.to, email.version, email.attempt) == ("sales-leads@example.com", 4, 1)
    queue = SqliteQueue(told.db)
    try:
        assert queue.depth() == 0 and queue.dead_letters() == []
    finally:
        queue.close()
    text = told.section(3)
    assert _says(text, "worker-2  receives message #1 (receive 2)")
    assert _says(text, "nothing sent; decision: delete (already succeeded)")
    assert _row(text, "Mon 14:00:47Z", "sales-leads@example.com", monday.occurrence_id, "4")


def test_tuesdays_v4_occurrence_existed_before_the_move_and_is_unchanged_after(
    told: Told,
) -> None:
    tuesday_id = f"{told.sid}.v4.20261201T140000Z"
    # Recorded at the move, before the edit: Tuesday's occurrence, under version 4.
    [before] = _tuesdays(told.result.before_move)
    assert before.occurrence_id == tuesday_id
    assert (before.version, before.scheduled_at) == (4, utc(TUESDAY))
    assert before.status is RunStatus.SCHEDULED
    v5 = told.store.schedules.get_version(told.sid, 5)
    assert v5 is not None and spec_zone_name(v5.spec) == "Europe/London"
    assert before.materialized_at is not None and before.materialized_at < v5.created_at
    # After the move and both schedulers' ticks (one of them writing what it read
    # under version 4): the same record, field for field, and no second copy.
    assert _tuesdays(told.result.after_move) == [before]
    assert [r.scheduled_at for r in told.result.after_move].count(utc(TUESDAY_IN_LONDON)) == 0
    # And at the end the pause has withdrawn it (planned, not due): no record.
    assert _tuesdays(told.runs()) == []
    assert all(r.scheduled_at != utc(TUESDAY_IN_LONDON) for r in told.runs())
    v4 = told.store.schedules.get_version(told.sid, 4)
    assert v4 is not None and spec_zone_name(v4.spec) == "America/New_York"
    text = told.section(4)
    assert _says(text, "1 write refused (the schedule changed since its read)")
    assert _says(text, "1 record for its slot, unchanged by the move and the ticks after it")
    assert _says(text, f"{tuesday_id}: version 4, 2026-12-01T14:00:00Z, written Mon 14:00:00Z")
    assert _says(text, f"none at {TUESDAY_IN_LONDON}, Tuesday 09:00 in London")
    assert _row(text, tuesday_id, "4", "2026-12-01T14:00:00Z", "Tue 09:00 EST", "scheduled")
    assert _says(told.section(2), "read version 4, due 2026-12-01T14:00:00Z; about to write")


def test_version_5_starts_on_wednesday_in_london(told: Told) -> None:
    head = told.store.schedules.get(told.sid)
    assert head is not None and head.version == 5
    assert spec_zone_name(head.current.spec) == "Europe/London"
    assert head.next_due == utc(WEDNESDAY_IN_LONDON)
    assert all(r.version == 4 for r in told.runs())  # nothing was written under v5 yet
    text = told.section(4)
    assert _says(text, "PUT If-Match 4: America/New_York -> Europe/London -> version 5")
    newly = text[text.index("newly calculated") :]
    first = newly.splitlines()[3]
    assert _row(first, "Wed 2026-12-02 09:00 GMT", WEDNESDAY_IN_LONDON, "5")


def test_pause_withdraws_the_planned_occurrence_and_leaves_the_sent_email_alone(
    told: Told,
) -> None:
    # Tuesday's occurrence was planned a day ahead: the pause withdrew it.
    assert all(r.scheduled_at != utc(TUESDAY) for r in told.runs())
    assert told.run_at(MONDAY).status is RunStatus.SUCCEEDED
    assert len(told.result.emails) == 1
    head = told.store.schedules.get(told.sid)
    assert head is not None and head.state.paused
    text = told.section(5)
    assert "admitted" not in text.split("Stored occurrences:")[0]
    assert _says(text, "Tue 14:00:00Z  worker-3  polls the queue: no message")
    assert "20261201T140000Z withdrawn (planned)" in text
    assert _says(text, "(none: the schedule is paused)")
    assert _says(told.output, "occurrences   1 for 1 slot: 1 succeeded")
    assert _says(told.output, "emails        1; Idempotency-Keys:")


def test_the_story_is_the_same_every_time_and_the_command_prints_it(
    told: Told, capsys: pytest.CaptureFixture[str]
) -> None:
    again = io.StringIO()
    run_demo(again)
    assert again.getvalue() == told.output
    assert main(["demo"]) == 0
    assert capsys.readouterr().out == told.output


def test_the_demo_refuses_to_reuse_a_store(tmp_path: Path) -> None:
    used = tmp_path / "used.db"
    used.write_bytes(b"")
    assert main(["demo", "--db", str(used)]) == 2


@pytest.mark.parametrize("doc_path", [DOC, DOC.parent.parent / "README.md"], ids=lambda p: p.name)
def test_the_docs_show_the_current_output(told: Told, doc_path: Path) -> None:
    doc = doc_path.read_text(encoding="utf-8")
    blocks = re.findall(r"^```text\n(.*?)^```$", doc, re.MULTILINE | re.DOTALL)
    assert told.output in blocks, (
        f"{doc_path.name} is stale: paste the output of `duetime demo` into its text block"
    )
