"""The demo's steps. Each runs one guide scenario and returns checks a person can read.

Scenario A: one request per team and one worker: premium, standard, batch, stamped with the
reserved objectives and the team as fairness id. Scenario B: 100 batch and 20 premium requests at
once with 16 workers: the quota keeps reserved work at 1 (batch) and 2 (premium) in flight, the
rest runs as overflow, and premium overflow finishes before batch overflow is done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import Clock
from sluiceway.demo.guide import TEAMS, guide_settings
from sluiceway.demo.observe import observing
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.sim.server_pool import SimPool
from sluiceway.wire import ResultRecord
from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE

__all__ = ["Check", "StepReport", "scenario_a", "scenario_b"]

RESULTS = "results-list"


@dataclass(frozen=True)
class Check:
    what: str
    passed: bool
    detail: str


@dataclass
class StepReport:
    name: str
    wall_seconds: float = 0.0
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def check(self, what: str, passed: bool, detail: object) -> None:
        self.checks.append(Check(what, passed, str(detail)))


async def _publish(producer: Producer, clock: Clock, team: str, count: int, run: str) -> None:
    now = clock.now()
    reqs = [
        request(
            f"{team}-{run}-{i:04d}",
            {"model": "sim-model", "prompt": f"summarize report {i}", "max_tokens": 32},
            deadline=now + 600,
            metadata={"team": team},
            created=now,
        )
        for i in range(count)
    ]
    await producer.submit_many(reqs, queue=f"team-{team}")


async def _collect(
    producer: Producer, clock: Clock, count: int, within: float
) -> list[tuple[ResultRecord, float]]:
    """Up to ``count`` results with the scaled time each arrived, waiting ``within`` wall s."""
    out: list[tuple[ResultRecord, float]] = []
    end = time.monotonic() + within
    while len(out) < count:
        record = await producer.get_result(block_for=max(0.0, end - time.monotonic()))
        if record is None:
            break
        out.append((record, clock.now()))
    return out


def _team(record: ResultRecord) -> str:
    return record.id.split("-")[0]


async def scenario_a(sim: SimPool, clock: Clock) -> StepReport:
    """One request per team, published batch first, served by one worker."""
    report = StepReport("A: one request per team, one worker")
    started = time.monotonic()
    broker = MemoryBroker()
    producer = Producer(broker, result_queue=RESULTS, clock=clock)
    for team in ("batch", "standard", "premium"):
        await _publish(producer, clock, team, 1, "a")
    settings = guide_settings(sim.urls[0], workers=1)
    async with Processor(settings, broker, clock=clock, registry=CollectorRegistry()):
        results = [r for r, _ in await _collect(producer, clock, 3, within=60)]
    engine = sim.engines[0]
    codes = [r.status_code for r in results]
    report.check("three 200 results", codes == [200] * 3, codes)
    order = [_team(r) for r in results]
    report.check(
        "dispatch order premium, standard, batch", order == ["premium", "standard", "batch"], order
    )
    objectives = sorted(engine.max_running_by_label(OBJECTIVE))
    report.check(
        "reserved objectives stamped",
        objectives == ["reserved-async", "reserved-batch", "reserved-interactive"],
        objectives,
    )
    fairness = sorted(engine.max_running_by_label(FAIRNESS_ID))
    report.check("fairness id = team", fairness == sorted(TEAMS), fairness)
    report.wall_seconds = time.monotonic() - started
    return report


async def scenario_b(sim: SimPool, clock: Clock) -> StepReport:
    """100 batch and 20 premium requests at once, 16 workers, quota classifying."""
    report = StepReport("B: batch x100 + premium x20 at once, 16 workers")
    started = time.monotonic()
    started_at = clock.now()
    broker = MemoryBroker()
    producer = Producer(broker, result_queue=RESULTS, clock=clock)
    await _publish(producer, clock, "batch", 100, "b")
    await _publish(producer, clock, "premium", 20, "b")
    engine = sim.engines[0]
    settings = guide_settings(sim.urls[0])
    processor = Processor(settings, broker, clock=clock, registry=CollectorRegistry())
    with observing(engine, OBJECTIVE, clock) as seen:
        async with processor:
            arrived = await _collect(producer, clock, 120, within=120)
    codes = [r.status_code for r, _ in arrived]
    report.check(
        "all 120 complete with 200", codes == [200] * 120, f"{codes.count(200)} of 120 are 200"
    )
    peaks = engine.max_running_by_label(OBJECTIVE)
    report.check(
        "reserved-batch in flight never above 1",
        peaks.get("reserved-batch", 0) <= 1,
        f"peak {peaks.get('reserved-batch', 0)}",
    )
    report.check(
        "reserved-interactive in flight never above 2",
        peaks.get("reserved-interactive", 0) <= 2,
        f"peak {peaks.get('reserved-interactive', 0)}",
    )
    report.check(
        "the rest ran as overflow",
        peaks.get("overflow-batch", 0) > 0 and peaks.get("overflow-interactive", 0) > 0,
        {k: v for k, v in sorted(peaks.items())},
    )
    premium_done = max((t for r, t in arrived if _team(r) == "premium"), default=None)
    last_batch_start = seen.last_start("overflow-batch")
    report.check(
        "premium finished before the last overflow-batch dispatch",
        premium_done is not None
        and last_batch_start is not None
        and premium_done <= last_batch_start,
        f"premium done at +{_rel(premium_done, started_at)} s, last overflow-batch "
        f"start at +{_rel(last_batch_start, started_at)} s (scaled)",
    )
    report.wall_seconds = time.monotonic() - started
    return report


def _rel(when: float | None, origin: float) -> str:
    return "?" if when is None else f"{when - origin:.2f}"
