"""Setting a schedule aside when duetime cannot handle it.

The tick plans and dispatches every schedule in one pass. If one schedule's
computation raises (a value that slipped past the API's checks, a time zone
rule that changed under a stored schedule), that one schedule is quarantined
and the pass carries on with the others: one poisoned schedule never stops
the loops that serve everyone. (The watchdog, which may not write schedules
or runs, records a schedule it cannot judge in its verdict instead:
service/watchdog.py.)

A quarantine is recorded on the schedule (the error, the component, when), so
the API shows it; the store then leaves the schedule out of planning, and its
waiting occurrences are closed as skipped (quarantined), as a pause closes
them. An edit (a new version) or a pause and resume clears it.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Final

from domain.run import RunStatus
from domain.schedule import QUARANTINED, Quarantine, QuarantineComponent
from service.ports import Store

# The service's logger: the same one the handlers' structured logger writes with.
_log: Final = logging.getLogger("duetime")


def quarantine_schedule(
    store: Store,
    schedule_id: str,
    version: int,
    error: BaseException,
    component: QuarantineComponent,
    now: datetime,
) -> Quarantine | None:
    """Record ``error`` as the schedule's quarantine and close what waits for it.

    None when the store refused (the schedule was edited to another version
    or deleted meanwhile: the error belonged to a version that is gone).
    """
    found = Quarantine.of(error, component, now)
    if not store.schedules.quarantine(schedule_id, version, found):
        return None
    closed = store.records.close_scheduled(schedule_id, RunStatus.SKIPPED, QUARANTINED, now)
    _log.error(
        "schedule quarantined",
        extra={
            "schedule_id": schedule_id,
            "version": version,
            "component": component.value,
            "error": found.reason,
            "closed": closed,
        },
    )
    return found
