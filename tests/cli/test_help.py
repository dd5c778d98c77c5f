"""Every command and every flag explains itself: a walk over the whole argparse
tree, so a flag added without help fails here."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from cli.main import build_parser, main


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def everything() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [
        (path, action)
        for path, parser in parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
    ]


def test_every_flag_and_argument_of_every_command_has_help() -> None:
    missing = [
        f"duetime {' '.join(path)} {action.option_strings or action.dest}"
        for path, action in everything()
        if not (action.help and action.help.strip())
    ]
    assert missing == []


def test_every_command_and_action_has_a_one_line_help_and_a_description() -> None:
    for path, parser in parsers(build_parser()):
        assert parser.description, f"duetime {' '.join(path)} has no description"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                assert set(helps) == set(action.choices), path
                assert all(helps.values()), (path, helps)


def test_top_level_help_lists_every_command_with_a_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    listed = " ".join(out.split())  # the help as one line, however it wrapped
    for choice in commands._choices_actions:
        assert choice.help
        assert f"{choice.dest} {' '.join(choice.help.split())}" in listed, choice.dest


@pytest.mark.parametrize(
    ("flag", "choices"),
    [
        ("--dst-gap", ("cron =", "shift =", "next_valid =", "skip =")),
        ("--dst-fold", ("cron =", "first =", "second =", "both =")),
        ("--overdue", ("catch_up_all =", "latest_only =", "expire =")),
        ("--overlap", ("allow_all =", "skip =")),
    ],
)
def test_each_choice_is_explained_where_a_flag_takes_one(
    flag: str, choices: tuple[str, ...]
) -> None:
    found = [action for path, action in everything() if flag in action.option_strings]
    assert found
    for action in found:
        for choice in choices:
            assert choice in (action.help or ""), (flag, choice)
