"""Deliver an occurrence as a signed HTTP POST.

Every attempt sends ``Delivery.to_json_body()`` with:

    Content-Type: application/json
    Idempotency-Key: <occurrence_id>          (the same on every attempt)
    webhook-id, webhook-timestamp, webhook-signature   (Standard Webhooks)
    Duetime-Timestamp, Duetime-Signature               (earlier releases')

plus the target's own headers. The signature headers are
``adapters.targets.signing``'s, keyed with the schedule's secret from the
``SecretStore``. How a receiver verifies them is in docs/webhooks.md.

What the answer means:
- 2xx: delivered (202: accepted, the job reports completion later);
- 408, 429, 5xx, timeouts, connection and TLS errors: transient, retried, no
  sooner than ``Retry-After`` (seconds or an HTTP date);
- 301, 302, 307, 308: followed, at most ``max_redirects`` times, as a POST of
  the same body and signature, after checking the new URL and address again;
  a redirect from https to http is refused; the target's own headers are not
  sent to another origin;
- any other 3xx or 4xx, a refused address, a bad certificate, no secret:
  permanent, not retried.

The host name is resolved here, every address it resolves to is checked
against the ``AddressPolicy``, and the TCP connection is made to a checked
address, while the request still says ``Host: <name>`` and TLS still sends and
verifies the name (SNI and certificate), so a second DNS answer cannot swap
the address between the check and the call. No proxy is used.

Connections are kept alive and reused (``ConnectionPool``), keyed by scheme,
host name, port *and the checked address*: every delivery resolves and checks
the name again, and only takes an idle connection to an address that passed
this check, so a name that now resolves elsewhere (rebinding) never reuses a
connection to its old address, and a connection to a refused address never
exists. A connection is put back only when the answer was read to its end and
the server did not ask to close. A reused connection the server had already
closed (the request failed before any answer) is retried once on a new one.
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import math
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

from adapters.secrets import SecretNotFound, SecretStore
from adapters.targets.addresses import AddressPolicy
from adapters.targets.signing import signature_headers
from domain.delivery import EXCERPT_LIMIT_BYTES, Delivery, Outcome
from domain.errors import InvalidSchedule
from domain.targets import Target, WebhookTarget

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_MAX_REDIRECTS = 3
USER_AGENT = "duetime-webhook/1"
_FOLLOWED_REDIRECTS = frozenset({301, 302, 307, 308})
_TRANSIENT_STATUSES = frozenset({408, 429})

# host, port -> the IP addresses it resolves to
Resolver = Callable[[str, int], Sequence[str]]
Clock = Callable[[], datetime]


# Verdicts of the address policy a sender remembers (cleared when full).
_MAX_VERDICTS = 4096


@functools.lru_cache(maxsize=1024)
def _literal_address(host: str) -> str | None:
    """``host`` as an address in its normal form, or None if it is a name."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for ``host``, in its order
    (an address literal is its own answer: no lookup)."""
    literal = _literal_address(host)
    if literal is not None:
        return [literal]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """A ``Retry-After`` header as seconds from ``now``: delay-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


class _Refused(Exception):
    """The address or URL may not be called: a permanent failure."""


@dataclass(frozen=True)
class _Answer:
    status: int
    location: str | None
    retry_after: str | None
    body: bytes


class _Headers:
    """An answer's header fields, in order, looked up without regard to case:
    what ``http.client`` reads of its ``HTTPMessage`` (``get``, ``get_all``,
    ``items``), at a fraction of its cost (each lookup of an ``HTTPMessage``
    lower-cases every field it holds)."""

    __slots__ = ("_by_name", "_fields")

    def __init__(self) -> None:
        self._fields: list[tuple[str, str]] = []
        self._by_name: dict[str, list[str]] = {}

    def add(self, name: str, value: str) -> None:
        self._fields.append((name, value))
        self._by_name.setdefault(name.lower(), []).append(value)

    def get(self, name: str, failobj: Any = None) -> Any:
        values = self._by_name.get(name.lower())
        return values[0] if values else failobj

    def get_all(self, name: str, failobj: Any = None) -> Any:
        values = self._by_name.get(name.lower())
        return list(values) if values else failobj

    def __getitem__(self, name: str) -> str | None:
        values = self._by_name.get(name.lower())
        return values[0] if values else None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_name

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> list[str]:
        return [name for name, _ in self._fields]

    def values(self) -> list[str]:
        return [value for _, value in self._fields]

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)


