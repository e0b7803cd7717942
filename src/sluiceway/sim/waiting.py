"""The engine's waiting queue: FCFS (a deque) or priority (a heap on priority, arrival).

Aborted entries are dropped lazily when they reach the front; ``len`` counts live ones only.
A preempted request goes back in front (FCFS) or at its original place (priority), as vLLM.
"""

from __future__ import annotations

import heapq
from collections import deque

from sluiceway.sim.sequence import SeqState, Sequence

__all__ = ["WaitingQueue"]


class WaitingQueue:
    """Waiting sequences in the order the scheduling policy admits them."""

    def __init__(self, policy: str) -> None:
        self._priority = policy == "priority"
        self._fifo: deque[Sequence] = deque()
        self._heap: list[tuple[int, int, Sequence]] = []
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def push(self, seq: Sequence, *, front: bool = False) -> None:
        """Enqueue ``seq``; ``front`` puts it first under FCFS (re-queued after preemption)."""
        self._live += 1
        if self._priority:
            heapq.heappush(self._heap, (seq.request.priority, seq.order, seq))
        elif front:
            self._fifo.appendleft(seq)
        else:
            self._fifo.append(seq)

    def peek(self) -> Sequence | None:
        """The next sequence to admit, skipping aborted ones."""
        if self._priority:
            while self._heap and self._heap[0][2].state is not SeqState.WAITING:
                heapq.heappop(self._heap)
            return self._heap[0][2] if self._heap else None
        while self._fifo and self._fifo[0].state is not SeqState.WAITING:
            self._fifo.popleft()
        return self._fifo[0] if self._fifo else None

    def pop(self) -> None:
        """Remove the sequence ``peek`` last returned (call ``peek`` first)."""
        if self._priority:
            heapq.heappop(self._heap)
        else:
            self._fifo.popleft()
        self._live -= 1

    def discard(self, seq: Sequence) -> None:
        """Account for a waiting sequence that left (aborted); it is skipped later."""
        self._live -= 1
