"""``--endpoints-dns``: every address of a name is a model server, re-resolved every interval
on the scaled clock; a failing name keeps its endpoints and is logged once. Simulators listen
on loopback addresses of their own (127.0.0.2, 127.0.0.3) on one port, as the Pods behind a
headless Service do."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator

import pytest
from membership_harness import Job, discovering_router
from router_harness import until

from sluiceway.clock import RealClock
from sluiceway.router.app import RouterApp
from sluiceway.router.discovery import Discovery
from sluiceway.router.dns_discovery import DnsDiscovery, DnsName
from sluiceway.router.membership import Membership
from sluiceway.sim import SimConfig, SimPool, running_simulator


@contextlib.asynccontextmanager
async def two_hosts() -> AsyncIterator[tuple[SimPool, SimPool, int]]:
    """Simulators on 127.0.0.2 and 127.0.0.3, both on the same free port."""
    async with running_simulator(SimConfig(), host="127.0.0.2") as first:
        port = int(first.urls[0].rsplit(":", 1)[1])
        async with running_simulator(SimConfig(), host="127.0.0.3", port=port) as second:
            yield first, second, port


class FakeResolver:
    """Answers what the test says; counts the questions."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses
        self.failing = False
        self.asked = 0

    async def __call__(self, host: str, port: int) -> list[str]:
        assert host == "vllm.ns.svc.cluster.local"
        self.asked += 1
        if self.failing:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.addresses)


async def test_addresses_join_and_leave_and_a_failure_keeps_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="sluiceway.router.dns_discovery")

    def mine() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "sluiceway.router.dns_discovery"]

    clock = RealClock(50.0)  # the 5 s interval is 0.1 s of wall time
    resolver = FakeResolver(["127.0.0.2"])
    async with two_hosts() as (first, second, port):
        name = DnsName.parse(f"http://vllm.ns.svc.cluster.local:{port}")
        a, b = f"http://127.0.0.2:{port}", f"http://127.0.0.3:{port}"

        def jobs(app: RouterApp) -> list[Job]:
            members = Membership(app.gateway.set_endpoints)
            return [DnsDiscovery([name], members, clock, interval=5.0, resolver=resolver).run]

        async with discovering_router((), jobs, clock=clock) as router:
            await until(lambda: router.members() == {a})
            await router.until_served_by(first.engines[0])
            resolver.addresses = ["127.0.0.3", "127.0.0.2"]
            await until(lambda: router.members() == {a, b})
            await router.until_served_by(second.engines[0])
            # The name stops resolving: its endpoints stay, and one warning says so.
            resolver.failing = True
            asked = resolver.asked
            await until(lambda: resolver.asked >= asked + 3)
            assert router.members() == {a, b}
            warnings = [r for r in mine() if r.levelno == logging.WARNING]
            assert [w.getMessage() for w in warnings] == [
                f"dns {name}: cannot resolve ([Errno -2] Name or service not known); "
                "keeping its 2 endpoints"
            ]
            resolver.failing = False
            resolver.addresses = ["127.0.0.3"]
            await until(lambda: router.members() == {b})
            assert mine()[-1].getMessage() == f"dns {name} resolves again: 1 endpoints"


async def test_the_system_resolver_on_localhost() -> None:
    """Through the flags, as ``--endpoints-dns http://localhost:PORT``: 127.0.0.1 serves (an
    IPv6 ``[::1]`` endpoint, if localhost has one, fails its health check and stays out)."""
    async with running_simulator(SimConfig()) as sims:
        port = int(sims.urls[0].rsplit(":", 1)[1])
        found = Discovery.from_flags(None, None, f"http://localhost:{port}", dns_interval=5.0)
        clock = RealClock()
        async with discovering_router((), lambda app: found.jobs(app.gateway, clock)) as router:
            await until(lambda: router.members() == {f"http://127.0.0.1:{port}"})
            await router.until_served_by(sims.engines[0])
            assert (await router.ready())[0] == 200
