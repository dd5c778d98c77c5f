"""The API's use cases, over the local stack's SQLite file when given its
directory (``bootstrap.local``), else over DynamoDB (``bootstrap.aws``).

Each builder is imported when called, so a Lambda function loads only its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from adapters.secrets import SecretStore
from adapters.targets.addresses import AddressPolicy
from bootstrap.parts import ApiServices
from bootstrap.settings import Settings
from service.ports import Clock
from service.schedules import TargetSupport

# The directory of the local stack's SQLite file, for the API handler run outside it.
ENV_DATA_DIR: Final = "DUETIME_DATA_DIR"


def build_services(
    settings: Settings,
    *,
    data_dir: str | Path | None = None,
    clock: Clock | None = None,
    secrets: SecretStore | None = None,
    target_support: TargetSupport | None = None,
    address_policy: AddressPolicy | None = None,
) -> ApiServices:
    """The API's use cases over SQLite (with ``data_dir``: the local stack,
    ``bootstrap.local``) or DynamoDB (without: ``bootstrap.aws``)."""
    if data_dir is not None:
        from bootstrap.local import build_sqlite_services

        return build_sqlite_services(
            settings,
            data_dir,
            clock=clock,
            secrets=secrets,
            target_support=target_support,
            address_policy=address_policy,
        )
    from bootstrap.aws import build_aws_services

    return build_aws_services(
        settings,
        clock=clock,
        secrets=secrets,
        target_support=target_support,
        address_policy=address_policy,
    )
