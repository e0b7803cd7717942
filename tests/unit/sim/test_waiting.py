"""The waiting queue: FCFS with preempted requests in front, or priority then arrival."""

from __future__ import annotations

from sluiceway.sim.sequence import SeqState, Sequence, SimRequest
from sluiceway.sim.waiting import WaitingQueue


def _seq(order: int, priority: int = 0) -> Sequence:
    return Sequence(SimRequest(str(order), (1,), 1, priority=priority), 0.0, order, 0)


def _drain(queue: WaitingQueue) -> list[str]:
    out = []
    while (seq := queue.peek()) is not None:
        queue.pop()
        out.append(seq.request_id)
    return out


def test_fcfs_puts_a_preempted_request_first() -> None:
    queue = WaitingQueue("fcfs")
    for seq in (_seq(0), _seq(1)):
        queue.push(seq)
    queue.push(_seq(2), front=True)
    assert _drain(queue) == ["2", "0", "1"]


def test_priority_orders_by_priority_then_arrival_and_skips_aborted() -> None:
    queue = WaitingQueue("priority")
    seqs = [_seq(0, 5), _seq(1, -1), _seq(2, 5), _seq(3, 0)]
    for seq in seqs:
        queue.push(seq)
    seqs[3].state = SeqState.FINISHED  # aborted while waiting
    queue.discard(seqs[3])
    assert len(queue) == 3
    assert _drain(queue) == ["1", "0", "2"]
