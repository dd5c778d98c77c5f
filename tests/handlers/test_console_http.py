"""The console's files, served beside the API, and `duetime console`'s signing proxy.

The proxy is tried against a fake deployed API on 127.0.0.1 that records what it
receives; the credentials are the dummy ones of the test environment.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cli import console
from cli.console import Forwarder, SigningClient, console_page
from cli.local_http import ApiServer
from handlers.api import openapi_json

ROOT = Path(__file__).resolve().parents[2]
FILES = ROOT / "cli" / "console_files"
SCRIPTS = sorted(FILES.glob("*.js"))


def _serve(server: ApiServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


def _stop(server: ApiServer, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _request(
    server: ApiServer, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


# --- the files --------------------------------------------------------------------------


class CountingApi:
    """An API handler that counts its calls and answers 200 {}."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.calls.append(event["path"])
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}


@pytest.fixture
def local() -> Iterator[tuple[ApiServer, CountingApi]]:
    api = CountingApi()
    server = ApiServer(api, pages=console_page)
    thread = _serve(server)
    yield server, api
    _stop(server, thread)


def test_the_console_is_served_at_console_with_its_assets(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, api = local
    status, headers, body = _request(server, "GET", "/console")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    # Every script in the folder is loaded by the page and served, in the declared order.
    loaded = re.findall(rb'<script src="/console/([a-z]+)\.js" defer></script>', body)
    assert [name.decode() for name in loaded] == list(console.SCRIPTS)
    assert sorted(f"{name}.js" for name in console.SCRIPTS) == [p.name for p in SCRIPTS]
    files = [(p.name, "text/javascript") for p in SCRIPTS] + [("console.css", "text/css")]
    for name, kind in files:
        status, headers, body = _request(server, "GET", f"/console/{name}")
        assert status == 200 and headers["Content-Type"].startswith(kind)
        assert body == (FILES / name).read_bytes()
    assert _request(server, "GET", "/console/")[0] == 200
    assert api.calls == []  # none of it reached the API handler


def test_the_console_may_not_be_framed_nor_run_other_scripts(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, _ = local
    _, headers, _ = _request(server, "GET", "/console")
    policy = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_an_unknown_console_file_is_404_and_a_post_is_405(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, api = local
    status, _, body = _request(server, "GET", "/console/../duetime.db")
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    status, _, body = _request(server, "GET", "/console/secret.txt")
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    status, headers, body = _request(
        server, "POST", "/console", b"{}", **{"Content-Type": "application/json"}
    )
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, _, body = _request(server, "HEAD", "/console")
    assert status == 200 and body == b""
    assert api.calls == []


def test_a_path_that_only_starts_like_console_goes_to_the_api(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, api = local
    _request(server, "GET", "/consoles")
    assert api.calls == ["/consoles"]


def test_the_console_keeps_the_host_and_origin_protections(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, _ = local
    status, _, body = _request(server, "GET", "/console", Host="evil.example:80")
    assert status == 421 and b"misdirected_request" in body
    status, _, _ = _request(server, "GET", "/console", **{"Sec-Fetch-Site": "cross-site"})
    assert status == 403
    status, _, _ = _request(server, "GET", "/console", Origin="http://evil.example")
    assert status == 403
    # The page's own calls: same origin.
    status, _, _ = _request(
        server,
        "GET",
        "/schedules",
        Origin=server.url,
        **{"Sec-Fetch-Site": "same-origin"},
    )
    assert status == 200


def test_the_console_is_not_part_of_the_api_description() -> None:
    paths = json.loads(openapi_json())["paths"]
    assert not [path for path in paths if path.startswith("/console")]
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert not [path for path in committed["paths"] if path.startswith("/console")]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_console_scripts_never_write_html(script: Path) -> None:
    # Every value the API returns reaches the page as text: no HTML parsing of data.
    source = script.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in source, sink
    assert not re.search(r"new Function\b", source)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_console_script_stays_small(script: Path) -> None:
    # One file per page or form: none grows past what a reader takes in.
    assert len(script.read_text().splitlines()) < 800


# --- the preview of a schedule form -----------------------------------------------------


def test_the_preview_gives_the_next_runs_with_the_dst_note(
    local: tuple[ApiServer, CountingApi],
) -> None:
    server, api = local
    # America/New_York springs forward on 2027-03-14 at 02:00 EST to 03:00 EDT.
    query = (
        "kind=cron&when=30+2+*+*+*&time_zone=America/New_York"
        "&start_at=2027-03-13T00:00:00-05:00&dst_gap=next_valid"
    )
    status, headers, body = _request(server, "GET", f"/console/preview?{query}")
    assert status == 200 and headers["Content-Type"] == "application/json"
    occurrences = json.loads(body)["occurrences"]
    assert [o["local"] for o in occurrences[:2]] == [
        "2027-03-13T02:30:00-05:00",
        "2027-03-14T03:00:00-04:00",
    ]
    assert occurrences[0]["note"] is None and "02:30 does not exist" in occurrences[1]["note"]
    assert api.calls == []  # computed beside the API, not by it


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("kind=cron&when=61+*+*+*+*", "spec.cron.minute"),
        ("kind=cron&when=0+*+*+*+*&time_zone=Mars/Base", "spec.time_zone"),
        ("kind=every&when=soon", "spec.every"),
        ("kind=every&when=PT1M&dst_gap=never", "policy.dst_gap"),
        ("kind=yearly&when=1", "kind"),
    ],
)
def test_the_preview_refuses_a_field_naming_it(
    local: tuple[ApiServer, CountingApi], query: str, field: str
) -> None:
    server, _ = local
    status, _, body = _request(server, "GET", f"/console/preview?{query}")
    error = json.loads(body)["error"]
    assert status == 422 and error["code"] == "validation_error" and error["field"] == field


# --- the signing proxy ------------------------------------------------------------------


class FakeDeployedApi(ThreadingHTTPServer):
    """Records each request; answers what ``reply`` says."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        self.got: list[dict[str, Any]] = []
        self.reply: tuple[int, dict[str, str], bytes] = (
            200,
            {"Content-Type": "application/json"},
            b'{"ok": true}',
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/prod"


class _FakeHandler(BaseHTTPRequestHandler):
    server: FakeDeployedApi

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.got.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": self.rfile.read(length) if length else b"",
            }
        )
        status, headers, body = self.server.reply
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _record

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[FakeDeployedApi]:
    fake = FakeDeployedApi()
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    yield fake
    fake.shutdown()
    fake.server_close()
    thread.join(timeout=5)


@pytest.fixture
def proxy(upstream: FakeDeployedApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    server = ApiServer(
        Forwarder(SigningClient(upstream.url, region="eu-west-1")), pages=console_page
    )
    thread = _serve(server)
    yield server
    _stop(server, thread)


def test_the_proxy_signs_and_forwards_method_path_query_and_body(
    proxy: ApiServer, upstream: FakeDeployedApi
) -> None:
    body = b'{"name": "sales report"}'
    status, _, answer = _request(
        proxy,
        "PUT",
        "/schedules/sch_1?limit=2&status=failed,expired",
        body,
        **{
            "Content-Type": "application/json",
            "If-Match": '"3"',
            "Origin": proxy.url,
            "Sec-Fetch-Site": "same-origin",
            "Cookie": "session=1",
        },
    )
    assert status == 200 and json.loads(answer) == {"ok": True}
    [got] = upstream.got
    assert got["method"] == "PUT"
    assert got["path"] == "/prod/schedules/sch_1?limit=2&status=failed%2Cexpired"
    assert got["body"] == body
    auth = got["headers"]["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-west-1/execute-api/aws4_request" in auth
    assert "x-amz-date" in got["headers"]
    assert got["headers"]["x-amz-security-token"] == "testing"
    assert got["headers"]["if-match"] == '"3"'
    # What the browser adds of its own stays here.
    assert "cookie" not in got["headers"] and "origin" not in got["headers"]
    assert got["headers"]["host"] == upstream.url.removeprefix("http://").removesuffix("/prod")


def test_the_proxy_passes_the_apis_answer_back_as_it_is(
    proxy: ApiServer, upstream: FakeDeployedApi
) -> None:
    error = {"error": {"code": "not_retryable", "message": "it succeeded", "field": None}}
    upstream.reply = (
        409,
        {"Content-Type": "application/json", "ETag": '"4"', "Set-Cookie": "x=1"},
        json.dumps(error).encode(),
    )
    status, headers, answer = _request(proxy, "POST", "/runs/occ_1/retry")
    assert status == 409 and json.loads(answer) == error
    assert headers["ETag"] == '"4"'
    assert "Set-Cookie" not in headers
    [got] = upstream.got
    assert got["method"] == "POST" and got["path"] == "/prod/runs/occ_1/retry"
    assert got["body"] == b""


def test_the_proxy_forwards_only_the_api_paths(proxy: ApiServer, upstream: FakeDeployedApi) -> None:
    for path in ("/dead-letters?limit=5", "/health", "/runs", "/schedules"):
        assert _request(proxy, "GET", path)[0] == 200
    for path in ("/openapi.json", "/admin", "/schedulesx", "/schedules/../admin", "/%2e%2e/x"):
        status, _, answer = _request(proxy, "GET", path)
        assert status == 404 and json.loads(answer)["error"]["code"] == "no_route", path
    assert [g["path"] for g in upstream.got] == [
        "/prod/dead-letters?limit=5",
        "/prod/health",
        "/prod/runs",
        "/prod/schedules",
    ]


def test_the_proxy_serves_the_console_itself(proxy: ApiServer, upstream: FakeDeployedApi) -> None:
    status, _, body = _request(proxy, "GET", "/console")
    assert status == 200 and b"duetime" in body
    status, headers, _ = _request(proxy, "GET", "/")
    assert status == 302 and headers["Location"] == "/console"
    assert upstream.got == []


def test_a_page_on_another_site_cannot_drive_the_proxy(
    proxy: ApiServer, upstream: FakeDeployedApi
) -> None:
    hostile = (
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Host": "evil.example"},
        {"Host": f"attacker.example:{proxy.port}"},
    )
    for headers in hostile:
        status, _, _ = _request(
            proxy,
            "POST",
            "/schedules/sch_1/pause",
            b"{}",
            **{"Content-Type": "application/json", **headers},
        )
        assert status in (403, 421), headers
    assert upstream.got == []


def test_an_unreachable_api_is_a_502_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    forwarder = Forwarder(SigningClient("http://127.0.0.1:9/prod", region="us-east-1"))
    event = {"httpMethod": "GET", "path": "/health", "multiValueHeaders": {}, "body": None}
    status, _, body = forwarder.answer(event)
    assert status == 502
    assert "cannot reach the API at http://127.0.0.1:9/prod" in json.loads(body)["error"]["message"]


def test_duetime_console_refuses_a_missing_or_bad_api_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    monkeypatch.delenv(console.ENV_API_URL, raising=False)
    assert main(["console"]) == 2
    assert "--api-url is required" in capsys.readouterr().err
    assert main(["console", "--api-url", "ftp://example.com"]) == 2
    assert "must be an http(s) URL" in capsys.readouterr().err


def test_duetime_console_refuses_to_start_without_aws_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["console", "--api-url", "https://example.com/prod", "--port", "0"]) == 2
    assert "no AWS credentials found" in capsys.readouterr().err


def test_the_local_stacks_banner_shows_where_the_console_is(tmp_path: Path) -> None:
    from cli.local import LocalStack
    from cli.main import build_parser

    stack = LocalStack(build_parser().parse_args(["local", "--data-dir", str(tmp_path)]))
    stack.api_url = "http://127.0.0.1:8080"
    assert "console:  http://127.0.0.1:8080/console" in stack.banner()


def test_the_signature_names_the_region_of_the_api_url_over_the_default_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    url = "https://abc123.execute-api.eu-west-2.amazonaws.com/v1"
    signed = SigningClient(url)._signed("GET", url + "/health", None, {})
    assert "/eu-west-2/execute-api/aws4_request" in signed["Authorization"]
    # --region wins over both.
    signed = SigningClient(url, region="ap-south-1")._signed("GET", url + "/health", None, {})
    assert "/ap-south-1/execute-api/aws4_request" in signed["Authorization"]
    # A URL that names no region: the configured one.
    other = "https://api.example.com/v1"
    signed = SigningClient(other)._signed("GET", other + "/health", None, {})
    assert "/us-east-1/execute-api/aws4_request" in signed["Authorization"]


def test_duetime_console_says_when_its_port_is_taken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from cli.main import main

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["console", "--api-url", "https://example.com/v1", "--port", str(port)])
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
