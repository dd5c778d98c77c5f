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
# JSON Schema patterns for exactly the text accepted, as Python's ``re`` and
# ECMA-262 with its ``u`` flag read them: a character beyond U+FFFF is one code
# point there, matched by ``[^\x00-\uffff]``. (ECMA-262 without ``u`` sees it
# as a surrogate pair, which that class never matches: to such a reader the
# document describes a part of what is accepted. A surrogate-pair alternative
# would say more, but generators cannot draw from it.)
_TEXT_CHARS: Final = r"\u0020-\u007e\u00a0-\ud7ff\ue000-\uffff"
_ASTRAL: Final = r"[^\x00-\uffff]"
_TEXT: Final = f"(?:[{_TEXT_CHARS}]|{_ASTRAL})"
TEXT_PATTERN: Final = f"^{_TEXT}*$"
# ... with at least one character that is not white space (``str.isspace``).
_VISIBLE_CHARS: Final = (
    r"!-~\u00a1-\u167f\u1681-\u1fff\u200b-\u2027\u202a-\u202e\u2030-\u205e"
    r"\u2060-\u2fff\u3001-\ud7ff\ue000-\uffff"
)
NAME_PATTERN: Final = f"^{_TEXT}*(?:[{_VISIBLE_CHARS}]|{_ASTRAL}){_TEXT}*$"


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
