"""``sluiceway bench isolation-sample``: the samples an external client's run cannot take itself.

inference-perf records only its own requests; the checks also need the model servers' running
and waiting requests, their request-time histogram (the model's service time) and the router's
requests by band. This polls every model server's and the router's ``/metrics`` every
``interval`` seconds until SIGTERM or SIGINT and writes them as ``samples.json``::

    [{"at": unix_time, "running": n, "waiting": n,
      "bands": {"<priority>": count}, "request_time": {"<le>": count}}, ...]

``bands`` and ``request_time`` are cumulative counters (summed over the model servers for the
histogram). A model server that does not answer adds nothing to ``running`` and ``waiting`` (as
the builtin sampler) and leaves that sample's ``request_time`` null, since a partial sum would
read as negative counts; a router that does not answer leaves ``bands`` null. The file is
rewritten every few seconds, so a killed sampler loses little.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from sluiceway.bench.isolation.sampler import (
    RUNNING,
    WAITING,
    band_counts,
    metric_total,
    request_time_buckets,
    scrape_metrics,
)

__all__ = [
    "SampleLog",
    "run_sampler",
    "sample_command",
    "sample_of",
]

FLUSH_EVERY = 5.0  # seconds between rewrites of the file while sampling


def sample_of(
    at: float, servers: Sequence[CollectorRegistry | None], router: CollectorRegistry | None
) -> dict[str, Any]:
    """One ``samples.json`` entry from the model servers' and the router's ``/metrics`` (None:
    that one did not answer)."""
    answered = [r for r in servers if r is not None]
    request_time: dict[str, float] | None = None
    if answered and len(answered) == len(servers):
        request_time = {}
        for registry in answered:
            for le, count in request_time_buckets(registry):
                request_time[le] = request_time.get(le, 0.0) + count
    bands = None if router is None else band_counts(router)
    return {
        "at": at,
        "running": round(sum(metric_total(r, RUNNING) for r in answered)),
        "waiting": round(sum(metric_total(r, WAITING) for r in answered)),
        "bands": None if bands is None else {str(p): c for p, c in sorted(bands.items())},
        "request_time": request_time,
    }


@dataclass
class SampleLog:
    """The samples so far, and where they are written."""

    output: Path
    samples: list[dict[str, Any]] = field(default_factory=list)

    def write(self) -> None:
        """Replace the file at once (a reader never sees half a list)."""
        self.output.parent.mkdir(parents=True, exist_ok=True)
        partial = self.output.with_name(self.output.name + ".partial")
        partial.write_text(json.dumps(self.samples))
        os.replace(partial, self.output)


async def run_sampler(
    model_servers: Sequence[str],
    router: str,
    log: SampleLog,
    stop: asyncio.Event,
    interval: float = 0.25,
    flush_every: float = FLUSH_EVERY,
) -> None:
    """Sample every ``interval`` seconds until ``stop`` is set, writing ``log``'s file after the
    first sample (so a watcher sees it started), every ``flush_every`` seconds and at the end."""
    async with aiohttp.ClientSession() as http:
        due, flushed = time.monotonic(), -math.inf
        while not stop.is_set():
            at = time.time()
            seen = await asyncio.gather(
                *(scrape_metrics(http, u) for u in (*model_servers, router))
            )
            log.samples.append(sample_of(at, seen[:-1], seen[-1]))
            now = time.monotonic()
            if now - flushed >= flush_every:
                log.write()
                flushed = now
            due = max(due + interval, now)  # a slow scrape delays the next, never bunches them
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), due - now)
    log.write()


async def _until_signalled(
    model_servers: Sequence[str], router: str, log: SampleLog, interval: float
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await run_sampler(model_servers, router, log, stop, interval)


def sample_command(model_servers: str, router: str, output: Path, interval: float) -> int:
    """Run the sampler until SIGTERM or SIGINT; 0 after writing the file, 2 on bad options."""
    servers = [u.strip() for u in model_servers.split(",") if u.strip()]
    if not servers or not router.strip() or interval <= 0:
        print("error: give --model-servers, --router and a positive --interval", file=sys.stderr)
        return 2
    log = SampleLog(output)
    asyncio.run(_until_signalled(servers, router.strip(), log, interval))
    print(f"wrote {len(log.samples)} samples to {output}")
    return 0
