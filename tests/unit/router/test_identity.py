"""Objective, fairness id, TTL and SLO from a request's headers."""

from __future__ import annotations

from sluiceway.router.identity import header_map, read_identity


def test_newer_objective_spelling_wins_and_defaults() -> None:
    both = {"x-llm-d-inference-objective": "new", "x-gateway-inference-objective": "old"}
    assert read_identity(both).objective == "new"
    assert read_identity({"x-gateway-inference-objective": "old"}).objective == "old"
    empty = read_identity({})
    assert (empty.objective, empty.fairness_id, empty.ttl) == (None, "default-flow", None)


def test_fairness_ttl_and_slo() -> None:
    found = read_identity(
        {
            "x-gateway-inference-fairness-id": "team",
            "x-llm-d-inference-ttl": "1m30s",
            "x-slo-ttft-ms": "250",
        }
    )
    assert (found.fairness_id, found.ttl, found.slo_ttft_ms) == ("team", 90.0, 250)
    assert read_identity({"x-llm-d-inference-ttl": "soon"}).ttl is None


def test_header_map_lower_case_raw() -> None:
    assert header_map([(b"a", b"1"), (b"b", b"2")]) == {"a": "1", "b": "2"}
