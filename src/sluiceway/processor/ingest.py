"""Ingest of one queue: peek, decode, settle what cannot run, gate, claim, hand to the pool.

Steps per entry (each a method), in this order:

1. decode: unreadable -> moved to ``<queue>:invalid``; readable but bad -> INVALID_REQUEST;
2. too late: deadline passed -> DEADLINE_EXCEEDED (or the last HTTP answer this process saw);
   less time left than the queue's requests take -> DEADLINE_EXCEEDED, infeasible;
3. queue gate (:mod:`~sluiceway.processor.gating`): Continue -> a candidate for the claim;
   Wait / Refuse / Error -> stays pending, the scan skips it; Drop -> GATE_DROPPED;
4. cancelled?: checked *after* the gate. A held or dropped entry is checked here (so a
   cancelled request never waits behind a closed gate); an admitted one is checked by the
   batch claim itself, which reports a cancellation -> CANCELLED.

Each step returns one :class:`EntryDecision`. Admitted requests are claimed with a lease and
put in the pool's ready buffer (:mod:`~sluiceway.processor.ready_buffer`) in their lane. Pages
are read by deadline, or newest first while the queue is overloaded (``queue_order``).
Ingest sleeps until an arrival, a finished request or the poll interval, whichever is first.
"""

from __future__ import annotations

import asyncio
import logging

from sluiceway.broker.base import Claim, Entry, claim_key
from sluiceway.broker.keys import member_digest
from sluiceway.gates.base import (
    CLASSIFICATION_LABEL,
    Decision,
    Gate,
    Holdings,
    Verdict,
    budget_allows,
)
from sluiceway.observability.logging import outage_log
from sluiceway.processor.entry_decision import SETTLED, Candidate, EntryDecision, Fate, Scan
from sluiceway.processor.gating import apply_gate, gate_reason, gate_request
from sluiceway.processor.ingest_faults import IngestFaults
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.poison import route_problem
from sluiceway.processor.queue_order import QueueOrder
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.recorder import Recorder, reserved_routes
from sluiceway.processor.results import (
    cancelled_result,
    deadline_result,
    dropped_result,
    infeasible_result,
    invalid_entry_result,
)
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import QueueSpec
from sluiceway.processor.wakeups import Pulse
from sluiceway.processor.work_item import WorkItem, holder_token, new_owner
from sluiceway.wire import EntryError, Envelope, ResultRecord, decode_envelope, lane_for

__all__ = ["SETTLE_CLAIM_LEASE", "QueueIngest"]

log = logging.getLogger(__name__)

# Scaled seconds: the lease of a claim taken only to answer an entry at once (invalid,
# expired, cancelled, dropped); ample for one ack, short if this process dies meanwhile.
SETTLE_CLAIM_LEASE = 60.0


