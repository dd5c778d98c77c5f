"""The CLI never prints a stored text raw: a name is data, not terminal commands.

The API refuses control characters in names, but records written before that
rule (or by another client of the store) must still print safely.
"""

from __future__ import annotations

from cli.commands import _rows, _schedule_table, shown


def test_plain_text_is_printed_as_is() -> None:
    assert shown("sales report, été") == "sales report, été"


def test_control_characters_are_escaped_not_sent_to_the_terminal() -> None:
    assert shown("a\x00b\x1b[31mc\r\nd\x7f") == "a\\x00b\\x1b[31mc\\x0d\\x0ad\\x7f"


def test_separators_and_format_characters_are_escaped() -> None:
    assert shown("x\u2028y\u202ez\ud800") == "x\\u2028y\\u202ez\\ud800"


def test_a_name_cannot_forge_a_table_row() -> None:
    table = _rows(["ID", "NAME"], [["sch_1", "ok\nsch_2  forged"]])
    assert table.splitlines() == ["ID     NAME", "sch_1  ok\\x0asch_2  forged"]


def test_schedule_page_escapes_name_and_pause_note() -> None:
    page = _schedule_table(
        {
            "id": "sch_1",
            "name": "\x1b]0;owned\x07",
            "version": 1,
            "spec": {"every": "PT10S"},
            "state": {"paused": True, "note": "line\nbreak"},
            "target": {"type": "webhook"},
        }
    )
    assert "name:     \\x1b]0;owned\\x07" in page
    assert "paused (line\\x0abreak)" in page
    assert "\x1b" not in page and "\x07" not in page
