"""The one place the Powertools logger, metrics and tracer are built.

Built lazily: nothing here reads the environment at import time beyond what
Powertools itself reads when an object is first created.
"""

from __future__ import annotations

from functools import lru_cache

from aws_lambda_powertools import Logger, Metrics, Tracer

from adapters.definitions import METRICS_NAMESPACE, SERVICE_NAME


@lru_cache(maxsize=1)
def logger() -> Logger:
    return Logger(service=SERVICE_NAME)


@lru_cache(maxsize=1)
def metrics() -> Metrics:
    return Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)


@lru_cache(maxsize=1)
def tracer() -> Tracer:
    return Tracer(service=SERVICE_NAME)
