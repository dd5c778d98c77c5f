"""Webhook header values sealed at rest, under a key only the API and the worker hold.

A webhook target's own headers are where a receiver's credentials go
(``Authorization: Bearer ...``). On DynamoDB, with the ``dynamodb`` secret
store, their values are not written into a schedule version's body: the
body keeps the header names, each with an empty value, and the values are
sealed together in the version item's ``sealed_headers`` attribute with
AES-256-GCM (the ``cryptography`` package). The key is derived from the
stack's signing key (``adapters.secrets.SigningKey``), which only the API
and worker roles may read; the item's schedule id and version are the
associated data, so a sealed value copied onto another version does not
open. The tick and the watchdog, which read versions to plan and judge,
never hold the key and see the names only; the worker opens the values at
delivery, and the API opens them to keep a value an edit leaves unchanged.

The sealed text is ``v1.`` and the URL-safe base64 of a 12-byte random
nonce followed by the ciphertext and its tag; the plaintext is the JSON
object of the headers, names to values.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from domain.errors import DuetimeError

if TYPE_CHECKING:
    from adapters.secrets import SigningKey

VERSION: Final = "v1"
# What the sealing key is derived for: the signing key also derives every
# schedule's signing secret (``<schedule id>:<generation>``), which never
# contains a space.
_PURPOSE: Final = b"duetime webhook header values v1"
_NONCE_BYTES: Final = 12


def aws_header_seal(
    kind: str, prefix: str, client: Callable[[str], Any], *, master: SigningKey | None = None
) -> HeaderSeal | None:
    """The seal of a deployment whose secret store is ``kind``: with ``dynamodb``
    (the stack's default, which has the signing key), one over that key
    (``master``, when the container shares one with its secret store); with
    another store, none (header values stay in the version body).
    ``client`` builds a boto3 client by service name."""
    from adapters.secrets import DYNAMODB, SigningKey, signing_key_name

    if kind != DYNAMODB:
        return None
    return HeaderSeal(master or SigningKey(client("secretsmanager"), signing_key_name(prefix)))


class CannotOpen(DuetimeError):
    """Sealed header values that this key does not open (another key, or altered)."""


class HeaderSeal:
    """Seals and opens a version's header values; ``master`` answers the signing key."""

    def __init__(self, master: Callable[[], bytes]) -> None:
        self._master = master
        self._cipher: tuple[bytes, AESGCM] | None = None
        self._lock = threading.Lock()

    def _aead(self) -> AESGCM:
        master = self._master()
        with self._lock:
            if self._cipher is None or self._cipher[0] != master:
                key = hmac.new(master, _PURPOSE, hashlib.sha256).digest()
                self._cipher = (master, AESGCM(key))
            return self._cipher[1]

    @staticmethod
    def _associated(schedule_id: str, version: int) -> bytes:
        return f"{schedule_id}:{version}".encode()

    def seal(self, schedule_id: str, version: int, headers: Mapping[str, str]) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        plain = json.dumps(dict(headers)).encode()
        sealed = self._aead().encrypt(nonce, plain, self._associated(schedule_id, version))
        return f"{VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode('ascii')}"

    def open(self, schedule_id: str, version: int, text: str) -> dict[str, str]:
        prefix, _, encoded = text.partition(".")
        if prefix != VERSION:
            raise CannotOpen(f"sealed header values of {schedule_id} v{version}: not {VERSION}")
        raw = base64.urlsafe_b64decode(encoded)
        try:
            plain = self._aead().decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], self._associated(schedule_id, version)
            )
        except InvalidTag:
            raise CannotOpen(
                f"sealed header values of {schedule_id} v{version} do not open with this key"
            ) from None
        headers = json.loads(plain)
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise CannotOpen(f"sealed header values of {schedule_id} v{version}: not an object")
        return headers
