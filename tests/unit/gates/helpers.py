"""Shared helpers for gate tests: a request at a fixed scaled time."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest

NOW = 1_700_000_000.0


def make_request(labels: dict[str, str] | None = None, **metadata: str) -> GateRequest:
    """A request whose deadline is a minute away and claim lease 30 s."""
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30, metadata=metadata, labels=labels or {})
