"""Child of ``bench processor_instructions``: one run of the processor (or the floor) under
callgrind. Run as a file with the measured tree first on ``PYTHONPATH``, so that ``bench`` and
``sluiceway`` are that tree's (a baseline checkout's, say)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys

from bench import processor_throughput as pt  # the measured tree's


async def _until_results(raw: object, n: int) -> int:
    """One results poll for every tree measured, so the harness costs each of them alike."""
    polls = 1
    while (done := await raw.llen(pt.RESULTS)) < n:  # type: ignore[attr-defined]
        polls += 1
        await asyncio.sleep(0.02 if n - done < 100 else 0.05)
    return polls


async def _run(mode: str, url: str, upstream: str, n: int, workers: int) -> None:
    pt._until_results = _until_results  # type: ignore[assignment]
    run = pt._e2e_throughput if mode == "processor" else pt._floor
    # Older trees counted round trips around the processor only: count the floor's too.
    counted = "count_round_trips" in inspect.getsource(pt._floor)
    wrap = mode == "floor" and not counted
    with pt.count_round_trips() if wrap else contextlib.nullcontext():
        await run(url, upstream, 200, workers)  # warm-up: imports, connections, caches
        if n:
            await run(url, upstream, n, workers)


if __name__ == "__main__":
    mode, url, upstream, n, workers = sys.argv[1:6]
    asyncio.run(_run(mode, url, upstream, int(n), int(workers)))
