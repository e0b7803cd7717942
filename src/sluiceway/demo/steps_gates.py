"""Scenarios C and D: the processor's pool gate reads the router's saturation.

Both gates scrape the router's ``/metrics`` over loopback through the signals layer
(``endpoint-scrape`` on ``llm_d_epp_flow_control_pool_saturation``, no Prometheus).

C: ``wait-on-refuse`` with the router's concurrency limit at 4 (the guide's SAT_CAP): the
budget reaches exactly 0, workers park holding their requests (nothing goes back to the
broker), the model server runs about 4 at a time rather than 16, and the highest lanes drain
first. D: ``tier-priority-admission`` while live traffic saturates the router: interactive
overflow is shed with a 429, reserved requests wait, batch overflow goes back to its queue, and
all of them run once the live traffic ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from statistics import mean

from sluiceway.demo.context import StepContext, until
from sluiceway.demo.findings import StepReport
from sluiceway.demo.observe import Event
from sluiceway.demo.stack import POOL_NAME, StackSpec, router_document
from sluiceway.demo.traffic import LiveAnswer

__all__ = ["scenario_c", "scenario_d"]

SATURATION = "llm_d_epp_flow_control_pool_saturation"
SAT_CAP = 4
THRESHOLD = 0.8  # scenario D's saturation threshold (the guide's)


def _scrape(router_url: str, baseline: float = 0.0) -> dict[str, object]:
    return {
        "url": router_url + "/metrics",
        "metric": SATURATION,
        "labels": {"inference_pool": POOL_NAME},
        "baseline": str(baseline),
    }


def wait_on_refuse_gate(router_url: str) -> tuple[str, Mapping[str, object]]:
    inner = {"gate_type": "endpoint-scrape", "gate_params": _scrape(router_url)}
    return "wait-on-refuse", {"gate": inner}


def admission_gate(router_url: str) -> tuple[str, Mapping[str, object]]:
    """Saturated at 0.8 of the router's limit (the guide's threshold)."""
    params = {
        "saturation_gate": "endpoint-scrape",
        "saturation_gate_params": _scrape(router_url, baseline=round(1 - THRESHOLD, 6)),
        "tier_label": "tier",
    }
    return "tier-priority-admission", params


async def scenario_c(ctx: StepContext, report: StepReport) -> None:
    spec = StackSpec(
        router=router_document("router-evictable.yaml", maxConcurrency=SAT_CAP),
        pool_gate=wait_on_refuse_gate,
    )
    budgets: list[float] = []
    async with ctx.stack(spec) as (stack, client):
        asks = [("premium", f"c-premium-{i:03d}") for i in range(20)]
        asks += [("batch", f"c-batch-{i:03d}") for i in range(20)]
        queued = await asyncio.gather(*(client.enqueue(t, i) for t, i in asks))
        report.check("40 requests queued", list(queued) == [202] * 40, len(queued))
        await stack.start_processor()
        (refresher,) = stack.signals.refreshers.values()
        refresher.subscribe(lambda: _note(budgets, stack.signal_value()))
        answers = await asyncio.gather(*(client.wait(t, i) for t, i in asks))
        handbacks = stack.handbacks.count
        evictions = stack.evictions_issued()
        timeline = stack.timeline
        starts = timeline.starts()
        window = (starts[min(len(starts) - 1, SAT_CAP)].at, starts[-1].at)
        average = timeline.average_running(*window)
    codes = [status for status, _ in answers]
    report.check("all 40 complete with 200", codes == [200] * 40, f"{codes.count(200)} of 40")
    report.check("budget reached exactly 0", 0.0 in budgets, f"{len(budgets)} readings")
    report.check(
        "parked workers kept their requests (none handed back to the broker)",
        handbacks <= evictions,
        f"{handbacks} handed back, {evictions} evicted by the router",
    )
    report.check(
        f"in flight near {SAT_CAP}, not the 16 workers",
        average <= SAT_CAP + 1,
        f"mean {average:.1f} running while the backlog drained",
    )
    order = {
        lane: mean(i for i, e in enumerate(starts) if e.lane == lane) for lane in _lanes(starts)
    }
    report.check(
        "highest lanes drain first",
        order.get("reserved-interactive", 99) < order.get("overflow-batch", -1)
        and order.get("overflow-interactive", 99) < order.get("overflow-batch", -1),
        {k: round(v, 1) for k, v in order.items()},
    )


def _note(budgets: list[float], saturation: float | None) -> None:
    """The gate's budget for a saturation reading: max(0, 1 - saturation)."""
    if saturation is not None:
        budgets.append(max(0.0, 1.0 - min(1.0, max(0.0, saturation))))


def _lanes(starts: list[Event]) -> list[str]:
    return sorted({e.lane for e in starts})


async def scenario_d(ctx: StepContext, report: StepReport) -> None:
    async with ctx.stack(StackSpec(pool_gate=admission_gate)) as (stack, client):
        await stack.start_processor()
        calm = await asyncio.gather(*(client.wait("premium", f"d-calm-{i}") for i in range(4)))
        report.check(
            "not saturated: every request continues (overflow too)",
            [s for s, _ in calm] == [200] * 4,
            [s for s, _ in calm],
        )
        mark = stack.timeline.mark()
        live = [asyncio.create_task(client.live("realtime", 400)) for _ in range(10)]
        filled = await until(lambda: stack.router_load()[0] >= 10)
        saturation = await stack.read_signal()  # the gate sees the full router from now on
        report.check(
            f"live traffic fills the router; the gate reads saturation >= {THRESHOLD}",
            filled and saturation is not None and saturation >= THRESHOLD,
            f"saturation {saturation}",
        )
        asks = [("premium", f"d-premium-{i}") for i in range(4)]
        asks += [("batch", f"d-batch-{i}") for i in range(2)]
        waits = [asyncio.create_task(client.wait(t, i)) for t, i in asks]
        done = await until(lambda: sum(t.done() for t in waits) >= 2)
        shed = [asks[i][1] for i, t in enumerate(waits) if t.done() and t.result()[0] == 429]
        queued_starts = [e for e in stack.timeline.starts(mark) if e.tenant != "realtime"]
        report.check(
            "overflow-interactive shed with 429 while saturated",
            done and len(shed) == 2 and all("premium" in r for r in shed),
            shed,
        )
        report.check(
            "nothing queued dispatched while saturated", not queued_starts, len(queued_starts)
        )
        returned = await until(lambda: stack.handbacks.count >= 1)
        report.check(
            "batch overflow went back to its queue", returned, f"{stack.handbacks.count} times"
        )
        answered: list[LiveAnswer] = await asyncio.gather(*live)
        rest = [t.result() for t in await _all(waits) if t.result()[0] != 429]
    report.check("live traffic answered", [a.status for a in answered] == [200] * 10, "")
    report.check(
        "reserved and batch overflow run later with 200",
        [s for s, _ in rest] == [200] * 4,
        f"{len(rest)} answered",
    )


async def _all(
    tasks: list[asyncio.Task[tuple[int, float]]],
) -> list[asyncio.Task[tuple[int, float]]]:
    await asyncio.gather(*tasks)
    return tasks
