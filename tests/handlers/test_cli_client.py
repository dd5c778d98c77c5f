"""`duetime schedules` and `duetime runs` against the API served on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.local_http import ApiServer
from cli.main import main


@pytest.fixture
def api_url(server: ApiServer) -> str:
    return server.url


def duetime(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def create(capsys: pytest.CaptureFixture[str], api_url: str, *extra: str) -> dict[str, Any]:
    code, out, _ = duetime(
        capsys, "schedules", "create", "--api-url", api_url, "--json",
        "--name", "sales report", "--cron", "0 9 * * MON-FRI", "--tz", "Europe/London",
        "--webhook", "https://example.com/hook", "--payload", '{"report": "sales"}', *extra,
    )  # fmt: skip
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    return data


def test_create_show_list_and_edit(capsys: pytest.CaptureFixture[str], api_url: str) -> None:
    created = create(capsys, api_url)
    sid = created["id"]
    assert created["version"] == 1
    assert created["payload"] == {"report": "sales"}

    code, out, _ = duetime(capsys, "schedules", "show", sid, "--api-url", api_url)
    assert code == 0
    assert f"id:       {sid}" in out
    assert "spec:     cron 0 9 * * MON-FRI (Europe/London)" in out
    assert "next:" in out

    code, out, _ = duetime(capsys, "schedules", "list", "--api-url", api_url)
    header, row = out.splitlines()[:2]
    assert header.split() == ["ID", "NAME", "VERSION", "STATE", "SPEC"]
    assert row.startswith(sid)
    assert row.split("  ")[-2:] == ["active", "cron 0 9 * * MON-FRI (Europe/London)"]

    code, out, _ = duetime(
        capsys, "schedules", "edit", sid, "--version", "1", "--api-url", api_url, "--json",
        "--name", "sales report", "--cron", "0 10 * * MON-FRI", "--tz", "Europe/London",
        "--webhook", "https://example.com/hook",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["version"] == 2


def test_list_and_show_name_the_spec_kind_that_is_set(
    capsys: pytest.CaptureFixture[str], api_url: str
) -> None:
    code, out, _ = duetime(
        capsys, "schedules", "create", "--api-url", api_url, "--json", "--name", "sync",
        "--every", "PT15M", "--webhook", "https://example.com/hook",
    )  # fmt: skip
    assert code == 0
    sid = json.loads(out)["id"]
    code, out, _ = duetime(capsys, "schedules", "list", "--api-url", api_url)
    assert code == 0
    assert out.splitlines()[1].endswith("every PT15M")
    code, out, _ = duetime(capsys, "schedules", "show", sid, "--api-url", api_url)
    assert code == 0
    assert "spec:     every PT15M" in out


def test_idempotency_key_returns_the_same_schedule(
    capsys: pytest.CaptureFixture[str], api_url: str
) -> None:
    first = create(capsys, api_url, "--idempotency-key", "k-1")
    again = create(capsys, api_url, "--idempotency-key", "k-1")
    assert again["id"] == first["id"]


def test_pause_resume_trigger_and_runs(capsys: pytest.CaptureFixture[str], api_url: str) -> None:
    sid = create(capsys, api_url)["id"]
    code, out, _ = duetime(
        capsys, "schedules", "pause", sid, "--note", "audit", "--api-url", api_url
    )
    assert code == 0
    assert "state:    paused (audit)" in out
    code, out, _ = duetime(capsys, "schedules", "resume", sid, "--api-url", api_url)
    assert "state:    active" in out
    code, out, _ = duetime(capsys, "schedules", "trigger", sid, "--api-url", api_url, "--json")
    run = json.loads(out)
    assert run["schedule_id"] == sid
    code, out, _ = duetime(capsys, "runs", "list", sid, "--api-url", api_url)
    assert out.splitlines()[0].split()[:2] == ["OCCURRENCE", "STATUS"]
    assert run["occurrence_id"] in out
    code, out, _ = duetime(capsys, "runs", "show", run["occurrence_id"], "--api-url", api_url)
    assert f"occurrence_id: {run['occurrence_id']}" in out
    code, out, _ = duetime(capsys, "schedules", "delete", sid, "--api-url", api_url)
    assert code == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["schedules", "show", "sch_missing"], "HTTP 404"),
        (
            [
                "schedules",
                "create",
                "--name",
                "x",
                "--cron",
                "61 * * * *",
                "--webhook",
                "https://example.com/h",
            ],
            "HTTP 422: --cron minute: 61 is outside 0-59",
        ),
        (
            ["schedules", "create", "--name", "x", "--cron", "* * * * *", "--payload", "{oops"],
            "--payload",
        ),
        (
            [
                "schedules",
                "edit",
                "sch_missing",
                "--version",
                "1",
                "--name",
                "x",
                "--cron",
                "* * * * *",
                "--webhook",
                "https://example.com/h",
            ],
            "HTTP 404",
        ),
    ],
)
def test_refusals_print_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], api_url: str, argv: list[str], message: str
) -> None:
    code, out, err = duetime(capsys, *argv, "--api-url", api_url)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_unreachable_api_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = duetime(capsys, "schedules", "list", "--api-url", "http://127.0.0.1:9")
    assert code == 2
    assert err == (
        "duetime schedules: cannot reach the API at http://127.0.0.1:9: nothing answers there "
        "(connection refused); give the API's URL with --api-url or $DUETIME_API_URL\n"
    )
    assert "Errno" not in err


def test_unreachable_default_api_suggests_starting_a_local_stack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import urllib.error
    import urllib.request

    from cli.client import DEFAULT_API_URL, ApiClient, ApiError

    def refuse(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(ApiError) as refused:
        ApiClient(DEFAULT_API_URL).request("GET", "/schedules")
    assert str(refused.value) == (
        f"cannot reach the API at {DEFAULT_API_URL}: nothing answers there (connection "
        "refused); give the API's URL with --api-url or $DUETIME_API_URL, or start a local "
        "stack with `duetime local`"
    )


def test_sigv4_signs_with_the_callers_credentials() -> None:
    from cli.client import ApiClient

    client = ApiClient("https://abc123.execute-api.eu-west-1.amazonaws.com/prod")
    assert client.sigv4 is True
    headers = client._signed(
        "GET", "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/schedules", None, {}
    )
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
