"""Target adapters: webhook, SQS, Lambda and EventBridge behind one ``Targets`` port."""

from adapters.targets.addresses import AddressPolicy
from adapters.targets.aws import EventBridgeSender, LambdaInvoker, SqsSender, client_config
from adapters.targets.dispatch import Targets
from adapters.targets.signing import signature_headers
from adapters.targets.webhook import WebhookSender, parse_retry_after

__all__ = [
    "AddressPolicy",
    "EventBridgeSender",
    "LambdaInvoker",
    "SqsSender",
    "Targets",
    "WebhookSender",
    "client_config",
    "parse_retry_after",
    "signature_headers",
]
