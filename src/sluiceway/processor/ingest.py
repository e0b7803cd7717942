"""Ingest of one queue: peek, decode, settle what cannot run, gate, claim, hand to the pool.

Steps per entry (each a method): decode (unreadable -> ``<queue>:invalid``; readable but bad
-> INVALID_REQUEST); expire (DEADLINE_EXCEEDED, or the last HTTP answer this process saw);
cancelled (CANCELLED); queue gates (Continue -> claim; Wait / Refuse / Error -> stays pending,
the scan skips it; Drop -> GATE_DROPPED). Admitted requests are claimed with a lease and put in
the pool's ready buffer in their lane. Ingest sleeps until an arrival, a finished request or
the poll interval, whichever comes first.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field
from enum import Enum

from sluiceway.broker.base import Claim, ClaimAsk, Entry, claim_key
from sluiceway.broker.keys import member_digest
from sluiceway.gates.base import (
    CLASSIFICATION_LABEL,
    Decision,
    Gate,
    GateRequest,
    Holdings,
    Verdict,
    apply_chain,
    budget_allows,
)
from sluiceway.observability.logging import outage_log
from sluiceway.processor.item import WorkItem, holder_token
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.outcome import deadline_result
from sluiceway.processor.pool import PoolRuntime
from sluiceway.processor.record import Recorder, dropped_result
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.settings import QueueSpec
from sluiceway.wire import EntryError, Envelope, ErrorCode, ResultRecord, decode_envelope, lane_for

__all__ = ["Candidate", "Held", "QueueIngest", "Scan", "Taken"]

log = logging.getLogger(__name__)


class Taken(Enum):
    """What happened to one examined entry."""

    ADMITTED = "admitted"  # claimed and buffered
    SETTLED = "settled"  # answered or moved aside: no longer pending
    SKIPPED = "skipped"  # left pending (gate said not now)
    CLOSED = "closed"  # the queue's budget is spent: stop scanning


def gate_reason(verdict: Verdict, classification: str | None) -> str:
    """The ``gate_decisions_total`` reason of a held request (upstream's rule)."""
    if verdict is Verdict.ERROR:
        return "error"
    if verdict is Verdict.DROP:
        return "dropped"
    return "quota_exhausted" if classification == "overflow" else "gate_closed"


@dataclass(slots=True)
class Candidate:
    """An entry that passed decode, expiry and the queue gates; it waits for the batch claim.
    ``holdings`` are what its gates acquired (released again if the claim is lost)."""

    entry: Entry
    envelope: Envelope
    owner: str
    holdings: Holdings

    @property
    def deadline(self) -> float:
        return float(self.envelope.data.deadline)

    def ask(self, lease_until: float) -> ClaimAsk:
        e = self.envelope
        return ClaimAsk(self.entry, e.id, e.request_token, self.owner, lease_until)


@dataclass(frozen=True, slots=True)
class Held:
    """The queue gates hold an entry: it stays pending (``closed``: the queue's budget is
    spent, stop scanning). ``reason`` is its ``gate_decisions_total`` reason."""

    reason: str
    closed: bool = False


@dataclass(slots=True)
class Scan:
    """What screening one peeked batch found."""

    chosen: list[Candidate] = field(default_factory=list)
    skipped: int = 0
    closed: bool = False


class QueueIngest:
    """The ingest task of one queue."""

    def __init__(self, rt: Runtime, queue: QueueSpec, pool: PoolRuntime, gate: Gate | None) -> None:
        self._rt = rt
        self._queue = queue
        self._pool = pool
        self._recorder = Recorder(rt)
        self.gate = gate
        self.labels = QueueLabels(queue.id, queue.queue_name, queue.pool_id)
        self._stopped = False

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
            generation = self._rt.work_changed.generation
            outage = outage_log(self._rt.broker, "broker", log)
            try:
                await self.poll_once()
            except Exception as exc:  # a broker hiccup must not end ingest
                outage.failed(exc, f"ingest of {self._queue.queue_name}")
                await self._rt.clock.sleep(self._rt.settings.poll_interval)
                continue
            outage.succeeded()
            if not self._running:
                break
            await self._idle(generation)

    async def _idle(self, generation: int) -> None:
        if self._rt.work_changed.generation != generation:
            await asyncio.sleep(0)  # something finished meanwhile: poll again at once
            return
        block_for = self._rt.wall(self._rt.settings.poll_interval)
        arrival = asyncio.ensure_future(
            self._rt.broker.wait_for_work([self._queue.queue_name], block_for)
        )
        changed = asyncio.ensure_future(self._rt.work_changed.wait(block_for, since=generation))
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
        admitted = skipped = 0
        limit = self._rt.settings.batch_size
        while self._running and (room := self._pool.room_for(self._queue.queue_name)) > 0:
            entries = await self._rt.broker.peek(self._queue.queue_name, limit, offset=skipped)
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
        return admitted

    async def screen(self, entries: list[Entry], room: int, skips_left: int) -> Scan:
        """Settle what cannot run and pass the rest through the queue gates, in score order,
        until ``room`` candidates are chosen or ``skips_left`` entries were skipped."""
        scan = Scan()
        for entry in entries:
            taken = await self.consider(entry, len(scan.chosen))
            if isinstance(taken, Candidate):
                scan.chosen.append(taken)
            elif taken is Taken.CLOSED:
                scan.closed = True
            scan.skipped += taken is Taken.SKIPPED
            if scan.closed or len(scan.chosen) >= room or scan.skipped >= skips_left:
                break
        return scan

    # -- steps -------------------------------------------------------------------------------

    async def consider(self, entry: Entry, chosen: int) -> Taken | Candidate:
        """Decide for one pending entry; ``chosen`` candidates of this batch await their claim.

        The dequeue cancellation check of an admitted request rides on the batch claim; a
        request the gates hold (or would drop) is checked here, so a cancelled request never
        waits behind a closed gate.
        """
        envelope = await self.decode(entry)
        if envelope is None:
            return Taken.SETTLED
        now = self._rt.clock.now()
        if float(envelope.data.deadline) <= now:
            return await self.expire(entry, envelope)
        verdict = await self.admit(entry, envelope, now, chosen)
        if not isinstance(verdict, Held):
            return verdict
        if await self._is_cancelled(envelope):
            return await self._settle(entry, envelope, self._cancelled_record(envelope), None)
        self._rt.metrics.gate_decisions.labels(*self.labels.values(), verdict.reason).inc()
        log.debug("gate held %s in %s: %s", envelope.id, self._queue.queue_name, verdict.reason)
        return Taken.CLOSED if verdict.closed else Taken.SKIPPED

    async def _is_cancelled(self, envelope: Envelope) -> bool:
        return await self._rt.broker.is_cancelled(envelope.id, envelope.request_token)

    @staticmethod
    def _cancelled_record(envelope: Envelope) -> ResultRecord:
        token = envelope.request_token
        return ResultRecord.error(envelope.id, ErrorCode.CANCELLED, request_token=token)

    async def decode(self, entry: Entry) -> Envelope | None:
        """The stamped envelope, or None after settling an entry that cannot run."""
        try:
            envelope = decode_envelope(entry.member)
        except EntryError as exc:
            await self._bad_entry(entry, exc)
            return None
        labels = {**envelope.internal.labels, **self._queue.labels}
        labels.pop(CLASSIFICATION_LABEL, None)
        return envelope.with_internal(
            queue_id=self._queue.id, request_queue_name=self._queue.queue_name, labels=labels
        )

    async def _bad_entry(self, entry: Entry, exc: EntryError) -> None:
        if not exc.readable:
            now = self._rt.clock.now()
            if await self._rt.broker.quarantine(entry, reason=exc.message, now=now):
                self._rt.metrics.invalid.labels(*self.labels.values()).inc()
                log.warning(
                    "moved unreadable entry %s of %s aside to its invalid list: %s",
                    exc.entry_id or f"sha256:{member_digest(entry.member)}",
                    entry.queue,
                    exc.message,
                )
            return
        assert exc.entry_id is not None
        record = ResultRecord.error(
            exc.entry_id, exc.code, exc.message, request_token=exc.request_token
        )
        claim = await self._claim(entry, exc.entry_id, exc.request_token)
        if claim is not None:
            await self._recorder.settle(claim, record, exc.result_route, self._queue)
            self._rt.metrics.failures.labels(*self.labels.values()).inc()

    async def expire(self, entry: Entry, envelope: Envelope) -> Taken:
        """Answer an entry whose deadline passed while it was pending."""
        token = envelope.request_token
        record = deadline_result(
            envelope.id, token, self._rt.memory.last_answer(envelope.id, token)
        )
        return await self._settle(entry, envelope, record, "exceeded_deadline")

    async def admit(
        self, entry: Entry, envelope: Envelope, now: float, chosen: int
    ) -> Taken | Candidate | Held:
        """Queue gates; an admitted request becomes a candidate for the batch claim."""
        if not await self._within_budget(now, chosen):
            return Held("gate_closed", closed=True)
        owner = secrets.token_hex(8)
        labels = dict(envelope.internal.labels)
        holdings = Holdings()
        if self.gate is not None:
            request = GateRequest(
                request_id=envelope.id,
                request_token=envelope.request_token,
                holder=holder_token(envelope.request_token, owner),
                deadline=float(envelope.data.deadline),
                lease_until=self._rt.lease_until(float(envelope.data.deadline)),
                metadata=envelope.data.metadata,
                labels=labels,
            )
            decision = await apply_chain([self.gate], request, holdings, now)  # rolls back
            if decision.verdict is Verdict.DROP:
                return await self._drop(entry, envelope, decision)
            if not decision.admitted:
                return Held(gate_reason(decision.verdict, labels.get(CLASSIFICATION_LABEL)))
            envelope = envelope.with_internal(labels=labels)
        return Candidate(entry, envelope, owner, holdings)

    async def _within_budget(self, now: float, chosen: int) -> bool:
        if self.gate is None:
            return True
        budget = await self.gate.budget(now)
        self._rt.metrics.budget.labels(*self.labels.values()).set(budget)
        in_flight = self._rt.book.count_for_queue(self._queue.queue_name) + chosen
        return budget_allows(budget, in_flight, self._pool.spec.workers)

    async def _take(self, chosen: list[Candidate]) -> tuple[int, int]:
        """Claim the chosen candidates in one call; buffer the winners, answer the cancelled.

        Returns (admitted, lost claims)."""
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
                record = self._cancelled_record(candidate.envelope)
                await self._answer(outcome.claim, candidate.envelope, record, None)
            else:
                await self._buffer(candidate, outcome.claim)
                admitted += 1
                log.debug("claimed %s from %s", candidate.envelope.id, self._queue.queue_name)
        return admitted, lost

    async def _buffer(self, candidate: Candidate, claim: Claim) -> None:
        envelope = candidate.envelope
        merge = self._rt.settings.merge
        lane = lane_for(
            envelope.internal.labels.get(CLASSIFICATION_LABEL),
            envelope.internal.labels.get(merge.tier_label),
        )
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
        self._rt.metrics.queue_depth.labels(*self.labels.values()).inc()
        await self._pool.put(item)

    async def _drop(self, entry: Entry, envelope: Envelope, decision: Decision) -> Taken:
        if await self._is_cancelled(envelope):
            return await self._settle(entry, envelope, self._cancelled_record(envelope), None)
        record = dropped_result(envelope.id, envelope.request_token, decision)
        self._rt.metrics.gate_decisions.labels(*self.labels.values(), "dropped").inc()
        return await self._settle(entry, envelope, record, "failed")

    async def _settle(
        self, entry: Entry, envelope: Envelope, record: ResultRecord, counter: str | None
    ) -> Taken:
        claim = await self._claim(entry, envelope.id, envelope.request_token)
        if claim is not None:
            await self._answer(claim, envelope, record, counter)
        return Taken.SETTLED

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
            owner=secrets.token_hex(8),
            lease_until=self._rt.clock.now() + 60.0,
        )
