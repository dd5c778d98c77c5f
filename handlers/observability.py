"""The one place the Powertools logger and metrics are built.

No tracer: the functions do not enable X-Ray, and the X-Ray SDK is not a
dependency; structured logs carry the occurrence id through every step.

Built lazily: nothing here reads the environment at import time beyond what
Powertools itself reads when an object is first created.
"""

from __future__ import annotations

import io
import os
import sys
from functools import lru_cache
from typing import IO, cast

from aws_lambda_powertools import Logger, Metrics

from adapters.definitions import METRICS_NAMESPACE, SERVICE_NAME


class _Stdout(io.TextIOBase):
    """Standard output as it is at each write, not as it was when the logger was built
    (a local stack or a test may swap ``sys.stdout`` after the first log line)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def service_name() -> str:
    """The ``service`` dimension of every metric and the service of every log
    line: the deployment's stack name, which the stack passes as
    POWERTOOLS_SERVICE_NAME, so two stacks in one account keep their metrics
    apart; SERVICE_NAME when unset (the local stack)."""
    return os.environ.get("POWERTOOLS_SERVICE_NAME") or SERVICE_NAME


@lru_cache(maxsize=1)
def logger() -> Logger:
    return Logger(service=service_name(), stream=cast(IO[str], _Stdout()))


@lru_cache(maxsize=1)
def metrics() -> Metrics:
    return Metrics(namespace=METRICS_NAMESPACE, service=service_name())
