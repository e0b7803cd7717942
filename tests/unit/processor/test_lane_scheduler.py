"""Strict lanes, round-robin across queues, EDF inside a queue."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from sluiceway.processor.lane_scheduler import LaneScheduler


def drain_names(s: LaneScheduler[str]) -> list[str]:
    return list(s.drain())


def test_lower_lane_index_always_first() -> None:
    s: LaneScheduler[str] = LaneScheduler()
    s.add("ob", lane=5, queue="b", deadline=1)
    s.add("ri", lane=0, queue="p", deadline=99)
    s.add("ra", lane=1, queue="s", deadline=50)
    assert drain_names(s) == ["ri", "ra", "ob"]


def test_round_robin_across_queues_inside_a_lane() -> None:
    s: LaneScheduler[str] = LaneScheduler()
    for i in range(3):
        s.add(f"a{i}", lane=2, queue="a", deadline=i)
        s.add(f"b{i}", lane=2, queue="b", deadline=i)
    assert drain_names(s) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_earliest_deadline_first_inside_a_queue_ties_by_arrival() -> None:
    s: LaneScheduler[str] = LaneScheduler()
    s.add("late", lane=0, queue="q", deadline=30)
    s.add("early", lane=0, queue="q", deadline=10)
    s.add("early-2", lane=0, queue="q", deadline=10)
    assert drain_names(s) == ["early", "early-2", "late"]


def test_counts() -> None:
    s: LaneScheduler[str] = LaneScheduler()
    s.add("x", lane=3, queue="q", deadline=1)
    s.add("y", lane=3, queue="r", deadline=1)
    assert s.count_by_lane() == [0, 0, 0, 2, 0, 0]
    assert (len(s), s.count_for_queue("q")) == (2, 1)
    picked = s.pop()
    assert picked is not None and picked.lane == 3 and picked.queue == "q"
    assert s.count_for_queue("q") == 0 and len(s) == 1


def test_random_robin_ignores_lanes_and_keeps_edf_per_queue() -> None:
    s: LaneScheduler[str] = LaneScheduler("random-robin", rng=random.Random(7))
    s.add("q-late", lane=0, queue="q", deadline=9)
    s.add("q-early", lane=5, queue="q", deadline=1)
    s.add("r", lane=0, queue="r", deadline=5)
    out = drain_names(s)
    assert out.index("q-early") < out.index("q-late") and sorted(out) == ["q-early", "q-late", "r"]


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc"), st.integers(0, 9))))
def test_never_dispatches_a_lane_while_a_lower_index_waits(
    items: list[tuple[int, str, int]],
) -> None:
    s: LaneScheduler[int] = LaneScheduler()
    for n, (lane, queue, deadline) in enumerate(items):
        s.add(n, lane=lane, queue=queue, deadline=deadline)
    while (picked := s.pop()) is not None:
        assert all(count == 0 for count in s.count_by_lane()[: picked.lane])


def test_drain_queue_removes_only_that_queue() -> None:
    s: LaneScheduler[str] = LaneScheduler()
    s.add("a-late", lane=1, queue="a", deadline=9)
    s.add("a-early", lane=1, queue="a", deadline=1)
    s.add("a-other-lane", lane=4, queue="a", deadline=1)
    s.add("b", lane=1, queue="b", deadline=5)
    assert sorted(s.drain_queue("a")) == ["a-early", "a-late", "a-other-lane"]
    assert s.count_for_queue("a") == 0 and s.count_by_lane() == [0, 1, 0, 0, 0, 0]
    assert len(s) == 1
    assert drain_names(s) == ["b"] and len(s) == 0
    assert s.drain_queue("nothing") == []
