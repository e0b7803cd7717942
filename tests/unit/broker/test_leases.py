"""Lease hooks run after reclaim rounds, at most once per scaled second, failures contained."""

from __future__ import annotations

from sluiceway.broker.leases import LeaseHooks


async def test_hooks_run_with_the_callers_now_and_are_spaced() -> None:
    seen: list[float] = []

    async def hook(now: float) -> None:
        seen.append(now)

    hooks = LeaseHooks()
    hooks.add(hook)
    for now in (100.0, 100.5, 101.0, 101.2, 103.0):
        await hooks.run(now)
    assert seen == [100.0, 101.0, 103.0]


async def test_a_failing_hook_does_not_stop_the_others() -> None:
    seen: list[float] = []

    async def broken(now: float) -> None:
        raise RuntimeError("redis down")

    async def fine(now: float) -> None:
        seen.append(now)

    hooks = LeaseHooks()
    hooks.add(broken)
    hooks.add(fine)
    await hooks.run(5.0)
    assert seen == [5.0]
