"""The quick start of docs/operations.md, run line for line (free ports instead of the fixed
ones): five requests published, five results read, nothing in the way."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sluiceway.localservices import services_required
from sluiceway.ports import free_port

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operations.md"


def quick_start() -> str:
    match = re.search(r"<!-- quickstart -->\n```sh\n(.*?)```\n<!-- /quickstart -->",
                      DOC.read_text(), re.S)  # fmt: skip
    assert match, "docs/operations.md has no quick start block"
    return match.group(1)


def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    missing = [b for b in ("redis-server", "redis-cli") if shutil.which(b) is None]
    if missing:
        message = f"{', '.join(missing)} not installed"
        pytest.fail(message) if services_required() else pytest.skip(message)
    redis, sim, processor = free_port(), free_port(), free_port()
    script = quick_start()
    for fixed, free in (("6390", redis), ("8000", sim), ("8080", processor)):
        assert fixed in script
        script = script.replace(fixed, str(free))
    (tmp_path / "src").symlink_to(ROOT / "src")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    harness = (
        f"set -e\ntrap 'kill $(jobs -p) 2>/dev/null; redis-cli -p {redis} shutdown nosave' EXIT\n"
    )
    done = subprocess.run(
        ["bash", "-c", harness + script],
        cwd=tmp_path, capture_output=True, text=True, timeout=110, check=False,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ids = [line for line in lines if line.startswith("premium-")]
    results = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(ids) == 5, done.stdout
    assert sorted(r["id"] for r in results) == sorted(ids), done.stdout + done.stderr
    assert all(r["status_code"] == 200 for r in results), results
    assert "DEADLINE_EXCEEDED" not in done.stdout
    assert "team-premium" in done.stdout  # the status table
    assert "Traceback" not in done.stderr
