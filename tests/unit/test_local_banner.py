"""`duetime local` says on start what a restart keeps."""

from __future__ import annotations

from pathlib import Path

from cli.local import LocalStack
from cli.main import build_parser


def _banner(tmp_path: Path, *options: str) -> str:
    args = build_parser().parse_args(["local", "--data-dir", str(tmp_path), *options])
    stack = LocalStack(args)
    stack.api_url = "http://127.0.0.1:8080"
    return stack.banner()


def test_the_sqlite_stack_says_a_restart_on_its_data_directory_loses_nothing(
    tmp_path: Path,
) -> None:
    banner = _banner(tmp_path)
    assert "starting again with the same --data-dir loses nothing" in banner
    assert "in memory" not in banner


def test_the_emulator_stack_says_its_data_lives_only_as_long_as_the_process(
    tmp_path: Path,
) -> None:
    banner = _banner(tmp_path, "--store", "emulator")
    assert "loses nothing" not in banner
    assert (
        "The emulator holds its data in memory: it lives only as long as this process, "
        "and a restart starts empty"
    ) in banner
    assert "(DynamoDB + SQS adapters; in memory)" in banner
