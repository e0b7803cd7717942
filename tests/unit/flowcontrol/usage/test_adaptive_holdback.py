"""adaptive-holdback on a synthetic pool in virtual time: C = 10 slots, fixed service time T,
a Poisson realtime source at rate r and an always-backlogged async band."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol import BandSettings, FlowController, FlowControlSettings, Request
from sluiceway.flowcontrol.base import LimitInput
from sluiceway.flowcontrol.usage import AdaptiveHoldback

from ..pool import SyntheticPool

C, T = 10, 1.0
WINDOW = 20 * T
RT, ASYNC = 100, -5


class Harness:
    def __init__(self, seed: int = 7) -> None:
        self.policy = AdaptiveHoldback(window=WINDOW, buckets=10)
        settings = FlowControlSettings(
            bands=(BandSettings(RT), BandSettings(ASYNC)),
            usage_limit=self.policy,
            default_ttl=0.0,
        )
        self.pool = SyntheticPool(FlowController(settings), slots=C, service=lambda r: T)
        self.rng = random.Random(seed)
        self.ids = itertools.count()
        self.samples: list[tuple[float, float]] = []  # (time, demand kept for realtime)

    def realtime(self, start: float, end: float, rate: float) -> None:
        t = start
        while rate > 0:
            t += self.rng.expovariate(rate)
            if t >= end:
                break
            self.pool.at(t, "arrive")

    def run(self, end: float, step: float = 0.25 * T) -> None:
        def arrive(now: float) -> None:
            self.pool.submit(Request(f"rt{next(self.ids)}", "rt", RT))

        while self.pool.now < end:
            band = self.pool.controller.band(ASYNC)
            while band is not None and band.queued < 3 * C:
                self.pool.submit(Request(f"a{next(self.ids)}", "batch", ASYNC))
            self.pool.run_until(min(end, self.pool.now + step), arrive)
            self.samples.append((self.pool.now, self.policy.headroom(RT)))

    def async_share(self, start: float, end: float) -> float:
        busy = 0.0
        for rec in self.pool.records.values():
            if rec.request.priority != ASYNC or rec.started is None:
                continue
            stop = end if rec.ended is None else min(rec.ended, end)
            busy += max(0.0, stop - max(rec.started, start))
        return busy / (C * (end - start))

    def realtime_waits(self, since: float) -> list[float]:
        recs = self.pool.records.values()
        return sorted(
            r.started - r.arrived
            for r in recs
            if r.request.priority == RT and r.started is not None and r.arrived >= since
        )


def p90(values: list[float]) -> float:
    return values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]


def test_without_realtime_async_takes_the_whole_pool() -> None:
    h = Harness()
    h.run(30 * T)
    assert h.async_share(2 * T, 30 * T) >= 0.95


@pytest.mark.parametrize("seed", [7, 3])
@pytest.mark.parametrize("rate", [1.0, 3.0])
def test_headroom_follows_realtime_demand(rate: float, seed: int) -> None:
    h = Harness(seed)
    h.run(10 * T)  # async alone first
    assert h.policy.headroom(RT) == 0
    start, end = 10 * T, 10 * T + 8 * WINDOW
    h.realtime(start, end, rate / T)
    h.run(end)
    kept = [d for t, d in h.samples if t >= start + WINDOW]
    demand = rate * T  # Little: realtime concurrency = r x T
    target = demand + math.sqrt(demand) + 1.0  # safety 1, margin 1
    waits = h.realtime_waits(since=start + WINDOW)
    share = h.async_share(start + WINDOW, end)
    print(
        f"r={rate}/T: headroom {min(kept):.2f}..{max(kept):.2f} slots (target {target:.2f}); "
        f"realtime wait p90 {p90(waits):.3f} T, max {waits[-1]:.3f} T over {len(waits)}; "
        f"async share {share:.2f}"
    )
    # Converged within one window: from then on the headroom sits at the demand's target ...
    assert abs(sum(kept) / len(kept) - target) <= 0.5
    assert all(abs(k - target) <= 1.5 for k in kept)
    # ... the rest of the pool goes to async, and realtime barely waits.
    assert share >= 1 - (target + 1) / C - demand / C
    assert p90(waits) <= 0.1 * T
    # Realtime leaves: within one window the headroom is gone and async refills the pool.
    h.run(end + 1.1 * WINDOW)
    assert h.policy.headroom(RT) == 0
    h.run(end + 3 * WINDOW)
    assert h.async_share(end + 1.5 * WINDOW, end + 3 * WINDOW) >= 0.95


def test_ceilings_are_monotone_and_only_below_active_bands() -> None:
    class B:
        def __init__(self, p: int, q: int, i: int) -> None:
            self.priority, self.queued, self.inflight = p, q, i

    policy = AdaptiveHoldback(window=10.0, buckets=5, safety=0.0, margin=1.0)
    bands = [B(100, 0, 4), B(50, 0, 0), B(0, 5, 2), B(-5, 9, 1)]
    got = list(policy.ceilings(LimitInput(0.0, 0.6, bands, 0.1)))
    assert got == [1.0, 1.0, 1.0, 1.0]  # no history yet: no demand measured
    bands[0].inflight = 2  # 100 averaged 4 over [0, 2]; now uses 2: reserve 4 + 1 - 2
    got = list(policy.ceilings(LimitInput(2.0, 0.4, bands, 0.1)))
    assert [round(c, 3) for c in got] == [1.0, 0.7, 0.7, 0.6]  # band 0: 7 + 1 - 7 = 1 more
    assert got == sorted(got, reverse=True)
    assert policy.headroom(50) == 0.0


def test_parameters_are_validated() -> None:
    with pytest.raises(ConfigError):
        AdaptiveHoldback(window=0.0)
    with pytest.raises(ConfigError):
        AdaptiveHoldback(min_ceiling=0.9, max_ceiling=0.5)
