"""Running ``sluiceway`` as a user does: a child process, its output and exit code."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("error:")]


def sluiceway(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Ran:
    """Run ``python -m sluiceway ARGS`` to completion (60 s at most)."""
    environ = {**os.environ, "COLUMNS": "80", **(env or {})}
    environ.pop("REDIS_URL", None) if env is None or "REDIS_URL" not in env else None
    done = subprocess.run(
        [sys.executable, "-m", "sluiceway", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=environ,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def assert_one_error(ran: Ran, *needles: str, code: int = 2) -> None:
    """Exit ``code``, no traceback, exactly one ``error:`` line holding every needle."""
    assert ran.code == code, ran
    assert "Traceback" not in ran.err, ran.err
    assert len(ran.error_lines) == 1, ran.err
    for needle in needles:
        assert needle in ran.error_lines[0], (needle, ran.err)


class Child:
    """A long-running ``sluiceway`` child process writing to one log file."""

    def __init__(self, log: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = log
        environ = {**os.environ, **(env or {})}
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sluiceway", *args], stdout=out, stderr=out, env=environ
            )

    @property
    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, within: float = 30.0) -> str:
        """Block until ``needle`` is in the log (the child offers no other signal); the log."""
        end = time.monotonic() + within
        while needle not in (text := self.text):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"{needle!r} never logged:\n{text}")
            time.sleep(0.02)
        return text

    def _has(self, needle: str, text: str, regex: bool) -> bool:
        return bool(re.search(needle, text)) if regex else needle in text

    async def logged(self, needle: str, within: float = 30.0, *, regex: bool = False) -> str:
        """:meth:`wait_for` that lets this event loop run (an in-process simulator)."""
        end = time.monotonic() + within
        while not self._has(needle, text := self.text, regex):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"{needle!r} never logged:\n{text}")
            await asyncio.sleep(0.02)
        return text

    async def stopped(self, within: float = 30.0) -> int:
        """SIGTERM, then the exit code, letting this event loop run meanwhile."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + within
        while (code := self.proc.poll()) is None:
            if time.monotonic() > end:
                self.kill()
                raise AssertionError(f"no exit after SIGTERM:\n{self.text}")
            await asyncio.sleep(0.02)
        return code

    def stop(self, within: float = 30.0) -> int:
        """SIGTERM, then the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def redis_on(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    """A redis-server on ``port`` (keyspace events on), ready to take connections."""
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(workdir), "--notify-keyspace-events", "KEA"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    end = time.monotonic() + 20
    while time.monotonic() < end:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("redis-server did not start")
