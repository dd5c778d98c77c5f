"""The ``routes`` scenario calls every operation of docs/openapi.json, under the API's role.

The document is read when the test runs: an operation added to the API fails
the coverage test until the scenario calls it.
"""

from __future__ import annotations

from typing import Any

from sim.routes import documented_operations


def test_every_operation_of_the_openapi_document_is_called(routes: dict[str, Any]) -> None:
    called = {c["operation"] for c in routes["route_calls"]}
    assert sorted(documented_operations() - called) == []
    assert routes["operations_not_called"] == []


def test_a_route_the_document_lacks_may_only_be_missing(routes: dict[str, Any]) -> None:
    documented = documented_operations()
    for call in routes["route_calls"]:
        if call["operation"] in documented:
            continue
        # An operation still being added (cancel): tolerated only as a missing route.
        assert call["status"] == 404, call
        assert call["answer"]["error"]["code"] == "no_route", call
        assert call["operation"] in routes["route_missing"]


def test_every_documented_call_is_a_valid_request(routes: dict[str, Any]) -> None:
    """No 4xx: each request is one the API should carry out (5xx are the next test's)."""
    refused = [c for c in routes["route_calls"] if c["documented"] and 400 <= c["status"] < 500]
    assert refused == []


def test_the_routes_report_lists_5xx_and_denied_calls(routes: dict[str, Any]) -> None:
    assert routes["route_errors"] == [c for c in routes["route_calls"] if c["status"] >= 500]
    assert isinstance(routes["denied_calls"], list)


def test_every_route_runs_under_its_role_without_a_denied_call_or_a_5xx(
    routes: dict[str, Any],
) -> None:
    assert routes["denied_calls"] == []
    assert routes["route_errors"] == []
