"""The three walks of docs/architecture.md, counted by tracing real requests (not by reading).

One stack in this process (the simulator, the router with the coordinator mounted, the
processor on the memory broker; the router in the isolation benchmark's ``eviction`` mode:
the guide's flow control, eviction on), then, each a few times, under ``sys.setprofile``:

* **a streamed chat request** straight to the router;
* **a wait-mode request** through the coordinator: queued, dispatched by the processor through
  the router, its result delivered to the held connection. Its processor side (the processor,
  broker, gates, signals, wire, config and observability packages) is the walk of **a queue
  entry**; the files it visits beyond the other two walks are what wait mode adds.

Per walk: the package files with a call in the request's window (the simulator and this tool
left out), the calls from one package into another (each one a round trip), and of those the
callbacks, calls from a lower layer into a higher one (flow control into the router, a broker
into the processor). The router's app handing a request to the app mounted on it (the
coordinator, mounted by the layer above) is composition, not a callback: it is counted apart as
a hand-off, and only from ``router/app.py`` into ``coordinator``. Background work (health
checks, pollers) can only add calls, so each figure is the minimum over the repeats.

    python -m bench walks              # 3 repeats
    PYTHONPATH=<old checkout>/src:<old checkout> python -m bench walks   # the same, before
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp

import sluiceway
from sluiceway.bench.isolation.modes import mode_spec
from sluiceway.bench.isolation.stack import running_stack
from sluiceway.clock import RealClock

ROOT = Path(sluiceway.__file__).resolve().parent
LEFT_OUT = ("sim", "bench", "demo")
QUEUE_SIDE = frozenset(
    {"processor", "broker", "gates", "signals", "wire", "config", "observability", "clock"}
)
# Lower number, lower layer (docs/architecture.md): a call from a lower into a higher layer is
# a callback.
LAYER = {
    "wire": 0,
    "errors": 0,
    "clock": 0,
    "config": 1,
    "observability": 1,
    "flowcontrol": 2,
    "signals": 2,
    "gates": 3,
    "broker": 3,
    "processor": 4,
    "router": 4,
    "coordinator": 5,
    "serving": 5,
}
# The mount seam: (caller file, callee package) of the router's hand-off to its mounted app.
MOUNT_SEAM = ("router/app.py", "coordinator")


def _where(frame: FrameType) -> tuple[str, str] | None:
    """(package, file) of a frame in sluiceway, None elsewhere or in a left-out package."""
    path = frame.f_code.co_filename
    if not path.startswith(str(ROOT)):
        return None
    rel = Path(path).relative_to(ROOT)
    package = rel.parts[0].removesuffix(".py")
    if package in LEFT_OUT or package == "__init__":
        return None
    return package, str(rel)


@dataclass
class Trace:
    files: set[str] = field(default_factory=set)
    crossings: list[tuple[str, str]] = field(default_factory=list)
    handoffs: int = 0  # calls across the mount seam (resumptions of the awaited app count too)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        here = _where(frame)
        if here is None:
            return
        self.files.add(here[1])
        caller = frame.f_back
        there = None if caller is None else _where(caller)
        if there is not None and (there[1], here[0]) == MOUNT_SEAM:
            self.handoffs += 1
        elif there is not None and there[0] != here[0]:
            self.crossings.append((there[0], here[0]))

    def scoped(self, packages: frozenset[str] | None) -> Walk:
        def keep(package: str) -> bool:
            return packages is None or package in packages

        files = {f for f in self.files if keep(Path(f).parts[0].removesuffix(".py"))}
        pairs = [(a, b) for a, b in self.crossings if keep(a) and keep(b)]
        back = [(a, b) for a, b in pairs if LAYER.get(a, 9) < LAYER.get(b, 9)]
        handoffs = self.handoffs if keep("router") and keep("coordinator") else 0
        return Walk(files, len(pairs), len(back), sorted(set(back)), Counter(pairs), handoffs)


@dataclass
class Walk:
    files: set[str]
    round_trips: int
    callbacks: int
    callback_pairs: list[tuple[str, str]]
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    handoffs: int = 0


async def _traced(work: Callable[[], Awaitable[None]]) -> Trace:
    trace = Trace()
    sys.setprofile(trace.profile)
    try:
        await work()
    finally:
        sys.setprofile(None)
    return trace


def _chat(model: str, stream: bool) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "walk the path"}],
        "max_tokens": 8,
        "stream": stream,
    }


async def count_walks(repeats: int) -> dict[str, list[Walk]]:
    found: dict[str, list[Walk]] = {"entry": [], "chat": [], "wait": []}
    clock = RealClock(scale=1.0)
    async with (
        running_stack(mode_spec("eviction", 8), capacity=8, clock=clock) as stack,
        aiohttp.ClientSession() as http,
    ):
        url = stack.url + "/v1/chat/completions"

        async def chat() -> None:
            async with http.post(url, json=_chat(stack.model, True)) as resp:
                assert resp.status == 200, resp.status
                await resp.read()

        async def wait() -> None:
            headers = {
                "x-llm-d-async-mode": "wait",
                "x-llm-d-tenant": "batch",
                "x-request-id": uuid.uuid4().hex,
            }
            async with http.post(url, json=_chat(stack.model, False), headers=headers) as resp:
                assert resp.status == 200, (resp.status, await resp.text())
                await resp.read()

        await chat()  # warm every path once, outside the traces
        await wait()
        for _ in range(repeats):
            found["chat"].append((await _traced(chat)).scoped(None))
            trace = await _traced(wait)
            found["wait"].append(trace.scoped(None))
            found["entry"].append(trace.scoped(QUEUE_SIDE))
    return found


def _least(walks: list[Walk]) -> Walk:
    return min(walks, key=lambda w: (len(w.files), w.round_trips))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench walks")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--files", action="store_true", help="list the files of each walk")
    ap.add_argument("--pairs", action="store_true", help="round trips by package pair")
    args = ap.parse_args(argv)
    found = asyncio.run(count_walks(args.repeats))
    entry, chat, wait = (_least(found[k]) for k in ("entry", "chat", "wait"))
    added = wait.files - entry.files - chat.files
    print(f"sluiceway at {ROOT}")
    print(f"{'walk':<34}{'files':>6}{'round trips':>13}{'callbacks':>11}{'hand-offs':>11}")
    rows = (
        ("a queue entry (processor side)", entry, len(entry.files)),
        ("a streamed chat request (router)", chat, len(chat.files)),
        ("a wait-mode request (all)", wait, len(wait.files)),
    )
    for name, walk, files in rows:
        print(f"{name:<34}{files:>6}{walk.round_trips:>13}{walk.callbacks:>11}{walk.handoffs:>11}")
        if walk.callback_pairs:
            print(f"{'':<4}callbacks: {', '.join(f'{a} -> {b}' for a, b in walk.callback_pairs)}")
    print(f"{'  files wait mode adds':<34}{len(added):>6}")
    for name, walk, _ in rows:
        if args.pairs:
            pairs = (f"{a} -> {b}: {n}" for (a, b), n in walk.pairs.most_common())
            print(f"\n{name}, round trips by pair:\n  " + "\n  ".join(pairs))
        if args.files:
            print(f"\n{name}:\n  " + "\n  ".join(sorted(walk.files)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
