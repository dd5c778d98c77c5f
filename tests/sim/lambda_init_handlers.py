"""A handler module that builds its clients in Lambda's init phase (``init_container``),
as the worker's and the tick's do (test_lambda_model.py)."""

from __future__ import annotations

import time
from typing import Any

# How many times this copy of the module (one container's) ran its init, and when.
INITS: list[float] = []


def init_container() -> None:
    INITS.append(time.time())


def target(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The times this container's init ran, and when the handler began."""
    return {"inits": list(INITS), "at": time.time()}
