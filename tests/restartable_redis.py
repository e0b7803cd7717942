"""A private redis-server that can be stopped and started again on its port (outage tests)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sluiceway.localservices import services_required
from sluiceway.ports import free_port


class RestartableRedis:
    """A redis-server that can be stopped (saving its data) and started again on its port."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary, self.folder, self.port = binary, folder, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(self.folder), "--notify-keyspace-events", "KEA"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while (
            subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, check=False
            ).stdout.strip()
            != b"PONG"
        ):
            assert time.monotonic() < end, "redis-server did not start"
            time.sleep(0.02)

    def restart(self) -> None:
        """SHUTDOWN SAVE (the data survives in dump.rdb), then start again on the same port."""
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "save"], check=False)
        assert self.proc is not None
        self.proc.wait(timeout=10)
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@contextmanager
def restartable_redis(folder: Path) -> Iterator[RestartableRedis]:
    binary = shutil.which("redis-server")
    if binary is None or shutil.which("redis-cli") is None:
        if services_required():
            raise AssertionError("redis-server / redis-cli not found")
        pytest.skip("redis-server / redis-cli not found")
    server = RestartableRedis(binary, folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
