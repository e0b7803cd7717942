"""A pool worker: take the next ready request and run its steps.

``admit`` (cancellation, deadline, pool gates with parking), ``dispatch`` (the HTTP attempt,
watched for cancellation), ``record`` (the answer to a pool gate that learns from answers,
then result or retry). Every path ends the claim exactly once through the
:class:`~sluiceway.processor.recorder.Recorder`. A drain that runs out of time cancels the
worker: its request goes back to the queue with its retry count unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

from sluiceway.gates.base import (
    CLASSIFICATION_LABEL,
    AnswerFacts,
    Decision,
    Feedback,
    Verdict,
    budget_allows,
)
from sluiceway.observability.logging import named_outage_log
from sluiceway.processor.gating import apply_gate, gate_reason, gate_request
from sluiceway.processor.headers import build_headers, build_url, queue_ttl
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.outcome import Attempt, AttemptKind, Finish, decide
from sluiceway.processor.poison import MAX_IDENTICAL_FAULTS, describe, fault_backoff
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.recorder import Recorder
from sluiceway.processor.results import (
    cancelled_result,
    deadline_result,
    dropped_result,
    gate_error_result,
    infeasible_result,
    inference_error_result,
)
from sluiceway.processor.resume import can_resume, send_resuming
from sluiceway.processor.runtime import AttemptRecord, Runtime
from sluiceway.processor.upstream import Upstream, encode_body, usage_tokens
from sluiceway.processor.work_item import WorkItem
from sluiceway.wire import headers as h

__all__ = ["Worker"]

log = logging.getLogger(__name__)
_PARK_BACKSTOP = 1.0  # scaled seconds between gate re-checks when nothing signals
_PARKED_CANCEL_CHECK = 1.0  # scaled seconds between cancellation checks of a parked request


class Worker:
    """One worker of a pool: one request at a time."""

    def __init__(self, rt: Runtime, pool: ReadyBuffer, upstream: Upstream) -> None:
        self._rt = rt
        self._pool = pool
        self._upstream = upstream
        self._recorder = Recorder(rt)
        self._feedback = pool.gate if isinstance(pool.gate, Feedback) else None  # hears answers

    async def run(self) -> None:
        while (item := await self._pool.take()) is not None:
            try:
                await self.process(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                with contextlib.suppress(Exception):
                    await self._faulted(item, exc)
            finally:
                self._pool.finished()

    async def _faulted(self, item: WorkItem, exc: Exception) -> None:
        """An unexpected failure: told once per request (with its traceback), retried with
        a growing backoff, and answered INFERENCE_ERROR once it failed the same way
        ``MAX_IDENTICAL_FAULTS`` times in a row: never returned to its queue at once, where
        it would fail again hundreds of times a second (issue 26)."""
        key, fault = (item.request_id, item.token), describe(exc)
        repeats = self._rt.faults.seen(key, fault)
        self._rt.metrics.fault(item.labels, "worker")
        if repeats == 1:
            log.error("worker failed on %s: %s; retrying it with backoff", item.request_id, fault,
                      exc_info=exc)  # fmt: skip
        if repeats < MAX_IDENTICAL_FAULTS:
            interval = self._rt.settings.poll_interval
            await self._recorder.retry(item, fault_backoff(repeats, interval, 30 * interval),
                                       count=False)  # fmt: skip
            return
        self._rt.faults.clear(key)
        log.warning("%s failed %d times: %s; answered INFERENCE_ERROR", item.request_id,
                    repeats, fault)  # fmt: skip
        detail = f"failed {repeats} times the same way: {fault}"
        await self._recorder.result(
            item, inference_error_result(item.request_id, item.token, detail), "failed"
        )

    async def process(self, item: WorkItem) -> None:
        """Admit, dispatch, record."""
        memory = self._picked_up(item)
        try:
            if not await self.admit(item):
                return
            attempt = await self.dispatch(item)
            if attempt is not None:
                await self.record(item, attempt, memory)
        except asyncio.CancelledError:
            await asyncio.shield(self._recorder.release(item))
            raise

    def _picked_up(self, item: WorkItem) -> AttemptRecord:
        """Count the pickup; the request generation's memory, which the record step updates."""
        waited = (self._rt.clock.monotonic() - item.ingested_at) * 1000
        memory = self._rt.memory.get(item.request_id, item.token)
        first = item.envelope.internal.retry_count == 0 and not memory.counted
        memory.counted = memory.counted or first
        self._rt.metrics.picked_up(item.labels, waited_ms=waited, first=first)
        return memory

    # -- admit --------------------------------------------------------------------------------

    async def admit(self, item: WorkItem) -> bool:
        """True when the request may be sent; otherwise it has been recorded or released.

        This is the cancellation check right before the send, so a request cancelled meanwhile
        is never sent: once up front, and once more after a pool gate, which may have parked
        the request."""
        if await self._cancelled(item):
            return False
        if item.deadline <= self._rt.clock.now():
            await self._expire(item)
            return False
        if await self._unfinishable(item):
            return False
        if self._pool.gate is None:
            return True
        if not await self._pool_gate(item) or await self._cancelled(item):
            return False
        return not await self._unfinishable(item)

    def _learn_service_time(self, item: WorkItem, elapsed: float) -> None:
        service, now = self._rt.service, self._rt.clock.now()
        service.observe(item.queue.id, elapsed, now)
        self._rt.metrics.service_time_estimated(item.labels, service.estimate(item.queue.id, now))

    async def _unfinishable(self, item: WorkItem) -> bool:
        """True (and answered at once) when less time is left than the queue's requests take:
        started, it would hold a slot for an answer nobody receives."""
        now = self._rt.clock.now()
        needed = self._rt.service.shortfall(item.queue.id, item.deadline - now, now)
        if needed is None:
            return False
        record = infeasible_result(item.request_id, item.token, item.deadline - now, needed)
        self._rt.metrics.infeasible(item.labels)
        await self._recorder.result(item, record, "exceeded_deadline")
        return True

    async def _pool_gate(self, item: WorkItem) -> bool:
        lot = self._pool.capacity_changed
        started = self._rt.clock.now()
        counted = False
        checked = started  # last cancellation check while parked (at most one per second)
        try:
            while not self._rt.stopping:
                now = self._rt.clock.now()
                seen = lot.generation  # a finish during the gate call counts
                decision = await self._apply_pool_gate(item, now)
                if decision.verdict is not Verdict.WAIT:
                    return await self._gate_outcome(item, decision)
                if not counted:
                    self._count_gate(item, decision)
                    counted = True
                if await self._parked_too_long(item, started, now):
                    return False
                if await self._unfinishable(item):  # aged while parked: answered at once
                    return False
                if now - checked >= _PARKED_CANCEL_CHECK:
                    checked = now
                    if await self._cancelled(item):
                        return False
                await lot.wait(item.rank, self._rt.wall(_PARK_BACKSTOP), since=seen)
            await self._recorder.release(item)
            return False
        finally:
            lot.pass_turn()

    async def _apply_pool_gate(self, item: WorkItem, now: float) -> Decision:
        gate = self._pool.gate
        assert gate is not None
        budget = await gate.budget(now)
        self._rt.metrics.budget_read(self._pool_labels, budget)
        spec = self._pool.spec
        if not budget_allows(
            budget, self._pool.dispatching, spec.workers, self._rt.shares(spec.id)
        ):
            return Decision(Verdict.WAIT)
        request = gate_request(
            item.envelope, holder=item.holder, lease_until=item.claim.lease_until
        )
        return await apply_gate(gate, request, item.holdings, now)

    async def _gate_outcome(self, item: WorkItem, decision: Decision) -> bool:
        if decision.admitted:
            return True
        self._count_gate(item, decision)
        if decision.verdict is Verdict.REFUSE:
            await self._recorder.retry(item, self._rt.settings.poll_interval, count=False)
        elif decision.verdict is Verdict.DROP:
            record = dropped_result(item.request_id, item.token, decision)
            await self._recorder.result(item, record, "failed")
        else:
            record = gate_error_result(item.request_id, item.token, decision)
            await self._recorder.result(item, record, "failed")
        return False

    @property
    def _pool_labels(self) -> QueueLabels:
        return QueueLabels.of_pool(self._pool.spec.id)

    def _count_gate(self, item: WorkItem, decision: Decision) -> None:
        """Pool-gate series carry the pool's labels; without a classification of its own,
        the request's queue-level one decides the reason."""
        labels = item.envelope.internal.labels
        classification = decision.classification or labels.get(CLASSIFICATION_LABEL)
        self._rt.metrics.gate_held(self._pool_labels, gate_reason(decision.verdict, classification))

    async def _parked_too_long(self, item: WorkItem, started: float, now: float) -> bool:
        if item.deadline <= now:
            await self._expire(item)
            return True
        limit = self._rt.settings.gate_wait_timeout
        if limit > 0 and now - started >= limit:
            self._rt.metrics.gate_wait_expired(item.labels)
            await self._recorder.release(item)
            return True
        return False

    # -- dispatch -----------------------------------------------------------------------------

    async def dispatch(self, item: WorkItem) -> Attempt | None:
        """One upstream attempt (admitted just before); None when it was cancelled in flight
        (and recorded as such)."""
        data, queue = item.envelope.data, item.queue
        url = build_url(queue.igw_base_url, data.endpoint or queue.request_path)
        headers = build_headers(
            request_id=item.request_id,
            caller_headers=data.headers,
            metadata=data.metadata,
            queue_objective=queue.inference_objective,
            lane=item.lane,
            policy=self._rt.settings.merge.headers,
        )
        ttl = self._queue_ttl(item, headers)
        budget = min(self._rt.settings.request_timeout, item.deadline - self._rt.clock.now())
        log.debug("dispatching %s to %s (lane %s)", item.request_id, url, item.lane.key)
        send: Coroutine[Any, Any, Attempt]
        if queue.resume and can_resume(url, data.payload):
            session, clock = self._upstream.session, self._rt.clock
            send = send_resuming(session, clock, url, headers, data.payload, budget=budget, ttl=ttl)
        else:
            send = self._upstream.send(url, headers, encode_body(data.payload), budget=budget)
        return await self._await_attempt(item, send)

    def _queue_ttl(self, item: WorkItem, headers: dict[str, str]) -> Callable[[], str] | None:
        """Stamp the router's queue budget (unless the caller sent its own): waited past it, the
        request could not finish. The stamp, for a resumed attempt to renew."""
        service, clock = self._rt.service, self._rt.clock
        if not service.settings.enabled or h.INFERENCE_TTL in headers:
            return None
        needed = service.estimate(item.queue.id, clock.now())

        def ttl() -> str:
            return queue_ttl(item.deadline - clock.now(), needed)

        headers[h.INFERENCE_TTL] = ttl()
        return ttl

    async def _await_attempt(
        self, item: WorkItem, send: Coroutine[Any, Any, Attempt]
    ) -> Attempt | None:
        """Run the attempt in this task inside a cancel scope the cancel watch may cancel (then
        CANCELLED is written). No task per attempt, and no un-cancelling: the scope absorbs its
        own cancellation, while a stop of the worker itself (drain timeout) passes through."""
        key = (item.request_id, item.token)
        self._pool.dispatching += 1
        self._rt.metrics.attempt_started(item.labels)
        started = self._rt.clock.monotonic()
        attempt: Attempt | None = None
        try:
            with anyio.CancelScope() as scope:
                self._rt.cancels.track(key, scope)
                attempt = await send
        finally:
            self._rt.cancels.untrack(key)
            self._pool.dispatching -= 1
            elapsed = self._rt.clock.monotonic() - started
            self._rt.metrics.attempt_ended(item.labels, elapsed_ms=elapsed * 1000)
        if attempt is not None and attempt.answer is not None and attempt.answer.status < 400:
            self._learn_service_time(item, max(0.0, elapsed - attempt.queued))  # model time
        if attempt is None:
            await self._record_cancel(item)
        return attempt

    # -- record -------------------------------------------------------------------------------

    async def record(self, item: WorkItem, attempt: Attempt, memory: AttemptRecord) -> None:
        """Finish with a result or park a retry, per the outcome rules."""
        upstream = named_outage_log(f"upstream {item.queue.igw_base_url}", log)
        if attempt.answer is not None:
            memory.last_answer, memory.connect_errors = attempt.answer, 0
            status = attempt.answer.status
            tokens = usage_tokens(attempt.answer.body) if status < 400 else None
            self._rt.metrics.answered(item.labels, status, tokens)
            upstream.succeeded()
        else:
            memory.connect_errors += 1
            if attempt.kind is AttemptKind.CONNECT_ERROR:
                upstream.failed(ConnectionError(attempt.error), f"dispatch of {item.request_id}")
        self._feed_back(item, attempt)
        step = decide(
            attempt,
            request_id=item.request_id,
            request_token=item.token,
            attempts=item.envelope.internal.retry_count + 1,
            connect_errors=memory.connect_errors,
            last_answer=memory.last_answer,
            remaining=item.deadline - self._rt.clock.now(),
            policy=item.queue.retry,
            rand=self._rt.rng.random(),
            jitter=self._rt.rng.random(),
        )
        if isinstance(step, Finish):
            result = step.result
            log.debug("result of %s: %s %s", item.request_id, step.counter,
                      result.status_code or result.error_code)  # fmt: skip
            await self._recorder.result(item, result, step.counter)
        else:
            why = attempt.error or (f"HTTP {attempt.answer.status}" if attempt.answer else "")
            log.debug("retrying %s in %.2f s: %s", item.request_id, step.delay, why)
            await self._recorder.retry(item, step.delay)

    def _feed_back(self, item: WorkItem, attempt: Attempt) -> None:
        """Tell a pool gate that learns from answers (``aimd``) what its admission came back
        with, before the request's end releases what the gate holds for it."""
        if self._feedback is None:
            return
        status = None if attempt.answer is None else attempt.answer.status
        facts = AnswerFacts(item.holder, status, attempt.dropped_reason, attempt.retry_after)
        self._feedback.observe(facts, self._rt.clock.now())

    async def _cancelled(self, item: WorkItem) -> bool:
        if not await self._rt.broker.is_cancelled(item.request_id, item.token):
            return False
        await self._record_cancel(item)
        return True

    async def _record_cancel(self, item: WorkItem) -> None:
        await self._recorder.result(item, cancelled_result(item.request_id, item.token), None)

    async def _expire(self, item: WorkItem) -> None:
        last = self._rt.memory.last_answer(item.request_id, item.token)
        record = deadline_result(item.request_id, item.token, last)
        await self._recorder.result(item, record, "exceeded_deadline")
