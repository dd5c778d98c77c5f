"""Driving the `duetime` command in tests, against an API served on 127.0.0.1
(the ``duetime`` fixture in conftest.py): its exit code, output and errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Run = Callable[..., tuple[int, str, str]]


def as_json(run: Run, *argv: str) -> Any:
    """The command's ``--json`` answer; it must succeed."""
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def refused(run: Run, *argv: str, one_line: bool = False) -> str:
    """The command's error: exit 2, nothing on stdout, no traceback (and, with
    ``one_line``, a message of one line)."""
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert "Traceback" not in err
    if one_line:
        assert len(err.strip().splitlines()) == 1, err
    return err
