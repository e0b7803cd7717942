"""The coordinator's HTTP surface under hostile requests, standalone and mounted in the router
(issue 26), for each value of the mode header: passthrough, wait, enqueue and junk.

Both fronts run for the whole module on one memory broker each, with no processor: an entry
queued stays queued, so each broker's backlog tells exactly what a request queued. No answer
may be a 5xx, nothing may be logged with a traceback, a 4xx queues nothing (the backlog is
unchanged), and the front still answers ``/healthz`` after each example. A valid wait-mode
request is held until the wait cap (a short one here) and answered 202.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
import pytest_asyncio
from fuzz_profiles import for_surface
from fuzz_strategies import (
    CHAT,
    COMPLETION,
    Reply,
    assert_sound,
    bodies,
    client,
    header_lists,
    header_names,
    header_values,
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

from integration.coordinator.coordinator_rig import guide_params
from integration.router.router_harness import GUIDE_OBJECTIVES, fc_config, running_router
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.forwarding import HttpForwarder
from sluiceway.coordinator.server import build_coordinator, mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.serving import start_server
from sluiceway.sim import running_simulator
from sluiceway.wire import headers as wire

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODES = ("passthrough", "wait", "enqueue", "junk")
JUNK_MODES = st.sampled_from(("", " ", "WAITING", "pass-through", "enqueue\t1", "ünï")) | (
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=12)
).filter(lambda v: v.strip().lower() not in MODES[:3])
TENANTS = st.sampled_from(("premium", "standard", "batch", "realtime", "a:b", "", " ")) | st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=12
)
IDS = st.one_of(
    st.sampled_from(("abc", "a" * 128, "a" * 129, "-", "..", "%00", "%2F", "a%20b", "ü", "%ff")),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="/?#"),
            min_size=1, max_size=140),
)  # fmt: skip


@dataclass
class Front:
    name: str
    url: str
    broker: MemoryBroker
    params: AsyncBrokerParams

    async def backlog(self) -> int:
        queues = {self.params.default_queue, *(r.queue for r in self.params.routes if r.queue)}
        return sum([await self.broker.backlog(queue) for queue in sorted(queues)])


def _params() -> AsyncBrokerParams:
    return guide_params(wait_cap_seconds=0.05)


@contextlib.asynccontextmanager
async def _standalone() -> AsyncIterator[Front]:
    clock, broker = RealClock(), MemoryBroker()
    async with running_simulator(SIM, clock=clock) as sim, contextlib.AsyncExitStack() as stack:
        forwarder = HttpForwarder(sim.urls[0], timeout=30)
        stack.push_async_callback(forwarder.aclose)
        params = _params()
        coordinator = build_coordinator(
            params, broker=broker, quota_store=MemoryQuotaStore(), forwarder=forwarder, clock=clock
        )
        server = await start_server(coordinator.app(), name="coordinator")
        stack.push_async_callback(server.stop)
        yield Front("standalone", server.url, broker, params)


@contextlib.asynccontextmanager
async def _mounted() -> AsyncIterator[Front]:
    broker = MemoryBroker()
    async with running_router(fc_config(), sim=SIM, objectives=GUIDE_OBJECTIVES) as rig:
        params = _params()
        quota = MemoryQuotaStore()
        mount_coordinator(rig.app, params, broker=broker, quota_store=quota, clock=rig.clock)
        yield Front("mounted", rig.url, broker, params)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def fronts() -> AsyncIterator[dict[str, Front]]:
    async with _standalone() as alone, _mounted() as mounted:
        yield {"standalone": alone, "mounted": mounted}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with client() as session:
        yield session


async def _checked(
    front: Front,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    *,
    headers: list[tuple[str, str]],
    body: bytes | None = None,
) -> Reply:
    """Send one request and run every check on it, the backlog's included."""
    caplog.clear()
    before = await front.backlog()
    reply = await send(session, method, front.url + path, headers=headers, body=body)
    await assert_sound(session, front.url, reply, caplog)
    if 400 <= reply.status < 500:
        assert await front.backlog() == before, (reply.status, reply.body[:300])
    return reply


def _identity(tenant: str | None) -> list[tuple[str, str]]:
    return [] if tenant is None else [(wire.TENANT, tenant)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["standalone", "mounted"])
@for_surface("coordinator-requests")
@given(
    data=st.data(),
    path=st.sampled_from(("/v1/completions", "/v1/chat/completions")) | known_paths | paths,
    method=st.just("POST") | methods,
    body=bodies((COMPLETION, CHAT)),
    headers=header_lists,
    tenant=st.none() | TENANTS,
)
async def test_requests(
    fronts: dict[str, Front],
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    where: str,
    mode: str,
    data: st.DataObject,
    path: str,
    method: str,
    body: bytes,
    headers: list[tuple[str, str]],
    tenant: str | None,
) -> None:
    value = data.draw(JUNK_MODES) if mode == "junk" else mode
    sent = [(wire.ASYNC_MODE, value), *_identity(tenant), *headers]
    await _checked(fronts[where], session, caplog, method, path, headers=sent, body=body)


@pytest.mark.parametrize("where", ["standalone", "mounted"])
@for_surface("coordinator-request-ids")
@given(
    method=st.sampled_from(("GET", "DELETE")),
    request_id=IDS,
    tenant=st.none() | TENANTS,
    extra=st.lists(st.tuples(header_names, header_values), max_size=3),
)
async def test_request_ids(
    fronts: dict[str, Front],
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    where: str,
    method: str,
    request_id: str,
    tenant: str | None,
    extra: list[tuple[str, str]],
) -> None:
    headers = [*_identity(tenant), *extra]
    path = "/v1/requests/" + request_id
    await _checked(fronts[where], session, caplog, method, path, headers=headers)
