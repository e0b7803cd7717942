"""The long-running form of the simulator behind ``sluiceway sim``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from pathlib import Path

from sluiceway.clock import Clock
from sluiceway.ports import PortAnnouncer
from sluiceway.sim.config import SimConfig
from sluiceway.sim.server_pool import running_simulator

__all__ = ["run_simulator", "serve_forever"]


async def serve_forever(
    config: SimConfig,
    instances: int,
    clock: Clock,
    host: str,
    port: int,
    ports_file: Path | None,
) -> None:
    """Serve until cancelled (Ctrl-C), announcing ``listening sim-<i> <url>`` per instance."""
    announcer = PortAnnouncer(ports_file)
    async with running_simulator(
        config, instances=instances, clock=clock, host=host, port=port
    ) as pool:
        _freeze_startup_objects()
        for index, url in enumerate(pool.urls):
            announcer.announce(f"sim-{index}", url)
        await asyncio.Event().wait()


def _freeze_startup_objects() -> None:
    """Keep what start-up built (modules, the KV pool's block tables) out of every later
    garbage collection: traversing a large block table took tens of milliseconds, a stall
    every stream in the process felt as inter-token latency."""
    gc.collect()
    gc.freeze()


def run_simulator(
    config: SimConfig,
    instances: int,
    clock: Clock,
    host: str,
    port: int,
    ports_file: Path | None,
) -> None:
    """Serve on uvloop when installed (faster timers and socket writes), else asyncio."""
    main = serve_forever(config, instances, clock, host, port, ports_file)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        asyncio.run(main)
        return
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(main)
