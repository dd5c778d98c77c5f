"""How a webhook delivery is signed, by the Standard Webhooks convention.

Every attempt carries (https://www.standardwebhooks.com/):

    webhook-id: <the occurrence's idempotency key>
    webhook-timestamp: <unix seconds>
    webhook-signature: v1,<base64 HMAC-SHA256(key, b"<id>.<timestamp>." + body)>

so a receiver verifies the message id, the time and the body together with any
Standard Webhooks library (``Webhook(secret).verify(body, headers)``), and a
copy replayed under another id does not verify.

Beside them, for one release, the signature of earlier releases:

    Duetime-Timestamp: <unix seconds>
    Duetime-Signature: v1=<hex HMAC-SHA256(key, b"<timestamp>." + body)>

One key signs both. A schedule's secret is stored as duetime has always made
it (43 URL-safe characters); its HMAC key is that text's UTF-8 bytes, as the
``Duetime-Signature`` has always used them. Users are shown it in the
convention's form, ``whsec_`` and the standard base64 of the key
(``shown_secret``), which a Standard Webhooks library decodes back to the same
key: so no stored secret changes, a receiver already verifying
``Duetime-Signature`` with the old text keeps working, and the old text is
the base64-decoded part of the ``whsec_`` form.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Final

SECRET_PREFIX: Final = "whsec_"
STANDARD_VERSION: Final = "v1"
LEGACY_VERSION: Final = "v1"
# The headers a delivery's signature takes; a target may not set them itself.
SIGNATURE_HEADERS: Final = (
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "Duetime-Timestamp",
    "Duetime-Signature",
)


def signing_key(secret: str) -> bytes:
    """The HMAC key of a stored secret: its UTF-8 bytes."""
    return secret.encode("utf-8")


def shown_secret(secret: str) -> str:
    """A stored secret as users are given it: ``whsec_`` + base64 of its key."""
    return SECRET_PREFIX + base64.b64encode(signing_key(secret)).decode("ascii")


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` and the base64 HMAC-SHA256 of
    ``b"<message_id>.<timestamp>." + body``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    mac = hmac.new(signing_key(secret), signed, hashlib.sha256).digest()
    return f"{STANDARD_VERSION},{base64.b64encode(mac).decode('ascii')}"


def legacy_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Duetime-Signature`` value of earlier releases: ``v1=`` and the hex
    HMAC-SHA256 of ``b"<timestamp>." + body``."""
    mac = hmac.new(signing_key(secret), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{LEGACY_VERSION}={mac.hexdigest()}"


def signature_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Every signature header of one attempt (``SIGNATURE_HEADERS``)."""
    stamp = str(timestamp)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": stamp,
        "webhook-signature": standard_signature(secret, message_id, timestamp, body),
        "Duetime-Timestamp": stamp,
        "Duetime-Signature": legacy_signature(secret, timestamp, body),
    }
