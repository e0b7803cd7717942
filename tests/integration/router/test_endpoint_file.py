"""``--endpoints-file`` watched while the router runs, in front of simulators: an edit reaches
traffic within a second, a removed endpoint drains, a broken edit keeps the list and is
logged once."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from membership_harness import Router, discovering_router, served
from router_harness import body, until

from sluiceway.clock import RealClock
from sluiceway.router.discovery import Discovery
from sluiceway.sim import SimConfig, running_simulator

WATCH_LOG = "sluiceway.router.path_watch"


async def _write_until(router: Router, listing: Path, text: str, members: set[str]) -> None:
    """Write ``text`` until the pool is ``members``: the watcher registers with the kernel some
    time after its task starts, and an edit before that is not seen."""
    for _ in range(50):
        _write(listing, text)
        try:
            await until(lambda: router.members() == members, limit=0.2)
            return
        except AssertionError:
            continue
    raise AssertionError(f"the pool never became {members}")


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _jobs(listing: Path) -> tuple[Discovery, RealClock]:
    return Discovery.from_flags(None, listing), RealClock()


async def test_an_edit_reaches_traffic_within_a_second(tmp_path: Path) -> None:
    async with running_simulator(SimConfig(), instances=2) as sims:
        a, b = sims.urls
        listing = tmp_path / "endpoints"
        listing.write_text(f"{a}\n")
        found, clock = _jobs(listing)
        async with discovering_router(
            found.endpoints, lambda app: found.jobs(app.gateway, clock)
        ) as router:
            await until(lambda: router.members() == {a})
            await _write_until(router, listing, f"{a}\n{b}\n", {a, b})
            listing.write_text(f"# b is gone\n{a}\n")
            await until(lambda: router.members() == {a})
            assert b not in router.pool.members  # idle: it left at once
            start = time.monotonic()
            listing.write_text(f"{a}\n{b}\n")
            await router.until_served_by(sims.engines[1])
            took = time.monotonic() - start
            print(f"endpoints file edit -> first request served by the new endpoint: {took:.3f} s")
            assert took < 1.0


async def test_a_removed_endpoint_finishes_its_streams_and_takes_no_new_request(
    tmp_path: Path,
) -> None:
    sim = SimConfig(inter_token_latency=0.01)
    async with running_simulator(sim, instances=2) as sims:
        a, b = sims.urls
        engine_a, engine_b = sims.engines
        listing = tmp_path / "endpoints"
        listing.write_text(f"{a}\n")
        found, clock = _jobs(listing)
        async with discovering_router(
            found.endpoints, lambda app: found.jobs(app.gateway, clock)
        ) as router:
            await until(lambda: router.members() == {a})
            payload = body(150, stream=True)

            async def stream() -> str:
                async with router.session.post(router.url + "/v1/completions", json=payload) as r:
                    return await r.text()

            running = asyncio.create_task(stream())
            await until(lambda: engine_a.num_running == 1)
            await _write_until(router, listing, f"{b}\n", {b})
            pool = router.pool
            assert pool.members[a].draining  # still finishing its stream
            for _ in range(3):
                assert await router.complete() == 200
            assert served(engine_b) == 3 and served(engine_a) == 0
            text = await running
            assert text.rstrip().endswith("data: [DONE]")
            assert served(engine_a) == 1
            await until(lambda: a not in pool.members)


async def test_a_broken_edit_keeps_the_list_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=WATCH_LOG)
    async with running_simulator(SimConfig(), instances=2) as sims:
        a, b = sims.urls
        listing = tmp_path / "endpoints"
        listing.write_text(f"{a}\n")
        found, clock = _jobs(listing)
        async with discovering_router(
            found.endpoints, lambda app: found.jobs(app.gateway, clock)
        ) as router:
            await _write_until(router, listing, f"{a}\n{b}\n", {a, b})

            def records(level: int) -> list[logging.LogRecord]:
                return [r for r in caplog.records if r.levelno == level and r.name == WATCH_LOG]

            reloads = len(records(logging.DEBUG))
            listing.write_text(f"{a}\nvllm-1:8000\n")
            await until(lambda: len(records(logging.ERROR)) == 1)
            listing.write_text(f"{a}\nvllm-1:8000\n# still wrong\n")
            await until(lambda: len(records(logging.DEBUG)) >= reloads + 2)
            (error,) = records(logging.ERROR)
            assert error.getMessage() == (
                "endpoints file reload failed, keeping the previous set: "
                "--endpoints-file line 2: 'vllm-1:8000' is not an http:// or https:// URL"
            )
            assert router.members() == {a, b}
            listing.write_text(f"{b}\n")
            await until(lambda: router.members() == {b})
            assert len(records(logging.ERROR)) == 1
