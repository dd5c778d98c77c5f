"""What the benchmarks on moto need before any client is built: dummy
credentials, a fixed region, no endpoint of a real or emulated service."""

from __future__ import annotations

import os

DUMMY_AWS_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}


def use_dummy_aws_env() -> None:
    os.environ.update(DUMMY_AWS_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
