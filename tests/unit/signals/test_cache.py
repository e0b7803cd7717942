"""The TTL cache answers the same reading (errors too) until the TTL passes."""

from __future__ import annotations

from sluiceway.clock import VirtualClock
from sluiceway.signals.cache import CachedSource

from .fakes import SetSource


async def test_reads_through_once_per_ttl() -> None:
    clock, inner = VirtualClock(), SetSource(0.5)
    cached = CachedSource(inner, ttl=5.0, clock=clock)
    assert (await cached.read()).value == 0.5
    inner.value = 0.1
    clock.advance(4.9)
    assert (await cached.read()).value == 0.5 and inner.reads == 1
    clock.advance(0.1)
    assert (await cached.read()).value == 0.1 and inner.reads == 2
    assert cached.key == inner.key


async def test_errors_are_cached_and_ttl_zero_reads_through() -> None:
    clock, inner = VirtualClock(), SetSource(error="down")
    cached = CachedSource(inner, ttl=1.0, clock=clock)
    assert (await cached.read()).error == "down"
    inner.error = ""
    inner.value = 1.0
    assert (await cached.read()).error == "down"
    through = CachedSource(inner, ttl=0.0, clock=clock)
    await through.read()
    await through.read()
    assert inner.reads == 3
    await through.aclose()
    assert inner.closed
