"""Free text a user writes (a schedule's name, a pause note): printable only.

Control characters (C0 ``U+0000-U+001F``, DEL ``U+007F``, C1
``U+0080-U+009F``) are refused: a NUL truncates the text in C tools, an ESC
drives the terminal that prints it, and a CR or LF forges lines in logs.
Lone surrogates (``U+D800-U+DFFF``) are refused too: they are not text, and
no UTF-8 encoder will write them.
"""

from __future__ import annotations

import re
from typing import Final

from domain.errors import InvalidSchedule

# The characters free text may not hold, as a regular expression character
# class written with escapes (Python's and ECMA-262's read them alike).
FORBIDDEN_CLASS: Final = r"\u0000-\u001f\u007f-\u009f\ud800-\udfff"
_FORBIDDEN: Final = re.compile(f"[{FORBIDDEN_CLASS}]")
# A JSON Schema pattern for a part of the text accepted: characters of the
# Basic Multilingual Plane without controls and surrogates. (Characters beyond
# U+FFFF are accepted too, but an ECMA-262 pattern sees them as surrogate
# pairs, and Python's ``re`` as one character: no pattern reads the same in both.)
_TEXT_CHARS: Final = r"\u0020-\u007e\u00a0-\ud7ff\ue000-\uffff"
TEXT_PATTERN: Final = f"^[{_TEXT_CHARS}]*$"
# ... with at least one character that is not a space.
_VISIBLE_CHARS: Final = r"!-~\u00a1-\u167f\u1681-\u1fff\u3001-\ud7ff\ue000-\uffef"
NAME_PATTERN: Final = f"^[{_TEXT_CHARS}]*[{_VISIBLE_CHARS}][{_TEXT_CHARS}]*$"


def forbidden_character(text: str) -> str | None:
    """The first character of ``text`` that free text may not hold, if any."""
    match = _FORBIDDEN.search(text)
    return None if match is None else match.group()


def check_text(text: str, field: str) -> str:
    """``text``, or InvalidSchedule naming ``field`` and the first forbidden character."""
    bad = forbidden_character(text)
    if bad is not None:
        found = f"U+{ord(bad):04X}"
        raise InvalidSchedule(
            field, f"must not contain control characters or lone surrogates (found {found})"
        )
    return text


_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def forbidden_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (never text, in any field)."""
    return _SURROGATE.search(text) is not None
