"""Poison entries and repeating faults, the pure parts (issue 26)."""

from __future__ import annotations

from sluiceway.processor.poison import (
    FaultTally,
    describe,
    fault_backoff,
    reserved_keys,
    route_problem,
)


def test_reserved_keys_are_every_key_a_queue_is_read_from() -> None:
    keys = reserved_keys(("team-a",), "retry-sortedset")
    for key in ("team-a", "team-a:invalid", "team-a:claimed", "team-a:invalid:info",
                "{team-a}:claims-idx", "retry-sortedset", "{team-a}:retry-sortedset"):  # fmt: skip
        assert key in keys
    assert "results-list" not in keys and "" not in keys


def test_route_problem_names_the_route() -> None:
    reserved = reserved_keys(("q",))
    problem = route_problem("q:claimed", reserved)
    assert problem is not None and "'q:claimed'" in problem
    assert route_problem("results:req:t:1", reserved) is None
    assert route_problem(None, reserved) is None


def test_a_fault_is_counted_in_a_row_and_reset_by_another() -> None:
    tally = FaultTally(capacity=2)
    assert [tally.seen("a", "x"), tally.seen("a", "x"), tally.seen("a", "y")] == [1, 2, 1]
    tally.seen("b", "x")
    tally.seen("c", "x")  # "a" is the oldest: forgotten
    assert tally.seen("a", "y") == 1
    assert tally.clear("a") == 1 and tally.clear("a") == 0


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [fault_backoff(n, 0.1, 0.5) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.5]


def test_describe_is_one_line() -> None:
    assert describe(ValueError("bad\nsecond line")) == "ValueError: bad"
    assert describe(RuntimeError()) == "RuntimeError"
