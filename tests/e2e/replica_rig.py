"""Several ``sluiceway router`` processes in front of one simulator, sharing a ledger.

The demo's evictable router values hold the pool at C = 10 (the concurrency detector's
``maxConcurrency`` over one endpoint); the simulator runs up to 64 at once, so a router that
overshoots shows as more than 10 running requests in :class:`~e2e_rig.SimLog`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from e2e_rig import FAIRNESS, OBJECTIVE, REQUEST_ID, SimLog

import sluiceway
from sluiceway.sim import SimConfig

C = 10
VALUES = Path(sluiceway.__file__).parent / "demo" / "router-evictable.yaml"
# the guide's six objectives, reserved-interactive (100) to overflow-batch (-10)
OBJECTIVES = Path(__file__).parents[1] / "fixtures" / "guide" / "inferenceobjectives.yaml"
SIM = SimConfig(
    max_num_seqs=64,
    time_to_first_token=0.05,
    inter_token_latency=0.02,
    label_headers=(REQUEST_ID, OBJECTIVE, FAIRNESS),
)


@dataclass
class Replica:
    proc: asyncio.subprocess.Process
    url: str
    stderr: list[str] = field(default_factory=list)

    async def metric(self, http: aiohttp.ClientSession, series: str) -> float | None:
        """The first sample whose series starts with ``series`` (a name, or a name with its
        first labels, e.g. ``leases{holder="others"``)."""
        async with http.get(self.url + "/metrics") as resp:
            for line in (await resp.text()).splitlines():
                key, _, value = line.rpartition(" ")
                if key == series or key.startswith((series + "{", series + ",")):
                    return float(value)
        return None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)


@asynccontextmanager
async def replicas(
    n: int, sim_url: str, ledger: str | None, *, lease: str = "3s"
) -> AsyncIterator[list[Replica]]:
    """``n`` routers over ``sim_url``, sharing ``ledger`` (None: each alone, as upstream)."""
    started: list[Replica] = []
    try:
        for _ in range(n):
            started.append(await _start(sim_url, ledger, lease))
        yield started
    finally:
        for rep in started:
            if rep.proc.returncode is None:
                rep.proc.send_signal(signal.SIGTERM)
        for rep in started:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(rep.proc.wait(), 30)
            if rep.proc.returncode is None:
                rep.kill()
                await rep.proc.wait()
            assert rep.proc.stderr is not None
            rep.stderr.extend((await rep.proc.stderr.read()).decode().splitlines())


async def _start(sim_url: str, ledger: str | None, lease: str) -> Replica:
    args = ["-m", "sluiceway", "router", "--config", str(VALUES), "--endpoints", sim_url]
    args += ["--port", "0", "--access-log-sample", "0"]
    args += ["--objectives", str(OBJECTIVES), "--pool-name", "llm-d-router"]
    if ledger is not None:
        args += ["--ledger", ledger, "--ledger-lease", lease]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()
    assert line[:2] == ["listening", "router"], line
    return Replica(proc, line[2])


async def complete(
    http: aiohttp.ClientSession,
    rep: Replica,
    max_tokens: int = 10,
    *,
    stream: bool = False,
    objective: str = "reserved-batch",
    tenant: str | None = None,
) -> int:
    """One completion through ``rep`` at ``objective`` (a band of the guide's: 30 by
    default), for ``tenant`` (its fairness id) if named; its status (a cut connection counts
    as 0)."""
    body = {"model": "sim-model", "prompt": "hi", "max_tokens": max_tokens, "stream": stream}
    headers = {OBJECTIVE: objective} | ({} if tenant is None else {FAIRNESS: tenant})
    try:
        async with http.post(rep.url + "/v1/completions", json=body, headers=headers) as resp:
            await resp.read()
            return resp.status
    except (aiohttp.ClientError, OSError):
        return 0


async def spread(http: aiohttp.ClientSession, reps: Sequence[Replica], count: int) -> list[int]:
    """``count`` requests at once, round-robin over ``reps``."""
    calls = [complete(http, reps[i % len(reps)]) for i in range(count)]
    return list(await asyncio.gather(*calls))


def running(log: SimLog) -> int:
    """Requests running on the simulator now."""
    return sum(delta for _, delta, _, _ in log.events)


async def until(check: object, within: float = 20.0) -> None:
    """Wait until ``check()`` holds (polled: the processes under test give no event)."""
    assert callable(check)
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, "condition not reached"
        await asyncio.sleep(0.02)
