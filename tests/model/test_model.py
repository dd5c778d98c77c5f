"""The model-based campaign, bounded for CI: the machine in ``machine.py`` over
SQLite and over DynamoDB + SQS on moto. ``make soak-model`` runs it for many
more examples (``bench/model_soak.py``).

DUETIME_MODEL_EXAMPLES scales the SQLite run (the moto run stays at a fifth of it).
DynamoDB's secondary indexes lag their tables in the campaign
(DUETIME_MODEL_INDEX_LAG=0 turns that off, to compare).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.model.backends import MotoBackend, SqliteBackend
from tests.model.machine import DuetimeMachine

_EXAMPLES = int(os.environ.get("DUETIME_MODEL_EXAMPLES", "25"))
_INDEX_LAG = os.environ.get("DUETIME_MODEL_INDEX_LAG", "1") != "0"


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=True,
    )


class SqliteMachine(DuetimeMachine):
    make_backend = SqliteBackend


class DynamoMachine(DuetimeMachine):
    make_backend = MotoBackend
    index_lag = _INDEX_LAG


TestServiceOnSqliteKeepsItsPromises = SqliteMachine.TestCase
TestServiceOnSqliteKeepsItsPromises.settings = _settings(_EXAMPLES, 30)

TestServiceOnDynamoDbKeepsItsPromises = DynamoMachine.TestCase
TestServiceOnDynamoDbKeepsItsPromises.settings = _settings(max(1, _EXAMPLES // 5), 20)
