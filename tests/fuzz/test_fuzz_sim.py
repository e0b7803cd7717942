"""The simulator's vLLM request surface under hostile bodies and headers (issue 26).

One simulator for the whole module; completions and chat bodies mutated from valid ones, plus
deep, non-JSON and non-UTF-8 ones. A vLLM server answers a bad request 400 (or 404 for an
unknown model), never 500: so must the simulator, and it still answers ``/healthz`` after.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from fuzz_profiles import for_surface
from fuzz_strategies import (
    CHAT,
    COMPLETION,
    assert_sound,
    bodies,
    client,
    encode,
    header_lists,
    send,
)
from fuzz_strategies import (
    FAST_SIM as SIM,
)
from hypothesis import given
from hypothesis import strategies as st

from sluiceway.sim import SimPool, running_simulator

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEEDS = {"/v1/completions": COMPLETION, "/v1/chat/completions": CHAT}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sim() -> AsyncIterator[SimPool]:
    async with running_simulator(SIM) as pool:
        yield pool


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with client() as session:
        yield session


@pytest.mark.parametrize("path", list(SEEDS))
@for_surface("sim-bodies")
@given(data=st.data())
async def test_bodies(
    sim: SimPool,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    path: str,
    data: st.DataObject,
) -> None:
    caplog.clear()
    body = data.draw(bodies((SEEDS[path],)), label="body")
    reply = await send(session, "POST", sim.urls[0] + path, body=body)
    await assert_sound(session, sim.urls[0], reply, caplog)


@for_surface("sim-headers")
@given(path=st.sampled_from(list(SEEDS)), headers=header_lists)
async def test_headers(
    sim: SimPool,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    path: str,
    headers: list[tuple[str, str]],
) -> None:
    caplog.clear()
    reply = await send(
        session, "POST", sim.urls[0] + path, headers=headers, body=encode(SEEDS[path])
    )
    await assert_sound(session, sim.urls[0], reply, caplog)
