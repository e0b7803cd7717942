"""The asyncio driver on a VirtualClock: tokens arrive at their virtual due times."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.sim import Admission, Engine, SimConfig, SimRequest
from sluiceway.sim.engine_driver import EngineDriver


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(start=0.0)


async def test_tokens_arrive_at_their_virtual_times(clock: VirtualClock) -> None:
    cfg = SimConfig(max_num_seqs=1, time_to_first_token=0.5, inter_token_latency=0.25)
    driver = EngineDriver(Engine(cfg), clock)
    driver.start()
    outcome, stream = driver.submit(SimRequest("a", (1, 2), 3))
    assert outcome is Admission.ACCEPTED and stream is not None
    arrivals: list[tuple[float, int]] = []

    async def consume() -> None:
        while not stream.done:
            tokens = await stream.next_tokens()
            arrivals.append((clock.now(), len(tokens)))

    task = asyncio.create_task(consume())
    await clock.run_until_idle()
    await task
    await driver.stop()
    assert arrivals == [(0.5, 1), (0.75, 1), (1.0, 1)]
    assert stream.seq.finish_reason == "length"
    # Recorded on delivery: TTFT 0.5, two gaps of 0.25, E2E 1.0 (scaled seconds).
    stats = driver.engine.stats
    assert (stats.ttft.count, stats.ttft.total) == (1, 0.5)
    assert (stats.itl.count, stats.itl.total) == (2, 0.5)
    assert (stats.e2e.count, stats.e2e.total) == (1, 1.0)
    assert (stats.lateness.count, stats.lateness.total) == (3, 0.0)  # each on time


async def test_latency_is_recorded_when_the_client_takes_the_tokens(clock: VirtualClock) -> None:
    """A handler that gets to its tokens late makes TTFT late, as the client sees it."""
    cfg = SimConfig(time_to_first_token=0.5, inter_token_latency=0.25)
    driver = EngineDriver(Engine(cfg), clock)
    driver.start()
    _, stream = driver.submit(SimRequest("a", (1, 2), 3))
    assert stream is not None
    await clock.run_until_idle()  # every token produced; nobody has read them yet
    clock.advance(2.0)
    assert len(await stream.next_tokens()) == 3
    await driver.stop()
    stats = driver.engine.stats
    assert stats.ttft.total == pytest.approx(clock.monotonic())
    assert (stats.itl.count, stats.itl.total) == (2, 0.0)  # arrived together
    assert stats.e2e.count == 1
    assert stats.lateness.total == pytest.approx(2.0)  # the last token was due at 1.0


async def test_abort_wakes_the_loop_and_the_waiter_runs(clock: VirtualClock) -> None:
    cfg = SimConfig(max_num_seqs=1, time_to_first_token=0.1, inter_token_latency=1.0)
    engine = Engine(cfg)
    driver = EngineDriver(engine, clock)
    driver.start()
    _, first = driver.submit(SimRequest("a", (1,), 100))
    _, second = driver.submit(SimRequest("b", (2,), 2))
    assert first is not None and second is not None
    clock.advance(0.1)
    await asyncio.sleep(0)
    assert engine.running_ids() == ["a"] and engine.num_waiting == 1
    driver.abort("a")
    assert engine.running_ids() == ["b"]  # admitted by the abort itself, no timer needed
    await clock.run_until_idle()
    assert second.seq.finished and len(second.seq.output) == 2
    await driver.stop()


async def test_a_failing_listener_aborts_only_its_request(clock: VirtualClock) -> None:
    cfg = SimConfig(max_num_seqs=2, time_to_first_token=0.1, inter_token_latency=0.1)
    driver = EngineDriver(Engine(cfg), clock)
    driver.start()
    _, bad = driver.submit(SimRequest("bad", (1,), 5))
    _, good = driver.submit(SimRequest("good", (2,), 5))
    assert bad is not None and good is not None

    def explode() -> None:
        raise RuntimeError("listener bug")

    bad.listener = explode
    await clock.run_until_idle()
    await driver.stop()
    assert bad.seq.finish_reason == "abort"
    assert good.seq.finish_reason == "length" and len(good.seq.output) == 5
