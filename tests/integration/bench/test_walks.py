"""The walk counter traces real requests, and the router's walk has no callback from a lower
layer: flow control returns decisions (docs/architecture.md, "The three walks")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

WALKS = Path(__file__).resolve().parents[3] / "bench" / "walks.py"


def _walks_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_walks", WALKS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_no_walk_calls_back_into_a_higher_layer() -> None:
    walks = _walks_module()
    found = await walks.count_walks(1)
    chat, wait, entry = found["chat"][0], found["wait"][0], found["entry"][0]
    assert any(f.startswith("flowcontrol/") for f in chat.files)  # the trace saw the engine
    assert chat.pairs[("router", "flowcontrol")] > 0
    assert (chat.callbacks, wait.callbacks, entry.callbacks) == (0, 0, 0)
    assert wait.handoffs > 0 and chat.handoffs == 0 and entry.handoffs == 0  # the mount seam
    assert entry.pairs[("processor", "broker")] > 0
    assert not any(f.startswith(("router/", "coordinator/")) for f in entry.files)


def test_a_call_from_a_lower_layer_counts_as_a_callback() -> None:
    walks = _walks_module()
    trace = walks.Trace(files={"router/flow.py"}, crossings=[("flowcontrol", "router")])
    assert trace.scoped(None).callbacks == 1


def test_only_the_mount_seam_is_a_hand_off() -> None:
    walks = _walks_module()
    trace = walks.Trace()
    caller = _frame_in(walks.ROOT / "router" / "app.py", None)
    trace.profile(_frame_in(walks.ROOT / "coordinator" / "observed.py", caller), "call", None)
    elsewhere = _frame_in(walks.ROOT / "router" / "gateway.py", None)
    trace.profile(_frame_in(walks.ROOT / "coordinator" / "observed.py", elsewhere), "call", None)
    walk = trace.scoped(None)
    assert walk.handoffs == 1 and walk.callbacks == 1


class _Code:
    def __init__(self, path: Path) -> None:
        self.co_filename = str(path)


class _Frame:
    def __init__(self, path: Path, back: _Frame | None) -> None:
        self.f_code = _Code(path)
        self.f_back = back


def _frame_in(path: Path, back: _Frame | None) -> _Frame:
    return _Frame(path, back)
