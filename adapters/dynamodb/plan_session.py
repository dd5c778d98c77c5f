"""What one pass of the DynamoDB planner keeps between its calls."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adapters.dynamodb.plan_lease import Cursor
from service.ports import PlanSession


@dataclass(eq=False)
class DynamoPlanSession(PlanSession):
    """What one pass of the DynamoDB planner keeps between its calls: made by
    ``plan_session`` when the pass begins, handed to each planning call,
    dropped when the pass ends (so the store holds none of it)."""

    # Where the plan pages' read starts for a horizon (the cursor's
    # ``through``; see ``due`` and ``planned_through``).
    floor: tuple[datetime, datetime | None] | None = None
    # Whether this pass holds the plan lease (see ``_hold_plan``), and who it
    # is when it does: one name per pass, so two passes over one store object
    # (overlapping invocations in one process) are two holders, not one.
    held: bool = False
    owner: str = field(default_factory=lambda: f"plan-{uuid.uuid4().hex}")
    # The HEADs its ``due`` read consistently, used once by ``_head_mode``.
    heads_read: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The next slots its chain carries, written as plan pages when it ends
    # (``planned_through``); every entry put on a page while it held the plan
    # lease (see ``_rehome``).
    page_entries: list[tuple[datetime, str, int]] = field(default_factory=list)
    paged_entries: list[tuple[datetime, str, int]] = field(default_factory=list)
    # Where a pass that stopped at its budget left off inside the chain: every
    # entry with a ``due_key`` up to it is planned (the cursor's ``partial``).
    key_floor: str | None = None
    # The pages it read, by their range, as sorted (due_key, entry) pairs.
    pages_read: tuple[tuple[datetime, datetime], list[tuple[str, dict[str, Any]]]] | None = None
    # The cursor as this pass last saw it: read once per horizon
    # (``_chain_floor``), or as its own let-go left it; ``chain_crowd`` uses it.
    cursor: Cursor | None = None
    # The cursor's ``next_line`` as this holding took it, when the holder before
    # let go (so it is true); None: not known.
    line_at_take: datetime | None = None
    # The upper bound of the last range this holding read, and the earliest
    # line past it in the minutes it read (None: none there).
    beyond: tuple[datetime, datetime | None] | None = None
    # Materialization runs a batch's schedules in a thread pool.
    lock: threading.Lock = field(default_factory=threading.Lock)