def _parse_headers(fp: Any) -> _Headers:
    """The header block of an answer, as ``http.client.parse_headers`` reads it
    (the same limits, the same fields), without running the e-mail parser
    over it: that was about a third of a delivery's CPU time
    (bench/burst.py). A folded line continues the header before it; a line
    without a colon is left out, as the e-mail parser leaves it out."""
    message = _Headers()
    count = 0
    name: str | None = None
    value = ""
    while True:
        line = fp.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        count += 1
        if count > _MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            break
        text = line.decode("iso-8859-1")
        if text[:1] in (" ", "\t"):
            if name is not None:
                value += text.rstrip("\r\n")
            continue
        if name is not None:
            message.add(name, value)
        head, colon, rest = text.partition(":")
        if colon:
            name, value = head, rest.lstrip(" \t").rstrip("\r\n")
        else:
            name = None
    if name is not None:
        message.add(name, value)
    return message


_MAX_LINE = 65536  # http.client's limits
_MAX_HEADERS = 100


class _Response(http.client.HTTPResponse):
    """``http.client``'s response, reading its headers with ``_parse_headers``."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:  # a 100 Continue is skipped, headers and all
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            _parse_headers(self.fp)
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _parse_headers(self.fp)
        encoding = self.headers.get("transfer-encoding")
        self.chunked = bool(encoding and encoding.lower() == "chunked")
        self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:
                    self.length = None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to ``host`` that connects to one already checked address."""

    response_class = _Response

    def __init__(self, host: str, port: int, address: str, connect_timeout_s: float) -> None:
        super().__init__(host, port, timeout=connect_timeout_s)
        self.address = address
        self._connect_timeout_s = connect_timeout_s

    def connect(self) -> None:
        self.sock = socket.create_connection(
            (self.address, self.port), timeout=self._connect_timeout_s
        )
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTLSConnection(_PinnedConnection):
    """The same over TLS: SNI and certificate checks use the host name, not the address."""

    def __init__(
        self,
        host: str,
        port: int,
        address: str,
        connect_timeout_s: float,
        context: ssl.SSLContext,
    ) -> None:
        super().__init__(host, port, address, connect_timeout_s)
        self._context = context

    def connect(self) -> None:
        super().connect()
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)


# scheme, host name (lower case), port, the checked address connected to
PoolKey = tuple[str, str, int, str]
DEFAULT_MAX_IDLE_PER_KEY = 16
DEFAULT_IDLE_TIMEOUT_S = 30.0
# Failures of a reused connection that mean the server had closed it while idle:
# nothing was answered, so the request goes once more on a new connection.
_STALE = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
)


# One HTTP exchange: (url, headers, body, deadline on time.monotonic) -> the answer.
Exchange = Callable[[str, dict[str, str], bytes, float], _Answer]


