"""``python -m bench ledger`` with tiny numbers: it runs its router processes with the ledger
and without, and prints both tables with the targets beside. The figures are the bench's
business; here only that every configuration was measured."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sluiceway.localservices import RedisServer

pytestmark = [pytest.mark.serial, pytest.mark.slow]

LEDGER = Path(__file__).resolve().parents[3] / "bench" / "ledger.py"


def _ledger_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ledger", LEDGER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_tiny_run_prints_both_tables(
    redis_server: RedisServer,  # the bench starts its own; this skips without redis-server
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _ledger_module()
    args = ["--requests", "4", "--clients", "3", "--seconds", "0.5", "--rounds", "1"]
    assert bench.main(args) == 0
    out = capsys.readouterr().out
    assert "(a) Redis commands per request" in out and "(b) TTFT" in out
    for setup in ("ledger off", "on, N=1", "on, N=2", "on, N=3"):
        assert sum(line.startswith(setup) for line in out.splitlines()) == 4  # 3 loads + TTFT
    assert "N=1, low load:" in out and "target <= 2)" in out
    assert "N=1 added TTFT p50:" in out and "(target <= 1 ms)" in out
    # without the ledger the routers send Redis nothing
    off = [line.split() for line in out.splitlines() if line.startswith("ledger off")][:3]
    assert all(row[-3:] == ["0.00", "0.00", "0.00"] for row in off)
