"""Scenarios E, F and G: the router's flow control, with live traffic through the coordinator.

E: one slot, requests queued behind it: each freed slot goes to the highest non-empty band,
round robin across tenants inside a band, first come first served within a tenant; a full band
answers 429 ``rejected-saturated`` at once. F: the pool full of batch work, realtime requests
evict the newest negative-priority request in flight and start at once; the evicted requests
are retried by the processor and complete. G: holdback ceilings keep overflow-batch at half
the pool, so realtime finds headroom and nothing is cancelled.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sluiceway.demo.context import StepContext, until
from sluiceway.demo.findings import StepReport, nearest_rank
from sluiceway.demo.observe import BANDS, Event, lane_occupancy, lane_peaks
from sluiceway.demo.stack import DemoStack, StackSpec, router_document
from sluiceway.demo.traffic import Client, LiveAnswer

__all__ = ["scenario_e", "scenario_f", "scenario_g"]

BAND_LIMIT = 5
REALTIME_SAMPLES = 12
# Realtime's first token may lag its alone baseline by this much (scaled seconds): far less
# than the 2 s a batch request holds its slot.
TTFT_MARGIN = 0.3


def _strict_one_slot() -> dict[str, Any]:
    doc = router_document("router-evictable.yaml", maxConcurrency=1, enableEviction=False)
    for band in doc["flowControl"]["priorityBands"]:
        if band["priority"] == BANDS["reserved-batch"]:
            band["maxRequests"] = str(BAND_LIMIT)
    return doc


async def scenario_e(ctx: StepContext, report: StepReport) -> None:
    order: list[str] = []
    async with ctx.stack(StackSpec(router=_strict_one_slot())) as (stack, client):

        async def send(tag: str, tenant: str, tokens: int = 4) -> LiveAnswer:
            answer = await client.live(tenant, tokens)
            order.append(tag)
            return answer

        tasks = [asyncio.create_task(send("blocker", "batch", 200))]
        ok = await until(lambda: stack.router_load()[0] == 1)
        plan = [("a0", "acme"), ("a1", "acme"), ("z0", "zeta"), ("a2", "acme"), ("z1", "zeta")]
        plan.append(("rt", "realtime"))
        for n, (tag, tenant) in enumerate(plan, start=1):
            tasks.append(asyncio.create_task(send(tag, tenant)))
            ok = ok and await until(lambda n=n: stack.router_load()[1] == n)  # type: ignore[misc]
        full = await client.live("acme", 4)
        answers = await asyncio.gather(*tasks)
    report.check(
        "all queued requests answered 200", ok and {a.status for a in answers} == {200}, ""
    )
    expected = ["blocker", "rt", "a0", "z0", "a1", "z1", "a2"]
    report.check(
        "highest band first; round robin across tenants; FCFS within one", order == expected, order
    )
    report.check(
        f"band full ({BAND_LIMIT} queued) answers 429 rejected-saturated at once",
        full.status == 429 and full.reason == "rejected-saturated",
        f"{full.status} {full.reason} after {full.e2e:.3f} s",
    )


async def _realtime(client: Client, samples: int) -> list[LiveAnswer]:
    """Realtime requests one after another (a closed loop of one)."""
    return [await client.live("realtime", 16) for _ in range(samples)]


async def _fill_with_batch(stack: DemoStack, client: Client, count: int, tokens: int) -> Any:
    """Batch work queued and started; returns the task that collects its answers."""
    asks = [("batch", f"batch-{i:03d}") for i in range(count)]
    await asyncio.gather(*(client.enqueue(t, i, tokens) for t, i in asks))
    await stack.start_processor()
    return asyncio.gather(*(client.wait(t, i, tokens) for t, i in asks))


async def scenario_f(ctx: StepContext, report: StepReport) -> None:
    async with ctx.stack() as (stack, client):
        alone = await _realtime(client, REALTIME_SAMPLES)
        mark = stack.timeline.mark()
        batch = await _fill_with_batch(stack, client, 24, 256)
        full = await until(lambda: stack.router_load() == (10, 6))
        report.check("batch work fills the pool (10 running, 6 queued)", full, stack.router_load())
        mixed = await _realtime(client, REALTIME_SAMPLES)
        evicted = stack.evictions_issued()
        answers = await batch
        events = stack.timeline.since(mark)
        restarted = stack.timeline.restarted(mark)
    _ttft_checks(report, alone, mixed)
    report.check("realtime evicted in-flight batch work", evicted >= 1, f"{evicted} evictions")
    codes = [s for s, _ in answers]
    report.check(
        "evicted requests retried by the processor; all complete with 200",
        codes == [200] * len(codes) and len(restarted) >= 1,
        f"{codes.count(200)} of {len(codes)} 200, {len(restarted)} restarted",
    )
    cut = [lanes[:-1] for lanes in restarted.values()]
    report.check(
        "only negative priorities were evicted",
        all(BANDS.get(lane, 0) < 0 for lanes in cut for lane in lanes),
        sorted({lane for lanes in cut for lane in lanes}),
    )
    ctx.findings.ttft["alone"] = [a.ttft for a in alone]
    ctx.findings.ttft["mixed, eviction"] = [a.ttft for a in mixed]
    ctx.findings.occupancy["F: batch backlog + realtime (eviction)"] = _relative(events)


def _ttft_checks(report: StepReport, alone: list[LiveAnswer], mixed: list[LiveAnswer]) -> None:
    report.check(
        "realtime answered 200",
        {a.status for a in alone + mixed} == {200},
        f"{len(alone)} alone, {len(mixed)} mixed",
    )
    base = nearest_rank([a.ttft for a in alone], 90)
    seen = nearest_rank([a.ttft for a in mixed], 90)
    report.check(
        f"realtime TTFT p90 mixed within alone + {TTFT_MARGIN} s",
        seen <= base + TTFT_MARGIN,
        f"alone {base:.3f} s, mixed {seen:.3f} s (scaled)",
    )


def _relative(events: list[Event]) -> list[tuple[float, dict[str, int]]]:
    origin = events[0].at if events else 0.0
    return [(t - origin, levels) for t, levels in lane_occupancy(events)]


async def scenario_g(ctx: StepContext, report: StepReport) -> None:
    spec = StackSpec(router=router_document("router-holdback.yaml"))
    async with ctx.stack(spec) as (stack, client):
        alone = await _realtime(client, REALTIME_SAMPLES)
        mark = stack.timeline.mark()
        batch = await _fill_with_batch(stack, client, 16, 192)
        held = await until(lambda: stack.router_load()[1] > 0)
        report.check("batch work queued at its ceiling", held, stack.router_load())
        mixed = await _realtime(client, REALTIME_SAMPLES)
        answers = await batch
        events = stack.timeline.since(mark)
        evicted, restarted = stack.evictions_issued(), stack.timeline.restarted(mark)
    peak = lane_peaks(events).get("overflow-batch", 0)
    report.check("overflow-batch held at its ceiling (0.5 x 10)", 0 < peak <= 5, f"peak {peak}")
    _ttft_checks(report, alone, mixed)
    report.check(
        "nothing in flight cancelled",
        evicted == 0 and not restarted,
        f"{evicted} evictions, {len(restarted)} restarts",
    )
    codes = [s for s, _ in answers]
    report.check("batch work completes with 200", codes == [200] * len(codes), len(codes))
    ctx.findings.ttft["mixed, holdback"] = [a.ttft for a in mixed]
