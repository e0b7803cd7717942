"""Ingest's values: a scan collects admitted candidates, counts held entries and stops at a
closed budget."""

from __future__ import annotations

from sluiceway.broker.base import Entry
from sluiceway.gates.base import Holdings
from sluiceway.processor.entry_decision import SETTLED, Candidate, EntryDecision, Fate, Scan
from sluiceway.wire import decode_envelope

MEMBER = (
    '{"internal": {}, "request_kind": "plain", "data": {"id": "r1", "deadline": 100, '
    '"payload": {"model": "m", "prompt": "p"}}}'
)


def test_a_scan_collects_candidates_counts_holds_and_stops_when_closed() -> None:
    entry = Entry("q", MEMBER, 100.0)
    candidate = Candidate(entry, decode_envelope(MEMBER), "owner", Holdings())
    scan = Scan()
    for decision in (
        EntryDecision.admitted(candidate),
        EntryDecision.held("gate_closed"),
        SETTLED,
        EntryDecision.held("quota_exhausted", closed=True),
    ):
        scan.add(decision)
    assert scan.chosen == [candidate] and scan.skipped == 1 and scan.closed
    assert candidate.deadline == 100.0
    ask = candidate.ask(lease_until=160.0)
    assert (ask.request_id, ask.owner, ask.lease_until) == ("r1", "owner", 160.0)
    assert EntryDecision.held("x", closed=True).fate is Fate.CLOSED
