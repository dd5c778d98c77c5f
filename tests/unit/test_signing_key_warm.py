"""The signing key is read once in a container's init phase and shared by the
secret store and the header seal, so the first webhook a new worker container
signs does not wait for Secrets Manager (and its threads do not each read it)."""

from __future__ import annotations

from typing import Any

from adapters.sealing import aws_header_seal
from adapters.secrets import DYNAMODB, SigningKey, aws_secret_store


class CountingSecrets:
    def __init__(self, *, fails: bool = False) -> None:
        self.reads = 0
        self.fails = fails

    def get_secret_value(self, SecretId: str) -> dict[str, Any]:
        self.reads += 1
        if self.fails:
            raise RuntimeError("AccessDenied")
        return {"SecretString": "k" * 64}


def test_a_warm_key_is_read_once_and_then_served_from_memory() -> None:
    secrets = CountingSecrets()
    key = SigningKey(secrets, "duetime/signing-key")
    assert key.warm()
    assert secrets.reads == 1
    assert key() == b"k" * 64
    assert key() == b"k" * 64
    assert secrets.reads == 1


def test_a_key_that_cannot_be_read_at_init_does_not_fail_the_init() -> None:
    secrets = CountingSecrets(fails=True)
    key = SigningKey(secrets, "duetime/signing-key")
    assert key.warm() is False
    secrets.fails = False
    assert key() == b"k" * 64  # the first use reads it again
    assert secrets.reads == 2


def test_the_secret_store_and_the_seal_share_the_key_they_are_given() -> None:
    secrets = CountingSecrets()
    key = SigningKey(secrets, "duetime/signing-key")
    key.warm()

    def client(service: str) -> Any:
        return secrets if service == "secretsmanager" else object()

    store = aws_secret_store(DYNAMODB, "/duetime", client, table="secrets", master=key)
    seal = aws_header_seal(DYNAMODB, "/duetime", client, master=key)
    assert seal is not None
    sealed = seal.seal("s1", 1, {"Authorization": "Bearer x"})
    assert seal.open("s1", 1, sealed) == {"Authorization": "Bearer x"}
    assert store is not None
    assert secrets.reads == 1  # the seal used the key read at init
