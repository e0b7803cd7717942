"""The router's HTTP surface under hostile bodies, headers, paths and methods (issue 26).

One router (flow control on) in front of one simulator for the whole module; each example is
one request over loopback. No answer may be a 5xx (the simulator is healthy, so even 502/503
would be a fault here), nothing may be logged with a traceback, and the router still answers
``/healthz`` after each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from fuzz_profiles import for_surface
from fuzz_strategies import (
    COMPLETION,
    assert_sound,
    bodies,
    client,
    encode,
    header_lists,
    known_paths,
    methods,
    paths,
    send,
)
from fuzz_strategies import (
    FAST_SIM as SIM,
)
from hypothesis import given
from hypothesis import strategies as st

from integration.router.router_harness import GUIDE_OBJECTIVES, Rig, fc_config, running_router

pytestmark = pytest.mark.asyncio(loop_scope="module")

GENERATE = st.sampled_from(("/v1/completions", "/v1/chat/completions"))


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rig() -> AsyncIterator[Rig]:
    async with running_router(fc_config(), sim=SIM, objectives=GUIDE_OBJECTIVES) as rig:
        yield rig


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with client() as session:
        yield session


@for_surface("router-bodies")
@given(path=GENERATE, body=bodies(), json_type=st.booleans())
async def test_bodies(
    rig: Rig,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: bytes,
    json_type: bool,
) -> None:
    caplog.clear()
    headers = [("content-type", "application/json")] if json_type else []
    reply = await send(session, "POST", rig.url + path, headers=headers, body=body)
    await assert_sound(session, rig.url, reply, caplog)


@for_surface("router-headers")
@given(path=GENERATE, headers=header_lists)
async def test_headers(
    rig: Rig,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    path: str,
    headers: list[tuple[str, str]],
) -> None:
    caplog.clear()
    body = encode(COMPLETION)
    reply = await send(session, "POST", rig.url + path, headers=headers, body=body)
    await assert_sound(session, rig.url, reply, caplog)


@for_surface("router-paths")
@given(method=methods, path=paths | known_paths, body=st.none() | bodies())
async def test_paths_and_methods(
    rig: Rig,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: bytes | None,
) -> None:
    caplog.clear()
    reply = await send(session, method, rig.url + path, body=body)
    await assert_sound(session, rig.url, reply, caplog)
