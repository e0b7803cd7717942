"""Flow-control scenarios (holdback, eviction, fairness) at the decision level, with the
guide's six lanes (objective priorities 100, 60, 30, 10, -5, -10) on a synthetic pool."""

from __future__ import annotations

import itertools

from sluiceway.flowcontrol import (
    BandSettings,
    DropReason,
    EvictionSettings,
    FlowController,
    FlowControlSettings,
    Request,
)
from sluiceway.flowcontrol.fairness import RoundRobin
from sluiceway.flowcontrol.usage import PriorityHoldback

from .pool import SyntheticPool

LANES = (100, 60, 30, 10, -5, -10)


def guide_settings(**kw: object) -> FlowControlSettings:
    bands = tuple(BandSettings(p, max_requests=500, fairness=RoundRobin()) for p in LANES)
    return FlowControlSettings(bands=bands, default_ttl=300.0, **kw)  # type: ignore[arg-type]


def test_e_strict_bands_round_robin_fcfs_and_band_full() -> None:
    pool = SyntheticPool(FlowController(guide_settings()), slots=1, service=lambda r: 1.0)
    pool.submit(Request("warm", "x", -10))  # occupies the only slot
    plan = [
        ("b1", "batch", -10),
        ("a1", "std", -5),
        ("p1", "premium", 100),
        ("q1", "prem2", 100),
        ("p2", "premium", 100),
        ("q2", "prem2", 100),
        ("s1", "std", 60),
    ]
    for rid, tenant, prio in plan:
        pool.submit(Request(rid, tenant, prio))
    pool.run_until(100.0)
    started = sorted((r.started, rid) for rid, r in pool.records.items() if r.started is not None)
    order = [rid for _, rid in started]
    # Each freed slot: highest non-empty band; round-robin across tenants; FCFS per tenant.
    assert order == ["warm", "p1", "q1", "p2", "q2", "s1", "a1", "b1"]

    small = guide_settings()
    bands = tuple(BandSettings(p, max_requests=3) for p in LANES)
    full = FlowController(FlowControlSettings(bands=bands, default_ttl=small.default_ttl))
    for i in range(3):
        assert full.add(Request(f"r{i}", "t", 100), 0.0) is None
    done = full.add(Request("r3", "t", 100), 0.0)  # the band-full request, even in band 100
    assert done is not None and done.waited == 0.0
    assert done.http() is not None and done.http().status == 429  # type: ignore[union-attr]
    assert done.http().reason is DropReason.SATURATED  # type: ignore[union-attr]
    assert full.add(Request("other", "t", 60), 0.0) is None  # other bands untouched


def test_f_eviction_frees_the_pool_for_realtime_lowest_newest_first() -> None:
    settings = guide_settings(eviction=EvictionSettings(enabled=True, grace=0.01))
    fc = FlowController(settings)
    pool = SyntheticPool(fc, slots=6, service=lambda r: 100.0, evict_delay=0.02)
    ids = itertools.count()
    for prio in (30, -5, -10, -5, -10, 30):  # reserved-batch, overflow-async, overflow-batch
        pool.submit(Request(f"w{next(ids)}_{prio}", "t", prio))
        pool.run_until(pool.now + 0.1)
    assert len(pool.running) == 6
    pool.submit(Request("rt1", "premium", 100))
    pool.submit(Request("rt2", "premium", 100))
    pool.submit(Request("rt3", "premium", 100))
    pool.run_until(pool.now + 1.0)
    evicted = [rid for c in pool.cycles for rid in c.evict]
    # -10 before -5, newest first within a band; 30 is never touched.
    assert evicted == ["w4_-10", "w2_-10", "w3_-5"]
    assert all(pool.records[f"rt{i}"].started is not None for i in (1, 2, 3))
    # Each realtime request starts within one revocation round trip of its eviction.
    for rid in ("rt1", "rt2", "rt3"):
        assert pool.records[rid].started - pool.records[rid].arrived <= 3 * 0.02 + 0.05
    # The evicted requests' streams ended (they would be retried upstream); nothing else did.
    assert {rid for rid, r in pool.records.items() if r.ended} == set(evicted)
    assert fc.evictor.confirmed == 3 and fc.evictor.over_evictions == 0
    # More realtime demand: the last -5 goes, then nothing is evictable (30s stay).
    for i in range(4, 7):
        pool.submit(Request(f"rt{i}", "premium", 100))
    pool.run_until(pool.now + 1.0)
    assert [rid for c in pool.cycles for rid in c.evict] == [*evicted, "w1_-5"]
    assert not pool.records["w0_30"].evicted and not pool.records["w5_30"].evicted


def test_g_holdback_ceilings_headroom_and_no_cancellation() -> None:
    policy = PriorityHoldback(min_ceiling=0.5)
    fc = FlowController(guide_settings(usage_limit=policy))
    pool = SyntheticPool(fc, slots=12, service=lambda r: 50.0)
    ids = itertools.count()
    for _ in range(30):
        pool.submit(Request(f"b{next(ids)}", "batch", -10))
    # Ceilings fall over the seven provisioned bands, band 0 included (docs/design-rules.md rule
    # 20).
    ceilings = [round(c, 3) for c in pool.cycle().ceilings]
    assert ceilings == [1.0, 0.917, 0.833, 0.75, 0.667, 0.583, 0.5]
    assert len(pool.running) == 6  # overflow-batch stops at 0.5 x 12
    for _ in range(10):
        pool.submit(Request(f"r{next(ids)}", "async", 30))
    assert len(pool.running) == 10  # reserved-batch (0.833) stops at 10 of 12
    pool.submit(Request("rt", "premium", 100))
    rec = pool.records["rt"]
    assert rec.started == rec.arrived  # realtime finds headroom at once
    assert not any(r.evicted for r in pool.records.values())  # nothing in flight cancelled
    assert all(c.evict == [] for c in pool.cycles)