class ConnectionPool:
    """Idle keep-alive connections, per ``PoolKey``; thread-safe.

    ``take`` hands out the most recently used idle connection of a key (never
    one idle longer than ``idle_timeout_s``, nor one the server has closed:
    its socket reads as ready), or None. ``give`` keeps a connection for
    reuse, up to ``max_idle_per_key`` per key; beyond that it is closed.
    """

    def __init__(
        self,
        *,
        max_idle_per_key: int = DEFAULT_MAX_IDLE_PER_KEY,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self.max_idle_per_key = max_idle_per_key
        self.idle_timeout_s = idle_timeout_s
        self._idle: dict[PoolKey, list[tuple[float, _PinnedConnection]]] = {}
        self._lock = threading.Lock()
        self._last_prune = time.monotonic()

    def take(self, key: PoolKey) -> _PinnedConnection | None:
        now = time.monotonic()
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    return None
                since, connection = idle.pop()
            if now - since <= self.idle_timeout_s and _still_open(connection):
                return connection
            connection.close()

    def give(self, key: PoolKey, connection: _PinnedConnection) -> None:
        now = time.monotonic()
        expired: list[_PinnedConnection] = []
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle_per_key:
                idle.append((now, connection))
            else:
                expired.append(connection)
            if now - self._last_prune > self.idle_timeout_s:
                self._last_prune = now
                expired += self._prune(now)
        for old in expired:
            old.close()

    def idle_count(self, key: PoolKey | None = None) -> int:
        with self._lock:
            if key is not None:
                return len(self._idle.get(key, ()))
            return sum(len(idle) for idle in self._idle.values())

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for _, connection in connections:
                connection.close()

    def _prune(self, now: float) -> list[_PinnedConnection]:
        """Remove every connection idle too long (the lock is held)."""
        expired: list[_PinnedConnection] = []
        for key in list(self._idle):
            keep = []
            for since, connection in self._idle[key]:
                if now - since <= self.idle_timeout_s:
                    keep.append((since, connection))
                else:
                    expired.append(connection)
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]
        return expired


