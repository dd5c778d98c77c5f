"""`duetime local` refuses bad options with a message that names them."""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

import pytest

from cli.local_options import (
    parse_interval,
    parse_parts,
    parse_worker_processes,
    parse_workers,
    worker_processes,
)
from cli.main import build_parser, main


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("0.25", 0.25)],
)
def test_intervals(text: str, seconds: float) -> None:
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["", "fast", "-1s", "0s", "1d", "1 minute"])
def test_bad_intervals_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="interval"):
        parse_interval(text)


def test_parts() -> None:
    assert parse_parts("api, tick") == ("api", "tick")
    for bad in ("", "api,dispatcher", ","):
        with pytest.raises(argparse.ArgumentTypeError, match="--only takes a comma list"):
            parse_parts(bad)


def test_the_command_line_refuses_them_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    for bad in (["--only", "api,everything"], ["--tick-interval", "soon"], ["--store", "pg"]):
        with pytest.raises(SystemExit) as caught:
            main(["local", "--data-dir", str(data), *bad])
        assert caught.value.code == 2
        assert "duetime local: error:" in capsys.readouterr().err
        assert not data.exists()  # nothing was created


def test_a_port_in_use_stops_the_start_with_status_1_and_a_clear_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["local", "--data-dir", str(data), "--port", str(port), "--echo-port", "0"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"duetime local: the API cannot listen on 127.0.0.1:{port}" in err
    assert "choose another --port" in err
    assert not (data / "duetime.db").exists()  # nothing was opened


def test_a_data_directory_that_is_a_file_stops_the_start_with_status_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.write_text("not a directory")
    code = main(["local", "--data-dir", str(data), "--port", "0", "--echo-port", "0"])
    assert code == 1
    assert f"duetime local: the data directory {data} is a file" in capsys.readouterr().err
    assert data.read_text() == "not a directory"


@pytest.mark.parametrize(("text", "count"), [("1", 1), ("8", 8), ("256", 256)])
def test_worker_counts(text: str, count: int) -> None:
    assert parse_workers(text) == count


@pytest.mark.parametrize("text", ["0", "-1", "257", "eight", "2.5", ""])
def test_bad_worker_counts_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="--workers takes a whole number"):
        parse_workers(text)


def test_a_bad_worker_count_stops_the_command_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with pytest.raises(SystemExit) as caught:
        main(["local", "--data-dir", str(data), "--workers", "0"])
    assert caught.value.code == 2
    assert "--workers takes a whole number from 1 to 256 (got '0')" in capsys.readouterr().err
    assert not data.exists()


@pytest.mark.parametrize(("text", "count"), [("1", 1), ("2", 2), ("64", 64)])
def test_worker_process_counts(text: str, count: int) -> None:
    assert parse_worker_processes(text) == count


@pytest.mark.parametrize("text", ["0", "-2", "65", "two", "1.5", ""])
def test_bad_worker_process_counts_are_refused(text: str) -> None:
    with pytest.raises(
        argparse.ArgumentTypeError, match="--worker-processes takes a whole number from 1 to 64"
    ):
        parse_worker_processes(text)


def test_a_bad_worker_process_count_stops_the_command_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with pytest.raises(SystemExit) as caught:
        main(["local", "--data-dir", str(data), "--worker-processes", "0"])
    assert caught.value.code == 2
    assert "--worker-processes takes a whole number from 1 to 64 (got '0')" in (
        capsys.readouterr().err
    )
    assert not data.exists()


def test_more_than_one_worker_process_over_the_emulator_is_refused_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    code = main(
        ["local", "--data-dir", str(data), "--store", "emulator", "--worker-processes", "2"]
    )
    assert code == 2
    assert "--worker-processes 2: over the emulator the worker runs in one process" in (
        capsys.readouterr().err
    )
    assert not data.exists()


def test_worker_processes_default_to_the_cores_up_to_two_over_sqlite_and_one_over_the_emulator(
    tmp_path: Path,
) -> None:
    sqlite = build_parser().parse_args(["local", "--data-dir", str(tmp_path)])
    emulator = build_parser().parse_args(
        ["local", "--data-dir", str(tmp_path), "--store", "emulator"]
    )
    assert worker_processes(sqlite) == min(2, os.cpu_count() or 1)
    assert worker_processes(emulator) == 1


@pytest.mark.parametrize(
    "bad",
    [
        ["--notify-url", "hooks.example.com/alerts"],
        ["--notify-url", "ftp://example.com/"],
        ["--notify-url", "http://"],
        ["--notify-format", "teams"],
        ["--notify-min-interval", "soon"],
    ],
)
def test_bad_notification_options_are_refused_by_name_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: list[str]
) -> None:
    data = tmp_path / "data"
    with pytest.raises(SystemExit) as caught:
        main(["local", "--data-dir", str(data), *bad])
    assert caught.value.code == 2
    assert bad[0] in capsys.readouterr().err
    assert not data.exists()
