"""A request with less time left than its queue's requests take is answered at once
(``DEADLINE_EXCEEDED``, reason ``infeasible``) and never reaches the model; the estimate is
learned from answered requests, starts from the configured prior, and feasibility can be
turned off."""

from __future__ import annotations

from dataclasses import replace

from processor_harness import Rig, collect, guide_entry, guide_settings, rig
from prometheus_client import CollectorRegistry

from sluiceway.processor.service import Processor
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.wire import ErrorCode

LABELS = {"queue_id": "q", "queue_name": "q", "pool_name": "teams"}


def _spec(r: Rig, **kw: object) -> ProcessorSpec:
    queue = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
    return replace(guide_settings([queue], workers=2), **kw)  # type: ignore[arg-type]


def _starts(r: Rig) -> list[int]:
    started: list[int] = []
    r.sim.engines[0].labels.subscribe(lambda delta, _: started.append(1) if delta > 0 else None)
    return started


def _sample(proc: Processor, name: str) -> float:
    return proc.metrics.registry.get_sample_value(f"llm_d_async_async_{name}", LABELS) or 0.0


async def test_with_a_prior_a_request_that_cannot_finish_is_answered_at_once() -> None:
    async with rig() as r:
        started = _starts(r)
        now = r.clock.now()
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, ttl=3)])
        spec = _spec(r, service_time_prior=20.0)
        async with Processor(spec, r.broker, clock=r.clock, registry=CollectorRegistry()) as proc:
            (result,) = await collect(r.broker, 1)
            assert r.clock.now() - now < 3  # before its deadline, not at it
            assert _sample(proc, "infeasible_requests_total") == 1
            assert _sample(proc, "exceeded_deadline_requests_total") == 1
        assert result.error_code == ErrorCode.DEADLINE_EXCEEDED
        assert result.error_message.startswith("infeasible")
        assert started == []


async def test_the_estimate_is_learned_from_answers_and_feasibility_can_be_off() -> None:
    async with rig() as r:
        started = _starts(r)
        now = r.clock.now()
        slow = [guide_entry("t", i, now=now, max_tokens=60) for i in range(6)]  # ~1.25 s each
        await r.broker.enqueue("q", slow)
        async with Processor(_spec(r), r.broker, clock=r.clock, registry=CollectorRegistry()) as p:
            answers = await collect(r.broker, 6)
            assert {a.status_code for a in answers} == {200}
            learned = _sample(p, "service_time_estimate_seconds")
            assert learned > 1.0
            late = r.clock.now()
            await r.broker.enqueue("q", [guide_entry("t", 9, now=late, ttl=0.8, max_tokens=60)])
            (refused,) = await collect(r.broker, 1)
        assert refused.error_message.startswith("infeasible") and len(started) == 6
        off = _spec(r, feasibility=False)
        late = r.clock.now()
        await r.broker.enqueue("q", [guide_entry("t", 10, now=late, ttl=0.8, max_tokens=60)])
        async with Processor(off, r.broker, clock=r.clock, registry=CollectorRegistry()):
            (tried,) = await collect(r.broker, 1)
        assert len(started) == 7  # sent, and ended by its deadline instead
        assert not tried.error_message.startswith("infeasible")
