"""One ``TargetPort`` for every kind of target: picks the adapter by the target's type.

The service layer holds a ``Targets`` and calls ``deliver``; it never looks at
what kind of target it has. Adding a kind of target is a domain value, an
adapter, and one more entry here: no service code changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.secrets import SecretStore
from adapters.targets.addresses import AddressPolicy
from adapters.targets.aws import EventBridgeSender, LambdaInvoker, SqsSender
from adapters.targets.webhook import Exchange, WebhookSender
from domain.delivery import Delivery, Outcome, TargetPort
from domain.targets import Target


class Targets:
    """Delivers to any target through the adapter registered for its type.

    ``adapters`` maps a target type (``"webhook"``, ``"sqs"``, ...) to its
    adapter. A target whose type has no adapter fails permanently; an adapter
    that raises (a bug, not an answer) gives a transient outcome, so the run is
    retried and then fails with the error recorded instead of crashing the worker.
    """

    def __init__(self, adapters: Mapping[str, TargetPort]) -> None:
        self._adapters = dict(adapters)

    @classmethod
    def build(
        cls,
        *,
        webhook: TargetPort | None = None,
        sqs_client: Any = None,
        lambda_client: Any = None,
        events_client: Any = None,
        command: TargetPort | None = None,
    ) -> Targets:
        """The usual set: the webhook adapter as given, one adapter per AWS
        client given, and the command runner of a jobs file (one machine). A
        kind left out cannot be delivered to."""
        adapters: dict[str, TargetPort] = {}
        if webhook is not None:
            adapters["webhook"] = webhook
        if command is not None:
            adapters["command"] = command
        if sqs_client is not None:
            adapters["sqs"] = SqsSender(sqs_client)
        if lambda_client is not None:
            adapters["lambda"] = LambdaInvoker(lambda_client)
        if events_client is not None:
            adapters["eventbridge"] = EventBridgeSender(events_client)
        return cls(adapters)

    @classmethod
    def for_deployment(
        cls,
        secrets: SecretStore,
        address_policy: AddressPolicy,
        *,
        sqs_client: Any,
        lambda_client: Any,
        events_client: Any,
        webhook_exchange: Exchange | None = None,
    ) -> Targets:
        """Every kind of target, the webhook signing with ``secrets`` (and its HTTP
        exchange replaced by ``webhook_exchange`` when given: the deployment simulator)."""
        return cls.build(
            webhook=WebhookSender(secrets, address_policy, exchange=webhook_exchange),
            sqs_client=sqs_client,
            lambda_client=lambda_client,
            events_client=events_client,
        )

    @property
    def types(self) -> frozenset[str]:
        """The target types this instance can deliver to."""
        return frozenset(self._adapters)

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        adapter = self._adapters.get(target.type)
        if adapter is None:
            return Outcome.permanent(f"{target.type} targets are not enabled in this deployment")
        try:
            return adapter.deliver(target, delivery, timeout_s=timeout_s)
        except Exception as exc:  # an adapter bug must not take the worker down
            return Outcome.transient(f"{target.type} adapter failed: {type(exc).__name__}: {exc}")
