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
        (["burst", "--tick-memory", "64"], "--tick-memory must be between 128 and 10240"),
        (["burst", "--tick-memory", "20000"], "--tick-memory must be between 128 and 10240"),
        (["faults", "--without", "index-lgo"], "--without: unknown adversity index-lgo"),
        (["faults", "--without", "ttl-lag,bogus"], "--without: unknown adversity bogus"),
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


def test_a_memory_size_reaches_only_the_functions_of_its_handler() -> None:
    from sim.synth import with_memory

    def fn(handler: str) -> dict[str, object]:
        return {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Handler": handler, "MemorySize": 512},
        }

    templates = {
        "S": {"Resources": {"Tick": fn("handlers.tick.handler"), "Api": fn("handlers.api.handler")}}
    }
    changed = with_memory(templates, "handlers.tick.handler", 1769)
    resources = changed["S"]["Resources"]
    assert resources["Tick"]["Properties"]["MemorySize"] == 1769
    assert resources["Api"]["Properties"]["MemorySize"] == 512
    assert templates["S"]["Resources"]["Tick"]["Properties"]["MemorySize"] == 512  # a copy


def test_all_runs_every_scenario() -> None:
    from sim.__main__ import SCENARIO_NAMES
    from sim.scenarios import SCENARIOS, SHORT

    assert set(SCENARIO_NAMES) == set(SCENARIOS) == set(SHORT)


def test_the_worker_cap_reaches_only_the_event_source_mapping() -> None:
    from sim.lateness import with_worker_cap

    templates = {
        "S": {
            "Resources": {
                "Esm": {
                    "Type": "AWS::Lambda::EventSourceMapping",
                    "Properties": {"ScalingConfig": {"MaximumConcurrency": 100}},
                },
                "Fn": {"Type": "AWS::Lambda::Function", "Properties": {}},
            }
        }
    }
    changed = with_worker_cap(templates, 2)
    assert changed["S"]["Resources"]["Esm"]["Properties"]["ScalingConfig"] == {
        "MaximumConcurrency": 2
    }
    assert changed["S"]["Resources"]["Fn"]["Properties"] == {}
    assert templates["S"]["Resources"]["Esm"]["Properties"]["ScalingConfig"] == {
        "MaximumConcurrency": 100
    }  # a copy


def test_a_set_variable_reaches_the_functions_that_have_it() -> None:
    from sim.synth import environment_names, with_variables

    def fn(variables: dict[str, str]) -> dict[str, object]:
        return {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Environment": {"Variables": variables}},
        }

    templates = {
        "S": {
            "Resources": {
                "Tick": fn({"DUETIME_PLAN_EARLY": "true", "DUETIME_LOOKAHEAD_S": "90"}),
                "Worker": fn({"DUETIME_SECRET_STORE": "dynamodb"}),
            }
        }
    }
    assert "DUETIME_PLAN_EARLY" in environment_names(templates)
    changed = with_variables(templates, {"DUETIME_PLAN_EARLY": "false"})
    resources = changed["S"]["Resources"]
    assert resources["Tick"]["Properties"]["Environment"]["Variables"] == {
        "DUETIME_PLAN_EARLY": "false",
        "DUETIME_LOOKAHEAD_S": "90",
    }
    assert "DUETIME_PLAN_EARLY" not in resources["Worker"]["Properties"]["Environment"]["Variables"]


def test_set_is_refused_for_a_variable_no_function_has(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    template = {
        "Resources": {
            "Tick": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Environment": {"Variables": {"DUETIME_PLAN_EARLY": "true"}}},
            }
        }
    }
    monkeypatch.setattr("sim.__main__.synthesize", lambda: {"Duetime": template})
    with pytest.raises(SystemExit) as exit_info:
        main(["burst", "--set", "DUETIME_PLAN_ERLY=false"])
    assert exit_info.value.code == 2
    assert "--set: no function of the template has DUETIME_PLAN_ERLY" in capsys.readouterr().err
