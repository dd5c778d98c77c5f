"""Handlers the Lambda model's tests deploy in a template of their own (test_lambda_model.py)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.exceptions import ClientError


def invoker(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Invoke ``event["target"]`` asynchronously with ``event["payload"]``; the answer."""
    client = boto3.client("lambda")
    try:
        answer = client.invoke(
            FunctionName=event["target"],
            InvocationType=event.get("type", "Event"),
            Payload=json.dumps(event["payload"]).encode(),
        )
    except ClientError as error:
        return {"error": error.response["Error"]["Code"], "at": time.time()}
    return {
        "status": answer["StatusCode"],
        "payload": answer["Payload"].read().decode(),
        "at": time.time(),
    }


def target(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Wait ``event["sleep_s"]`` (a busy invocation), then answer the event it was given."""
    time.sleep(float(event.get("sleep_s", 0)))
    return {"event": event, "at": time.time()}


def requester(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One AWS request on each of ``event["strands"]`` threads; when each answered,
    in seconds after the handler began."""
    began = time.time()
    client = boto3.client("sts")

    def one(_: int) -> float:
        client.get_caller_identity()
        return time.time() - began

    pool = ThreadPoolExecutor(max_workers=int(event.get("strands", 1)))
    futures = [pool.submit(one, i) for i in range(int(event.get("strands", 1)))]
    done = [f.result() for f in futures]
    pool.shutdown()
    return {"answered_s": done}
