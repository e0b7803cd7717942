"""``sluiceway`` subcommands as child processes on free loopback ports (``--ports-file``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def sluiceway(
    folder: Path, name: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run ``sluiceway ARGS --port 0 --ports-file ...``; yields its first announced URL."""
    ports = folder / f"{name}-ports.json"
    log = folder / f"{name}.log"
    cmd = [sys.executable, "-m", "sluiceway", *args, "--port", "0", "--ports-file", str(ports)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield _announced(proc, ports, log)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _announced(proc: subprocess.Popen[Any], ports: Path, log: Path) -> str:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if ports.exists():
            urls: dict[str, str] = json.loads(ports.read_text())
            if urls:
                return next(iter(urls.values()))
        if proc.poll() is not None:
            raise AssertionError(f"{log.name}: exited: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    raise AssertionError(f"{log.name}: no port announced")
