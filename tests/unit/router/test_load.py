"""The router's own view of endpoint load: its in-flight requests as the queue, always fresh."""

from __future__ import annotations

from sluiceway.router.load import EndpointLoad, InFlightLoad


def test_in_flight_is_the_routers_own_view() -> None:
    found = InFlightLoad().load("u", 4, 10.0)
    assert found == EndpointLoad(4, 0.0, 10.0)
    assert found.requests is None  # the pool's own in-flight count stands for it
