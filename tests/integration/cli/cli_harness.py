"""Running ``sluiceway`` as a user does: a child process, its output and exit code."""

from __future__ import annotations

import os
import subprocess
import sys
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
