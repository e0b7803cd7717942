"""``sluiceway demo`` runs end to end in a fresh process and every check it prints passes."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.serial


def test_demo_passes_every_check() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sluiceway", "demo", "--time-scale", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo passed" in proc.stdout
    assert "NO" not in proc.stdout
    assert "Scenario A" in proc.stdout and "Scenario B" in proc.stdout
