"""Label counts: current and peak per value, and listeners that see every start and end."""

from __future__ import annotations

from sluiceway.sim.labels import LabelCounts

OBJ = "x-llm-d-inference-objective"


def test_peaks_survive_leaves() -> None:
    counts = LabelCounts((OBJ,))
    for _ in range(3):
        counts.enter(((OBJ, "batch"),))
    counts.leave(((OBJ, "batch"),))
    assert counts.running(OBJ) == {"batch": 2}
    assert counts.peak(OBJ) == {"batch": 3}


def test_listeners_see_every_start_and_end_until_unsubscribed() -> None:
    counts = LabelCounts((OBJ,))
    seen: list[tuple[int, str]] = []
    unsubscribe = counts.subscribe(lambda delta, labels: seen.append((delta, dict(labels)[OBJ])))
    counts.enter(((OBJ, "a"),))
    counts.leave(((OBJ, "a"),))
    unsubscribe()
    counts.enter(((OBJ, "b"),))
    assert seen == [(+1, "a"), (-1, "a")]
    assert counts.running(OBJ) == {"a": 0, "b": 1}
