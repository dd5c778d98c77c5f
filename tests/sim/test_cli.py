"""`python -m sim` refuses options it cannot run, naming them, before synthesizing anything."""

from __future__ import annotations

import pytest

from sim.__main__ import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tomorrow"], "invalid choice"),
        (["faults", "--hours", "0"], "--hours must be positive"),
        (["mixed-day", "--scale", "0"], "--scale must be in (0, 1]"),
        (["mixed-day", "--scale", "2"], "--scale must be in (0, 1]"),
        (["idle-week", "--tick-interval", "0.5"], "--tick-interval must be between 1 and 55"),
        (["idle-week", "--tick-interval", "60"], "--tick-interval must be between 1 and 55"),
        (["burst", "--count", "0"], "--count must be at least 1"),
    ],
)
def test_a_bad_option_is_refused_by_name(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_synthesis() -> None:
        raise AssertionError("synthesized before checking the options")

    monkeypatch.setattr("sim.__main__.synthesize", no_synthesis)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
