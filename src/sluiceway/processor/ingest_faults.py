"""What a queue's ingest does when something other than a lost connection fails (issue 26):
one bad entry must never stop a queue, and a fault that repeats is told once.

- A poll that fails as a whole (a queue key of the wrong type, a bug) is logged once while the
  same fault repeats, counted every time (``entry_faults_total{stage="ingest"}``) and polled
  again with a growing backoff; one line says when it works again.
- One entry whose examination fails is skipped, so the entries behind it are served; after
  :data:`~sluiceway.processor.poison.MAX_IDENTICAL_FAULTS` identical failures it is moved to
  ``<queue>:invalid`` with the fault as its reason.

Lost connections stay with the broker's :class:`~sluiceway.observability.logging.OutageLog`.
"""

from __future__ import annotations

import logging

from sluiceway.broker.base import Entry
from sluiceway.broker.keys import member_digest
from sluiceway.observability.logging import OutageLog, is_connection_error
from sluiceway.processor.entry_decision import SETTLED, EntryDecision
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.poison import MAX_IDENTICAL_FAULTS, FaultTally, describe, fault_backoff
from sluiceway.processor.runtime import Runtime

__all__ = ["FAULT_BACKOFF_CAP", "IngestFaults"]

log = logging.getLogger("sluiceway.processor.ingest")

# Scaled seconds: the longest wait between polls of a queue whose poll keeps failing.
FAULT_BACKOFF_CAP = 5.0


class IngestFaults:
    """The fault handling of one queue's ingest."""

    def __init__(self, rt: Runtime, queue: str, labels: QueueLabels) -> None:
        self._rt = rt
        self._queue = queue
        self._labels = labels
        self._poll = FaultTally(capacity=1)

    def poll_failed(self, outage: OutageLog, exc: Exception) -> float:
        """Report a failed poll; the scaled seconds to wait before the next one."""
        doing, interval = f"ingest of {self._queue}", self._rt.settings.poll_interval
        if is_connection_error(exc):
            outage.failed(exc, doing)
            return interval
        self._rt.metrics.fault(self._labels, "ingest")
        repeats = self._poll.seen(None, describe(exc))
        if repeats == 1:
            log.error("%s failed: %s; retrying with backoff, told once", doing, describe(exc))
            log.debug("%s failed", doing, exc_info=exc)
        return fault_backoff(repeats, interval, max(interval, FAULT_BACKOFF_CAP))

    def poll_succeeded(self) -> None:
        if (repeats := self._poll.clear(None)) > 0:
            log.info("ingest of %s works again after %d failures", self._queue, repeats)

    async def entry_failed(self, entry: Entry, exc: Exception) -> EntryDecision:
        """Skip an entry whose examination failed; quarantine it once the same fault
        repeated. A lost connection is re-raised (the poll as a whole waits it out)."""
        if is_connection_error(exc):
            raise exc
        digest, fault = member_digest(entry.member), describe(exc)
        self._rt.metrics.fault(self._labels, "ingest")
        repeats = self._rt.faults.seen(("entry", entry.queue, digest), fault)
        if repeats == 1:
            log.error("ingest of entry sha256:%s of %s failed: %s; skipped, told once",
                      digest, entry.queue, fault, exc_info=exc)  # fmt: skip
        if repeats < MAX_IDENTICAL_FAULTS:
            return EntryDecision.held("fault")
        self._rt.faults.clear(("entry", entry.queue, digest))
        reason = f"ingest failed {repeats} times: {fault}"
        if await self._rt.broker.quarantine(entry, reason=reason, now=self._rt.clock.now()):
            self._rt.metrics.entry_quarantined(self._labels)
            log.warning("moved entry sha256:%s of %s to its invalid list: %s",
                        digest, entry.queue, reason)  # fmt: skip
        return SETTLED
