"""Instructions a process executes, counted by valgrind's callgrind (the ``*_instructions``
benchmarks share this).

CPU time on a shared machine moves by tens of percent between rounds; callgrind counts
instructions, which other jobs do not change. A benchmark runs its subject twice, on a small
and on a large number of requests after the same warm-up; the difference divided by the
request difference is the cost of one more request, start-up and warm-up cancelled out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ROOT", "callgrind", "collected", "have_valgrind", "per_request", "worktree"]

ROOT = Path(__file__).resolve().parent.parent

_COLLECTED = re.compile(r"Collected : (\d+)")


def have_valgrind() -> bool:
    return shutil.which("valgrind") is not None


def callgrind(command: list[str], *, log_file: str | None = None) -> list[str]:
    """``command`` under callgrind (no profile written); its summary goes to stderr, or to
    ``log_file`` when the subject's own stderr is busy."""
    log = [f"--log-file={log_file}"] if log_file else []
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *log, *command]


def collected(summary: str) -> int | None:
    """The instruction count of a callgrind summary (None: the run did not finish)."""
    found = _COLLECTED.search(summary)
    return int(found.group(1)) if found else None


def per_request(small: tuple[int, int], large: tuple[int, int]) -> float:
    """Instructions of one more request, from (requests, instructions) of two runs."""
    return (large[1] - small[1]) / (large[0] - small[0])


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached worktree of ``rev`` (a baseline to measure beside this tree), removed
    afterwards."""
    where = Path(tempfile.mkdtemp(prefix="sluiceway-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                       check=False, capture_output=True)  # fmt: skip
        shutil.rmtree(where.parent, ignore_errors=True)