class QueueIngest:
    """The ingest task of one queue."""

    def __init__(self, rt: Runtime, queue: QueueSpec, pool: ReadyBuffer, gate: Gate | None) -> None:
        self._rt = rt
        self._queue = queue
        self._pool = pool
        self._recorder = Recorder(rt)
        self.gate = gate
        self.labels = QueueLabels(queue.id, queue.queue_name, queue.pool_id)
        self.order = QueueOrder(rt, queue.queue_name, self.labels, self.consider)
        self._stopped = False
        self._faults = IngestFaults(rt, queue.queue_name, self.labels)
        # Poll accounting for Processor.wait_idle: polls started / finished, entries admitted.
        self.polls_started = self.polls_done = self.admitted_total = 0
        self.polled = Pulse()

    @property
    def queue(self) -> QueueSpec:
        return self._queue

    def stop(self) -> None:
        """Stop reading this queue (hot reload removed it); the task ends at its next step."""
        self._stopped = True

    @property
    def _running(self) -> bool:
        return not (self._rt.stopping or self._stopped)

    async def run(self) -> None:
        """Poll until the processor stops; wake on arrivals and finished work."""
        while self._running:
            generation = self._rt.wake.work.generation
            outage = outage_log(self._rt.broker, "broker", log)
            try:
                await self.poll_once()
            except Exception as exc:  # a broker hiccup or a poison entry must not end ingest
                await self._rt.clock.sleep(self._faults.poll_failed(outage, exc))
                continue
            outage.succeeded()
            self._faults.poll_succeeded()
            if not self._running:
                break
            await self._idle(generation)

    async def _idle(self, generation: int) -> None:
        if self._rt.wake.work.generation != generation:
            await asyncio.sleep(0)  # something finished meanwhile: poll again at once
            return
        block_for = self._rt.wall(self._rt.settings.poll_interval)
        arrival = asyncio.ensure_future(
            self._rt.broker.wait_for_work([self._queue.queue_name], block_for)
        )
        changed = asyncio.ensure_future(self._rt.wake.work.wait(block_for, since=generation))
        try:
            await asyncio.wait({arrival, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (arrival, changed):
                task.cancel()
            await asyncio.gather(arrival, changed, return_exceptions=True)

    async def poll_once(self) -> int:
        """Examine pending entries until the pool has no room for this queue or ``batch_size``
        entries were skipped; returns how many were admitted. Each peeked batch is claimed in
        one broker call (:meth:`~sluiceway.broker.base.Broker.claim_many`)."""
        self.polls_started += 1
        admitted = 0
        try:
            admitted = await self._poll()
        finally:
            self.polls_done += 1
            self.admitted_total += admitted
            self.polled.fire()
        return admitted

    async def _poll(self) -> int:
        admitted = skipped = 0
        limit = self._rt.settings.batch_size
        while self._running and (room := self._pool.room_for(self._queue.queue_name)) > 0:
            entries = await self.order.peek(limit, skipped)
            if not entries:
                break
            scan = await self.screen(entries, room, limit - skipped)
            won, lost = await self._take(scan.chosen)
            # A lost claim counts as a skip: its entry may still be pending (its generation
            # is claimed elsewhere), and peeking it again would spin.
            skipped += scan.skipped + lost
            admitted += won
            if scan.closed or skipped >= limit:
                break
        await self.order.after_pass()
        return admitted

    async def screen(self, entries: list[Entry], room: int, skips_left: int) -> Scan:
        """Settle what cannot run and pass the rest through the queue gates, in peeked order,
        until ``room`` candidates are chosen or ``skips_left`` entries were skipped."""
        scan = Scan()
        for entry in entries:
            try:
                decision = await self.consider(entry, len(scan.chosen))
            except Exception as exc:  # one bad entry must not stop the queue (issue 26)
                decision = await self._faults.entry_failed(entry, exc)
            scan.add(decision)
            if scan.closed or len(scan.chosen) >= room or scan.skipped >= skips_left:
                break
        return scan

    # -- steps -------------------------------------------------------------------------------

    async def consider(self, entry: Entry, chosen: int) -> EntryDecision:
        """Decide for one pending entry; ``chosen`` candidates of this batch await their claim.

        The dequeue cancellation check of an admitted request rides on the batch claim; a
        request the gates hold (or would drop) is checked here, so a cancelled request never
        waits behind a closed gate.
        """
        try:
            envelope = self._routable(self.stamped(decode_envelope(entry.member)))
        except EntryError as exc:
            await self._bad_entry(entry, exc)
            return SETTLED
        now = self._rt.clock.now()
        late = await self._too_late(entry, envelope, float(envelope.data.deadline), now)
        if late is not None:
            return late
        if self.gate is None:  # no queue gate: admitted without a wait
            return EntryDecision.admitted(Candidate(entry, envelope, new_owner(), Holdings()))
        decision = await self.admit(self.gate, entry, envelope, now, chosen)
        if decision.fate not in (Fate.HELD, Fate.CLOSED):
            return decision
        if await self._is_cancelled(envelope):
            return await self._settle_cancelled(entry, envelope)
        self._rt.metrics.gate_held(self.labels, decision.reason)
        log.debug("gate held %s in %s: %s", envelope.id, self._queue.queue_name, decision.reason)
        return decision

    def _routable(self, envelope: Envelope) -> Envelope:
        """``envelope``, unless its result route names a key this processor reads from (then
        INVALID_REQUEST, on the queue's route)."""
        problem = route_problem(envelope.result_route, reserved_routes(self._rt))
        if problem is None:
            return envelope
        raise EntryError(problem, entry_id=envelope.id, request_token=envelope.request_token)

    async def _is_cancelled(self, envelope: Envelope) -> bool:
        return await self._rt.broker.is_cancelled(envelope.id, envelope.request_token)

    async def _settle_cancelled(self, entry: Entry, envelope: Envelope) -> EntryDecision:
        record = cancelled_result(envelope.id, envelope.request_token)
        return await self._settle(entry, envelope, record, None)

    def stamped(self, envelope: Envelope) -> Envelope:
        """``envelope`` stamped with this queue: its id, name and labels (a classification
        comes only from this processor's gates)."""
        labels = {**envelope.internal.labels, **self._queue.labels}
        labels.pop(CLASSIFICATION_LABEL, None)
        return envelope.with_internal(
            queue_id=self._queue.id, request_queue_name=self._queue.queue_name, labels=labels
        )

    async def _bad_entry(self, entry: Entry, exc: EntryError) -> None:
        if not exc.readable:
            now = self._rt.clock.now()
            if await self._rt.broker.quarantine(entry, reason=exc.message, now=now):
                self._rt.metrics.entry_quarantined(self.labels)
                log.warning(
                    "moved unreadable entry %s of %s aside to its invalid list: %s",
                    exc.entry_id or f"sha256:{member_digest(entry.member)}",
                    entry.queue,
                    exc.message,
                )
            return
        record = invalid_entry_result(exc)
        claim = await self._claim(entry, record.id, exc.request_token)
        if claim is not None:
            await self._recorder.settle(claim, record, exc.result_route, self._queue)
            self._rt.metrics.outcome(self.labels, "failed")

    async def _too_late(
        self, entry: Entry, envelope: Envelope, deadline: float, now: float
    ) -> EntryDecision | None:
        """Deadline passed: its last HTTP answer, else DEADLINE_EXCEEDED; less time left than
        the queue's requests take: DEADLINE_EXCEEDED, infeasible, at once. None: time enough."""
        token, remaining = envelope.request_token, deadline - now
        if remaining <= 0:
            last = self._rt.memory.last_answer(envelope.id, token)
            record = deadline_result(envelope.id, token, last)
        elif (needed := self._rt.service.shortfall(self._queue.id, remaining, now)) is not None:
            record = infeasible_result(envelope.id, token, remaining, needed)
            self._rt.metrics.infeasible(self.labels)
        else:
            return None
        return await self._settle(entry, envelope, record, "exceeded_deadline")

    async def admit(
        self, gate: Gate, entry: Entry, envelope: Envelope, now: float, chosen: int
    ) -> EntryDecision:
        """The queue gate: ADMITTED (a candidate for the batch claim, stamped with the gate's
        classification), HELD / CLOSED (stays pending) or SETTLED (the gate dropped it)."""
        if not await self._within_budget(gate, now, chosen):
            return EntryDecision.held("gate_closed", closed=True)
        owner = new_owner()
        holdings = Holdings()
        request = gate_request(
            envelope,
            holder=holder_token(envelope.request_token, owner),
            lease_until=self._rt.lease_until(float(envelope.data.deadline)),
        )
        decision = await apply_gate(gate, request, holdings, now)  # rolls back
        if decision.verdict is Verdict.DROP:
            return await self._drop(entry, envelope, decision)
        if not decision.admitted:
            return EntryDecision.held(gate_reason(decision.verdict, decision.classification))
        envelope = _classified(envelope, decision.classification)
        return EntryDecision.admitted(Candidate(entry, envelope, owner, holdings))

    async def _within_budget(self, gate: Gate, now: float, chosen: int) -> bool:
        budget = await gate.budget(now)
        self._rt.metrics.budget_read(self.labels, budget)
        in_flight = self._rt.book.count_for_queue(self._queue.queue_name) + chosen
        spec = self._pool.spec
        return budget_allows(budget, in_flight, spec.workers, self._rt.shares(spec.id))

    async def _take(self, chosen: list[Candidate]) -> tuple[int, int]:
        """Claim the chosen candidates in one call; buffer the winners, answer the cancelled;
        returns (admitted, lost claims)."""
        if not chosen:
            return 0, 0
        asks = [c.ask(self._rt.lease_until(c.deadline)) for c in chosen]
        outcomes = await self._rt.broker.claim_many(asks)
        admitted = lost = 0
        for candidate, outcome in zip(chosen, outcomes, strict=True):
            if outcome.claim is None:
                lost += 1
                await candidate.holdings.release_all()
            elif outcome.cancelled:
                await candidate.holdings.release_all()
                e = candidate.envelope
                await self._answer(outcome.claim, e, cancelled_result(e.id, e.request_token), None)
            else:
                self._buffer(candidate, outcome.claim)
                admitted += 1
                log.debug("claimed %s from %s", candidate.envelope.id, self._queue.queue_name)
        return admitted, lost

    def _buffer(self, candidate: Candidate, claim: Claim) -> None:
        envelope = candidate.envelope
        labels, tier = envelope.internal.labels, self._rt.settings.merge.tier_label
        lane = lane_for(labels.get(CLASSIFICATION_LABEL), labels.get(tier))
        item = WorkItem(
            claim=claim,
            envelope=envelope,
            queue=self._queue,
            lane=lane,
            labels=self.labels,
            owner=candidate.owner,
            ingested_at=self._rt.clock.monotonic(),
            holdings=candidate.holdings,
        )
        self._rt.book.add(item)
        self._rt.metrics.buffered(self.labels)
        self._pool.put(item, newest_first=self.order.order.reverse)

    async def _drop(self, entry: Entry, envelope: Envelope, decision: Decision) -> EntryDecision:
        if await self._is_cancelled(envelope):
            return await self._settle_cancelled(entry, envelope)
        record = dropped_result(envelope.id, envelope.request_token, decision)
        self._rt.metrics.gate_held(self.labels, "dropped")
        return await self._settle(entry, envelope, record, "failed")

    async def _settle(
        self, entry: Entry, envelope: Envelope, record: ResultRecord, counter: str | None
    ) -> EntryDecision:
        claim = await self._claim(entry, envelope.id, envelope.request_token)
        if claim is not None:
            await self._answer(claim, envelope, record, counter)
        return SETTLED

    async def _answer(
        self, claim: Claim, envelope: Envelope, record: ResultRecord, counter: str | None
    ) -> None:
        if await self._recorder.settle(claim, record, envelope.result_route, self._queue):
            if counter is not None:
                self._rt.metrics.outcome(self.labels, counter)
            self._rt.memory.forget(envelope.id, envelope.request_token)

    async def _claim(self, entry: Entry, request_id: str, token: str) -> Claim | None:
        """A short claim taken only to answer the entry at once."""
        return await self._rt.broker.claim(
            entry,
            key=claim_key(request_id, token),
            owner=new_owner(),
            lease_until=self._rt.clock.now() + SETTLE_CLAIM_LEASE,
        )


def _classified(envelope: Envelope, classification: str | None) -> Envelope:
    """``envelope`` stamped with the queue gate's classification (its lane follows it)."""
    if classification is None:
        return envelope
    labels = {**envelope.internal.labels, CLASSIFICATION_LABEL: classification}
    return envelope.with_internal(labels=labels)
