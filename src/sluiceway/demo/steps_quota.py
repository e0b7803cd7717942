"""Scenarios A and B: quotas and lanes, with requests queued through the coordinator.

A: one request per team, queued batch first, one worker: dispatched premium, standard, batch,
stamped with the reserved objectives and the team as fairness id. B: 100 batch and 20 premium
requests at once, 16 workers: the quota keeps reserved work at 1 (batch) and 2 (premium) in
flight, the rest runs as overflow, and premium finishes before the last batch overflow starts.
"""

from __future__ import annotations

import asyncio
from statistics import median

from sluiceway.demo.context import StepContext
from sluiceway.demo.findings import LaneRow, StepReport
from sluiceway.demo.observe import BANDS, Event, lane_occupancy, lane_peaks
from sluiceway.demo.stack import DemoStack, StackSpec
from sluiceway.demo.traffic import Client

__all__ = ["scenario_a", "scenario_b"]

TEAMS = ("premium", "standard", "batch")


async def _queue_all(client: Client, asks: list[tuple[str, str]], max_tokens: int) -> list[int]:
    return list(await asyncio.gather(*(client.enqueue(t, i, max_tokens) for t, i in asks)))


async def _answers(
    client: Client, asks: list[tuple[str, str]], max_tokens: int
) -> list[tuple[int, float]]:
    """Hold a wait-mode call per queued request (same id: it re-attaches) until answered."""
    return list(await asyncio.gather(*(client.wait(t, i, max_tokens) for t, i in asks)))


async def scenario_a(ctx: StepContext, report: StepReport) -> None:
    async with ctx.stack(StackSpec(workers=1)) as (stack, client):
        asks = [(team, f"a-{team}") for team in reversed(TEAMS)]
        queued = await _queue_all(client, asks, 16)
        report.check("three requests queued (202)", queued == [202] * 3, queued)
        await stack.start_processor()
        answers = await _answers(client, asks, 16)
        starts = stack.timeline.starts()
    codes = [status for status, _ in answers]
    report.check("three 200 results", codes == [200] * 3, codes)
    order = [e.tenant for e in starts]
    report.check("dispatch order premium, standard, batch", order == list(TEAMS), order)
    lanes = {e.tenant: e.lane for e in starts}
    expected = {"premium": "reserved-interactive", "standard": "reserved-async"}
    expected["batch"] = "reserved-batch"
    report.check("reserved objectives stamped, fairness id = team", lanes == expected, lanes)


async def _sample_quota(stack: DemoStack, out: list[tuple[float, dict[str, int]]]) -> None:
    """The quota counters every tenth of a scaled second (an observer, not a synchroniser)."""
    origin = stack.clock.now()
    while True:
        counts = {team: await stack.quota_count(team) for team in TEAMS}
        out.append((stack.clock.now() - origin, counts))
        await stack.clock.sleep(0.1)


async def scenario_b(ctx: StepContext, report: StepReport) -> None:
    asks = [("batch", f"b-batch-{i:03d}") for i in range(100)]
    asks += [("premium", f"b-premium-{i:03d}") for i in range(20)]
    samples: list[tuple[float, dict[str, int]]] = []
    async with ctx.stack() as (stack, client):
        queued = await _queue_all(client, asks, 32)
        report.check("120 requests queued at once (202)", queued == [202] * 120, len(queued))
        origin = stack.clock.now()
        sampler = asyncio.create_task(_sample_quota(stack, samples))
        await stack.start_processor()
        answers = await _answers(client, asks, 32)
        sampler.cancel()
        events = [_shift(e, origin) for e in stack.timeline.events]
    _check_b(report, asks, [(s, t - origin) for s, t in answers], events, samples)
    ctx.findings.lanes = lane_rows(events)
    ctx.findings.lane_events = events
    ctx.findings.quota = samples
    ctx.findings.occupancy["B: batch x100 + premium x20"] = lane_occupancy(events)


def _check_b(
    report: StepReport,
    asks: list[tuple[str, str]],
    answers: list[tuple[int, float]],
    events: list[Event],
    samples: list[tuple[float, dict[str, int]]],
) -> None:
    codes = [status for status, _ in answers]
    report.check("all 120 complete with 200", codes == [200] * 120, f"{codes.count(200)} of 120")
    peaks = lane_peaks(events)
    for lane, limit in (("reserved-batch", 1), ("reserved-interactive", 2)):
        seen = peaks.get(lane, 0)
        report.check(f"{lane} in flight never above {limit}", 0 < seen <= limit, f"peak {seen}")
    highest = {t: max((c[t] for _, c in samples), default=0) for t in ("batch", "premium")}
    report.check(
        "quota:team:batch / premium never above 1 / 2",
        highest["batch"] <= 1 and highest["premium"] <= 2,
        f"highest {highest['batch']} / {highest['premium']} over {len(samples)} samples",
    )
    report.check(
        "the rest ran as overflow",
        peaks.get("overflow-batch", 0) > 0 and peaks.get("overflow-interactive", 0) > 0,
        dict(sorted(peaks.items())),
    )
    premium_done = max(
        t for (team, _), (_, t) in zip(asks, answers, strict=True) if team == "premium"
    )
    last_batch = max(
        (e.at for e in events if e.delta > 0 and e.lane == "overflow-batch"), default=0
    )
    report.check(
        "premium finished before the last overflow-batch dispatch",
        premium_done <= last_batch,
        f"premium done +{premium_done:.2f} s, last overflow-batch start +{last_batch:.2f} s",
    )


def _shift(e: Event, origin: float) -> Event:
    return Event(e.at - origin, e.delta, e.lane, e.tenant, e.request)


def lane_rows(events: list[Event]) -> list[LaneRow]:
    """Per lane, in band order: starts, first and last start, waits (start time, since every
    request was queued at 0), and the order in which the lanes finished."""
    starts: dict[str, list[float]] = {}
    last_end: dict[str, float] = {}
    for e in events:
        if e.delta > 0:
            starts.setdefault(e.lane, []).append(e.at)
        else:
            last_end[e.lane] = max(last_end.get(e.lane, 0.0), e.at)
    finish_order = sorted(last_end, key=last_end.__getitem__)
    return [
        LaneRow(
            lane,
            len(starts[lane]),
            min(starts[lane]),
            max(starts[lane]),
            median(starts[lane]),
            max(starts[lane]),
            finish_order.index(lane) + 1 if lane in last_end else 0,
        )
        for lane in sorted(starts, key=lambda name: -BANDS.get(name, -100))
    ]
