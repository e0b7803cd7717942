"""One refresher per source: reads once per period while subscribed, tells subscribers of
changes only, and stops when the last subscriber leaves."""

from __future__ import annotations

import asyncio

from sluiceway.clock import VirtualClock
from sluiceway.signals.refresher import Refresher, SignalHub
from sluiceway.signals.settings import PrometheusSettings

from .fakes import SetSource


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_reads_once_per_period_and_wakes_on_change_only() -> None:
    clock, source = VirtualClock(), SetSource(0.5)
    refresher = Refresher(source, period=2.0, clock=clock)
    wakes: list[int] = []
    unsubscribe = refresher.subscribe(lambda: wakes.append(1))
    assert (await refresher.latest()).value == 0.5
    assert source.reads == 1 and len(wakes) == 1  # the first reading is a change
    clock.advance(2.0)
    await _settle()
    assert source.reads == 2 and len(wakes) == 1  # same value: nobody is woken
    source.value = 0.0
    clock.advance(2.0)
    await _settle()
    assert (await refresher.latest()).value == 0.0 and len(wakes) == 2
    source.error = "down"
    clock.advance(2.0)
    await _settle()
    assert not (await refresher.latest()).available and len(wakes) == 3
    unsubscribe()
    clock.advance(10.0)
    await _settle()
    assert source.reads == 4  # stopped with its last subscriber
    await refresher.aclose()


async def test_zero_period_means_one_second() -> None:
    refresher = Refresher(SetSource(1.0), period=0, clock=VirtualClock())
    assert refresher.period == 1.0


async def test_hub_shares_one_refresher_per_source_key() -> None:
    clock = VirtualClock()
    hub = SignalHub(clock, PrometheusSettings(url="http://127.0.0.1:9", cache_ttl=3))
    a = hub.refresher(hub.promql("up"))
    b = hub.refresher(hub.promql("up"))
    c = hub.refresher(hub.promql("down"))
    assert a is b and a is not c and a.period == 3
    assert len(hub.refreshers) == 2
    await hub.aclose()
    assert not hub.refreshers


async def test_sixteen_subscribers_cost_one_read_per_period() -> None:
    clock, source = VirtualClock(), SetSource(0.5)
    refresher = Refresher(source, period=1.0, clock=clock)
    for _ in range(16):
        refresher.subscribe(lambda: None)
    await asyncio.gather(*(refresher.latest() for _ in range(16)))
    for _ in range(5):
        clock.advance(1.0)
        await _settle()
    assert source.reads == 6 and refresher.reads == 6
    await refresher.aclose()
