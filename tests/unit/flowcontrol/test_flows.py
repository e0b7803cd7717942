"""Flow queues: lazy deletion skips items that left without being popped."""

from __future__ import annotations

import heapq

from sluiceway.flowcontrol.base import FlowKey, Item, ItemState, Request
from sluiceway.flowcontrol.flows import Flow, HeapEntry, compact, has_live, pop_live


def queue(flow: Flow, n: int) -> list[Item]:
    items = []
    for seq in range(n):
        item = Item(Request(f"r{seq}"), flow, band=0, enqueue_time=float(seq), ttl=0.0, seq=seq)
        entry: HeapEntry = (item.key, seq, item)
        heapq.heappush(flow.heap, entry)
        items.append(item)
    return items


def test_pop_skips_items_that_left() -> None:
    flow = Flow(FlowKey("t", 0), 0.0)
    first, second, third = queue(flow, 3)
    first.state = ItemState.DONE  # cancelled while queued
    assert pop_live(flow.heap) is second
    second.state = ItemState.IN_FLIGHT
    assert has_live(flow.heap)
    third.state = ItemState.DONE
    assert not has_live(flow.heap) and flow.heap == []
    assert pop_live(flow.heap) is None


def test_compact_waits_until_stale_entries_dominate() -> None:
    flow = Flow(FlowKey("t", 0), 0.0)
    items = queue(flow, 100)
    for item in items[:50]:
        item.state = ItemState.DONE
    compact(flow.heap, live=50)
    assert len(flow.heap) == 100  # 100 <= 2 x 50 live: not yet
    for item in items[50:90]:
        item.state = ItemState.DONE
    compact(flow.heap, live=10)
    assert sorted(e[2].request.request_id for e in flow.heap) == sorted(
        i.request.request_id for i in items[90:]
    )
    assert pop_live(flow.heap) is items[90]


def test_idle_means_nothing_queued_and_nothing_in_flight() -> None:
    flow = Flow(FlowKey("t", 0), 5.0)
    assert flow.idle and flow.idle_since == 5.0
    flow.inflight = 1
    assert not flow.idle
