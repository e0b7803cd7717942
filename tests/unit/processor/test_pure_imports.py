"""Protocols and pure decision logic import no I/O library (docs/design-rules.md rule 31)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("aiohttp", "redis", "starlette", "uvicorn", "prometheus_client", "pydantic")


@pytest.mark.parametrize(
    "module",
    [
        "sluiceway.broker.base",
        "sluiceway.gates.base",
        "sluiceway.processor.lane_scheduler",
        "sluiceway.processor.retry",
        "sluiceway.processor.outcome",
        "sluiceway.processor.headers",
        "sluiceway.processor.results",
        "sluiceway.processor.gating",
        "sluiceway.processor.overload_order",
        "sluiceway.processor.service_time",
        "sluiceway.processor.entry_decision",
    ],
)
def test_module_imports_nothing_heavy(module: str) -> None:
    code = (
        "import sys, importlib; "
        f"importlib.import_module({module!r}); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
