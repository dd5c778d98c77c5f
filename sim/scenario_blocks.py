"""What every scenario builds on: the options of a run, the primary stack's name,
schedules created through the API, webhook targets, and the tick's passes thinned.

``sim/scenarios.py`` names the scenarios; the ones with a module of their own
(``sim/routes.py``, ``sim/lateness.py``) take these parts from here.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from sim.adversity import Adversities
from sim.world import Simulation

PRIMARY = "Duetime"


@dataclass(frozen=True)
class Options:
    hours: float | None = None  # None: the scenario's own default
    scale: float = 1.0
    tick_interval_s: float = 1.0
    seed: int = 7
    count: int | None = None  # burst: occurrences due at one instant (None: 10,000)
    # burst: how long before the instant they are created (None: 80 s, inside the
    # lookahead, so each API call plans its own; beyond it, the tick plans them)
    ahead_s: float | None = None
    # burst: each schedule an hourly cron at the instant's minute, run for two hours:
    # the second instant is planned from the chain, as every day after the first is
    hourly: bool = False
    # AWS's weaker promises kept (sim/adversity.py): every one by default
    adversities: Adversities = field(default_factory=Adversities)


def thin_tick(sim: Simulation, interval_s: float) -> None:
    if interval_s == 1.0:
        return
    note = (
        f"tick passes thinned: one pass every {interval_s:g} s of the budget instead of every "
        "1 s (every invocation still runs); request counts, durations and cost are what ran, "
        "so the tick's share is lower than the deployed loop's"
    )

    def thin(module: ModuleType) -> None:
        run_tick = getattr(module, "run_tick", None)
        if run_tick is None or "interval_s" not in inspect.signature(run_tick).parameters:
            return  # a tick without a pass loop: nothing to thin

        signature = inspect.signature(run_tick)

        @functools.wraps(run_tick)
        def thinned(*args: Any, **kwargs: Any) -> Any:
            kwargs["interval_s"] = interval_s
            # A budget of a second or less is one pass either way: nothing is thinned.
            budget_s = signature.bind(*args, **kwargs).arguments.get("budget_s", 0.0)
            if budget_s > 1.0 and note not in sim.notes:
                sim.notes.append(note)
            return run_tick(*args, **kwargs)

        module.run_tick = thinned  # type: ignore[attr-defined]

    sim.seams.setdefault("handlers.tick", []).append(thin)


def create_schedule(sim: Simulation, stack: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create a schedule through the API. Every schedule here catches up on what it missed
    (``catch_up_all``), so each due occurrence must reach its target: a miss is a gap."""
    policy = body.setdefault("policy", {})
    policy.setdefault("overdue", "catch_up_all")
    status, answer = sim.api(stack, "POST", "/schedules", body)
    if status != 201:
        raise RuntimeError(f"the API refused a schedule: {status} {answer}")
    created: dict[str, Any] = answer
    sim.labels[created["id"]] = body["name"]
    return created


def webhook_target(name: str, query: str = "ms=200") -> dict[str, Any]:
    return {"type": "webhook", "url": f"https://{name}.target.example/hook?{query}"}
