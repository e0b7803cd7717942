"""Test-only entry point: ``sluiceway processor`` with a crash fault installed.

    python tests/e2e/faulty_processor.py --kill-before-ack N <sluiceway processor flags...>

SIGKILLs the process just before its N-th result ack, between an HTTP answer and its result:
the moment a crash loses the most work. The shipped package reads no fault setting; this
module installs the hook on the Redis broker, then runs the normal command line.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from sluiceway.broker.redis import RedisBroker
from sluiceway.cli import main

log = logging.getLogger("faulty_processor")


def kill_before_ack(target: int) -> Callable[[str], Awaitable[None]]:
    """A broker fault hook that SIGKILLs this process before its ``target``-th ack."""
    seen = 0

    async def hook(step: str) -> None:
        nonlocal seen
        if step == "ack:before":
            seen += 1
            if seen == target:
                log.warning("fault hook: killing this process before ack %d", seen)
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def run(argv: list[str]) -> None:
    if argv[:1] != ["--kill-before-ack"] or len(argv) < 2:
        raise SystemExit("usage: faulty_processor.py --kill-before-ack N <processor flags>")
    RedisBroker.fault_hook = staticmethod(kill_before_ack(int(argv[1])))  # type: ignore[assignment]
    sys.argv = [sys.argv[0], "processor", *argv[2:]]
    main()


if __name__ == "__main__":
    run(sys.argv[1:])
