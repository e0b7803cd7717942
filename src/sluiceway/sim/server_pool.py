"""Start K simulated model servers in this process, one port each (a pool).

aiohttp logs a request it cannot parse (too many headers, a malformed header line) at ERROR with
a traceback, though the client already got its 400: the fault is the client's, so the servers
here log it at DEBUG (:class:`_ClientFaultsAtDebug`); any other error keeps its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.log import server_logger

from sluiceway.clock import Clock, RealClock
from sluiceway.sim.config import SimConfig
from sluiceway.sim.engine import Engine
from sluiceway.sim.failures import AttemptLedger
from sluiceway.sim.http_api import SimInstance
from sluiceway.sim.loop_lag import LoopLagProbe

__all__ = ["SimPool", "running_simulator"]


@dataclass
class SimPool:
    """Running simulators: ``urls[i]`` serves ``engines[i]``."""

    urls: list[str] = field(default_factory=list)
    instances: list[SimInstance] = field(default_factory=list)

    @property
    def engines(self) -> list[Engine]:
        return [inst.engine for inst in self.instances]

    def set_config(self, **changes: object) -> None:
        """Change run-time settings on every instance (as POST /admin/config does).

        Raises ConfigError for a bad value or a setting fixed at start (KV pool, model).
        """
        for inst in self.instances:
            inst.apply_config(changes)


class _ClientFaultsAtDebug(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger, with a request the client got a 4xx for logged at DEBUG."""

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError) and 400 <= exc_info.code < 500:
            self.debug(msg, *args, exc_info=exc_info, **kwargs)
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


_SERVER_LOG = _ClientFaultsAtDebug(server_logger, {})


@asynccontextmanager
async def running_simulator(
    config: SimConfig | None = None,
    *,
    instances: int = 1,
    clock: Clock | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> AsyncIterator[SimPool]:
    """Serve ``instances`` simulators on ``host``; ports ``port + i``, or free ones for 0."""
    config = config or SimConfig()
    clock = clock or RealClock()
    pool = SimPool()
    runners: list[web.AppRunner] = []
    ledger = AttemptLedger()
    lag = LoopLagProbe()  # one loop serves every instance
    lag.start()
    try:
        for index in range(instances):
            inst = SimInstance(config, clock, index=index, ledger=ledger, lag=lag)
            runner = web.AppRunner(
                inst.app, handler_cancellation=True, access_log=None, logger=_SERVER_LOG
            )
            await runner.setup()
            runners.append(runner)
            site = web.TCPSite(runner, host, port + index if port else 0)
            await site.start()
            inst.driver.start()
            pool.instances.append(inst)
            pool.urls.append(_url(runner, host))
        yield pool
    finally:
        lag.stop()
        for inst in pool.instances:
            await inst.driver.stop()
        for runner in reversed(runners):
            await runner.cleanup()


def _url(runner: web.AppRunner, host: str) -> str:
    sockets = runner.addresses
    bound_port = sockets[0][1]
    return f"http://{host}:{bound_port}"