def _still_open(connection: _PinnedConnection) -> bool:
    """An idle connection is usable while the server has sent nothing: a
    readable socket means it closed the connection (or sent garbage)."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class WebhookSender:
    """The ``webhook`` target adapter.

    ``address_policy`` decides which resolved addresses may be called;
    ``resolver``, ``clock`` and ``ssl_context`` are there for tests and for
    deployments with their own CA bundle. ``pool`` keeps connections alive
    between deliveries (one per sender by default; it is thread-safe, so the
    worker threads of a process share it). ``exchange`` replaces the HTTP
    exchange itself (resolve, connect, send, read the answer; the deployment
    simulator's receiver): everything around it (the secret, the signature,
    redirects, the outcome rules) runs as it does for real.
    """

    def __init__(
        self,
        secrets: SecretStore,
        address_policy: AddressPolicy | None = None,
        *,
        resolver: Resolver = system_resolver,
        clock: Clock | None = None,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        pool: ConnectionPool | None = None,
        exchange: Exchange | None = None,
    ) -> None:
        self.pool = pool or ConnectionPool()
        self._http: Exchange = exchange or self._post
        self._secrets = secrets
        self._policy = address_policy or AddressPolicy()
        self._resolve = resolver
        self._clock = clock or (lambda: datetime.now(UTC))
        self._ssl_context = ssl_context or ssl.create_default_context()
        self._connect_timeout_s = connect_timeout_s
        self._max_redirects = max_redirects
        self._verdicts: dict[str, str | None] = {}

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        if not isinstance(target, WebhookTarget):
            return Outcome.permanent(f"the webhook adapter cannot deliver to a {target.type}")
        try:
            secret = self._secrets.get(delivery.schedule_id)
        except SecretNotFound:
            return Outcome.permanent("no signing secret is stored for this schedule")
        except Exception as exc:  # the store is down or throttled: try again later
            return Outcome.transient(f"could not read the signing secret: {type(exc).__name__}")

        body = delivery.to_json_body()
        timestamp = int(self._clock().timestamp())
        own_headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "Idempotency-Key": delivery.idempotency_key,
            **signature_headers(secret, delivery.idempotency_key, timestamp, body),
        }
        budget_s = min(target.timeout_s, timeout_s)
        deadline = time.monotonic() + budget_s
        url = target.url
        custom_headers = target.headers

        for _hop in range(self._max_redirects + 1):
            try:
                answer = self._http(url, {**dict(custom_headers), **own_headers}, body, deadline)
            except _Refused as exc:
                return Outcome.permanent(str(exc))
            except TimeoutError:
                return Outcome.transient(f"timed out after {budget_s:g}s")
            except ssl.SSLCertVerificationError as exc:
                return Outcome.permanent(f"TLS certificate not accepted: {exc.verify_message}")
            except ssl.SSLError as exc:
                return Outcome.transient(f"TLS error: {exc.reason or exc}")
            except socket.gaierror as exc:
                return Outcome.transient(f"could not resolve the host: {exc.strerror or exc}")
            except (OSError, http.client.HTTPException) as exc:
                return Outcome.transient(f"connection failed: {type(exc).__name__}: {exc}")

            if answer.status in _FOLLOWED_REDIRECTS and answer.location:
                try:
                    next_url = _redirect_target(url, answer.location)
                except _Refused as exc:
                    return Outcome.permanent(str(exc), answer.status, answer.body)
                if _origin(next_url) != _origin(url):
                    custom_headers = ()  # credentials in them belong to the first origin
                url = next_url
                continue
            return self._outcome(answer)
        return Outcome.permanent(f"more than {self._max_redirects} redirects")

    def _refusal(self, address: str) -> str | None:
        """The policy's verdict on an address, remembered per address text
        (the policy is a frozen value, the verdict a function of the two):
        parsing and judging the address was a tenth of a delivery's CPU time
        (bench/burst.py). The name is still resolved on every delivery."""
        verdicts = self._verdicts
        if address in verdicts:
            return verdicts[address]
        reason = self._policy.refusal(address)
        if len(verdicts) >= _MAX_VERDICTS:
            verdicts.clear()
        verdicts[address] = reason
        return reason

    def _outcome(self, answer: _Answer) -> Outcome:
        status = answer.status
        if status == 202:
            return Outcome.accepted(status, answer.body)
        if 200 <= status < 300:
            return Outcome.succeeded(status, answer.body)
        if status in _TRANSIENT_STATUSES or 500 <= status < 600:
            return Outcome.transient(
                f"HTTP {status}",
                status,
                answer.body,
                parse_retry_after(answer.retry_after, self._clock()),
            )
        if 300 <= status < 400:
            return Outcome.permanent(f"HTTP {status}: redirect not followed", status, answer.body)
        return Outcome.permanent(f"HTTP {status}", status, answer.body)

    def _post(self, url: str, headers: dict[str, str], body: bytes, deadline: float) -> _Answer:
        parts = urlsplit(url)
        host = parts.hostname or ""
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)

        addresses = list(self._resolve(host, port))
        if not addresses:
            raise _Refused(f"{host} resolves to no address")
        for address in addresses:
            reason = self._refusal(address)
            if reason is not None:
                raise _Refused(f"refused to call {host}: {address} {reason}")

        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        scheme = "https" if https else "http"
        for address in addresses:
            key: PoolKey = (scheme, host.lower(), port, address)
            reused = self.pool.take(key)
            if reused is None:
                continue
            try:
                return self._exchange(reused, key, path, headers, body, deadline)
            except _STALE:
                break  # closed by the server while idle: once more, on a new connection
        connection = self._connect(host, port, https, addresses, deadline)
        key = (scheme, host.lower(), port, connection.address)
        return self._exchange(connection, key, path, headers, body, deadline)

    def _exchange(
        self,
        connection: _PinnedConnection,
        key: PoolKey,
        path: str,
        headers: dict[str, str],
        body: bytes,
        deadline: float,
    ) -> _Answer:
        """One request and its answer; the connection goes back to the pool if
        the answer was read to its end and the server keeps it open."""
        keep = False
        response: http.client.HTTPResponse | None = None
        try:
            if connection.sock is None:
                connection.connect()
            sock = connection.sock
            assert sock is not None
            _set_timeout(connection, deadline)
            sock.sendall(request_block(connection, path, headers, body))
            _set_timeout(connection, deadline)
            response = connection.response_class(sock, method="POST")
            response.begin()
            _set_timeout(connection, deadline)
            content = response.read(EXCERPT_LIMIT_BYTES)
            # Read to its end (a longer body is not drained: the connection is closed).
            keep = not response.will_close and (response.isclosed() or not response.read(1))
            return _Answer(
                status=response.status,
                location=response.getheader("Location"),
                retry_after=response.getheader("Retry-After"),
                body=content,
            )
        finally:
            if keep and response is not None and response.isclosed():
                self.pool.give(key, connection)
            else:
                if response is not None:
                    response.close()
                connection.close()

    def close(self) -> None:
        """Close every idle connection."""
        self.pool.close()

    def _connect(
        self, host: str, port: int, https: bool, addresses: list[str], deadline: float
    ) -> _PinnedConnection:
        """A connection to the first checked address that accepts one."""
        failure: OSError | None = None
        for address in addresses:
            connect_timeout_s = min(self._connect_timeout_s, _remaining(deadline))
            connection: _PinnedConnection
            if https:
                connection = _PinnedTLSConnection(
                    host, port, address, connect_timeout_s, self._ssl_context
                )
            else:
                connection = _PinnedConnection(host, port, address, connect_timeout_s)
            try:
                connection.connect()
            except ssl.SSLError:
                connection.close()
                raise
            except OSError as exc:
                connection.close()
                failure = exc
                continue
            return connection
        assert failure is not None
        raise failure


# http.client's own checks of a request line's target and of header names and values.
_BAD_PATH_CHAR = re.compile("[\x00-\x20\x7f]")
_LEGAL_HEADER_NAME = re.compile(rb"[^:\s][^:\r\n]*").fullmatch
_ILLEGAL_HEADER_VALUE = re.compile(rb"\n(?![ \t])|\r(?![ \t\n])").search


def request_block(
    connection: http.client.HTTPConnection, path: str, headers: dict[str, str], body: bytes
) -> bytes:
    """A POST of ``body`` with ``headers``, byte for byte as ``connection.request``
    writes it (request line, ``Host``, ``Accept-Encoding: identity``,
    ``Content-Length``, then ``headers`` in order), with the same refusals, as
    one block sent in one call: http.client checks and encodes each header in a
    call of its own and sends the head and the body apart, about a tenth of a
    delivery's CPU time (bench/burst.py)."""
    if _BAD_PATH_CHAR.search(path):
        raise http.client.InvalidURL(
            f"URL can't contain control characters. {path!r} "
            f"(found at least {_BAD_PATH_CHAR.search(path).group()!r})"  # type: ignore[union-attr]
        )
    names = {name.lower() for name in headers}
    lines = [f"POST {path} HTTP/1.1".encode("ascii")]
    if "host" not in names:
        host = connection.host
        try:
            host_bytes = host.encode("ascii")
        except UnicodeEncodeError:
            host_bytes = host.encode("idna")
        if ":" in host:  # an IPv6 address, bracketed, without its zone
            host_bytes, zone, _ = (b"[" + host_bytes + b"]").partition(b"%")
            if zone:
                host_bytes += b"]"
        if connection.port != connection.default_port:
            host_bytes += b":" + str(connection.port).encode("ascii")
        lines.append(b"Host: " + host_bytes)
    if "accept-encoding" not in names:
        lines.append(b"Accept-Encoding: identity")
    if "content-length" not in names and "transfer-encoding" not in names:
        lines.append(b"Content-Length: " + str(len(body)).encode("ascii"))
    for name, value in headers.items():
        name_bytes = name.encode("ascii")
        if not _LEGAL_HEADER_NAME(name_bytes):
            raise ValueError(f"Invalid header name {name_bytes!r}")
        value_bytes = value.encode("latin-1")
        if _ILLEGAL_HEADER_VALUE(value_bytes):
            raise ValueError(f"Invalid header value {value_bytes!r}")
        lines.append(name_bytes + b": " + value_bytes)
    lines.append(b"")
    lines.append(body)
    return b"\r\n".join(lines)


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


def _set_timeout(connection: http.client.HTTPConnection, deadline: float) -> None:
    if connection.sock is not None:
        connection.sock.settimeout(_remaining(deadline))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _redirect_target(current: str, location: str) -> str:
    """The absolute URL a redirect points to, if duetime may follow it."""
    next_url = urljoin(current, location.strip())
    try:
        WebhookTarget(next_url)  # the same rules as a configured URL
    except InvalidSchedule as exc:
        raise _Refused(f"redirect to an invalid URL: {exc.reason}") from None
    if urlsplit(current).scheme == "https" and urlsplit(next_url).scheme != "https":
        raise _Refused("redirect from https to http refused")
    return next_url
