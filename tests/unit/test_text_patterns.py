"""The JSON Schema patterns of free text describe exactly the text the domain
accepts, so a client (or a fuzzer) that trusts the document is never refused,
and nothing the document forbids is accepted: emoji and other characters
beyond U+FFFF included, white space by ``str.isspace``."""

from __future__ import annotations

import re

import pytest

from domain.errors import InvalidSchedule
from domain.schedule import check_name
from domain.text import NAME_PATTERN, TEXT_PATTERN, check_text

SAMPLES = [
    *(chr(c) for c in range(0x00, 0x3100)),
    "\ud7ff",
    "\ue000",
    "\ufeff",
    "\uffef",
    "\ufff0",
    "\uffff",
    "\U00010000",
    "\U0001f600",
    "\U0010ffff",
    "\ud800",
    "\udfff",
]


def _accepted(check: object, text: str) -> bool:
    try:
        check(text)  # type: ignore[operator]
    except InvalidSchedule:
        return False
    return True


@pytest.mark.parametrize("around", ["{}", "a{}", "{} ", "x{}y"])
def test_text_and_name_patterns_match_what_the_domain_accepts(around: str) -> None:
    text, name = re.compile(TEXT_PATTERN), re.compile(NAME_PATTERN)
    for sample in SAMPLES:
        value = around.format(sample)
        if value.endswith("\n"):
            continue  # Python's $ matches before a final newline; ECMA-262's does not
        assert bool(text.match(value)) == _accepted(lambda v: check_text(v, "note"), value), repr(
            value
        )
        assert bool(name.match(value)) == _accepted(check_name, value), repr(value)
