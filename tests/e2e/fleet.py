"""Several ``sluiceway processor`` processes on one Redis, killed and restarted at will.

Each process gets the same config files (upstream flags), serves its endpoints on a free port
(``--port 0 --ports-file``) and can be SIGKILLed; :meth:`Fleet.inflight` reads a process's
``inflight_requests`` gauge so a test kills only processes with requests in flight.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluiceway.observability.names import PROCESSOR_PREFIX
from sluiceway.wire.lanes import LANE_KEYS

INFLIGHT = f"{PROCESSOR_PREFIX}inflight_requests"
TEAMS = {"premium": ("interactive", 2), "standard": ("async", 2), "batch": ("batch", 1)}


def write_configs(
    folder: Path, *, redis_url: str, sim_url: str, workers: int, lease: float, reclaim_ms: int
) -> list[str]:
    """The guide's three quota-gated team queues as upstream config files; returns the flags."""
    host_port = redis_url.split("//", 1)[1].split("/", 1)[0]
    queues = [
        {
            "id": f"team-{team}",
            "queue_name": f"team-{team}",
            "igw_base_url": sim_url,
            "worker_pool_id": "teams",
            "labels": {"tier": tier},
            "gate_type": "redis-quota",
            "gate_params": {
                "address": host_port,
                "attribute": "team",
                "mode": "concurrency",
                "limit": str(limit),
                "gating_mode": "classifying",
            },
        }
        for team, (tier, limit) in TEAMS.items()
    ]
    transport = {
        "url": redis_url,
        "result_queue_name": "results-list",
        "poll_interval_ms": 1000,
        "claim_lease_ttl_seconds": lease,
        "claim_reclaim_interval_ms": reclaim_ms,
        "queues": queues,
    }
    return fleet_config_files(
        folder, transport="redis-sortedset", transport_config=transport, workers=workers
    )


def fleet_config_files(
    folder: Path, *, transport: str, transport_config: dict[str, Any], workers: int
) -> list[str]:
    """Write the transport, pools (one ``teams`` pool) and lane merge-policy files of a guide
    fleet into ``folder``; returns the processor flags that read them."""
    merge = {
        "type": "tier-priority",
        "parameters": {"fairness_attribute": "team", "lane_objectives": {k: k for k in LANE_KEYS}},
    }
    files = {
        "transport.json": transport_config,
        "pools.json": [{"id": "teams", "workers": workers}],
        "merge.json": merge,
    }
    for name, doc in files.items():
        (folder / name).write_text(json.dumps(doc))
    return [
        "--transport", transport,
        "--transport-config-file", str(folder / "transport.json"),
        "--pool-config-file", str(folder / "pools.json"),
        "--request-merge-policy-config-file", str(folder / "merge.json"),
    ]  # fmt: skip


@dataclass
class Member:
    proc: subprocess.Popen[bytes]
    ports_file: Path
    log: Path
    restarted: bool = False

    def url(self, timeout: float = 30.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.ports_file.exists():
                urls: dict[str, str] = json.loads(self.ports_file.read_text())
                if urls:
                    return next(iter(urls.values()))
            if self.proc.poll() is not None:
                raise AssertionError(f"processor exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)
        raise AssertionError("processor did not announce its port")


FAULTY_PROCESSOR = Path(__file__).with_name("faulty_processor.py")


@dataclass
class Fleet:
    folder: Path
    flags: list[str]
    members: list[Member] = field(default_factory=list)
    kills: int = 0
    started: int = 0

    def start(self, kill_before_ack: int | None = None) -> Member:
        """Start one ``sluiceway processor``; ``kill_before_ack`` N runs it through the
        test-only entry that SIGKILLs it just before its N-th ack."""
        self.started += 1
        ports = self.folder / f"ports-{self.started}.json"
        log = self.folder / f"processor-{self.started}.log"
        cmd = [sys.executable, "-m", "sluiceway", "processor"]
        if kill_before_ack is not None:
            cmd = [sys.executable, str(FAULTY_PROCESSOR), "--kill-before-ack", str(kill_before_ack)]
        cmd += [*self.flags, "--port", "0", "--ports-file", str(ports)]
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        member = Member(proc, ports, log)
        self.members.append(member)
        member.url()
        return member

    def alive(self) -> list[Member]:
        return [m for m in self.members if m.proc.poll() is None]

    def kill(self, member: Member) -> None:
        member.proc.send_signal(signal.SIGKILL)
        member.proc.wait(10)
        self.kills += 1

    def stop_all(self) -> None:
        for member in self.alive():
            member.proc.send_signal(signal.SIGTERM)
        for member in self.members:
            try:
                member.proc.wait(30)
            except subprocess.TimeoutExpired:
                member.proc.kill()
                member.proc.wait(10)


def inflight(member: Member) -> float:
    """The member's ``inflight_requests`` summed over queues (0 when unreachable)."""
    try:
        with urllib.request.urlopen(f"{member.url()}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(INFLIGHT + "{") or line.startswith(INFLIGHT + " ")
    )


@contextmanager
def fleet(folder: Path, flags: list[str]) -> Iterator[Fleet]:
    f = Fleet(folder, flags)
    try:
        yield f
    finally:
        f.stop_all()


def results_by_id(records: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record["id"]] = counts.get(record["id"], 0) + 1
    return counts
