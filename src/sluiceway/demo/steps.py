"""The demo's steps, in the order they run. Each runs one scenario on a fresh stack and adds
its checks to a :class:`StepReport`; adding a step is one more :class:`Step` in ``STEPS``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sluiceway.demo.context import StepContext
from sluiceway.demo.findings import StepReport
from sluiceway.demo.steps_gates import scenario_c, scenario_d
from sluiceway.demo.steps_isolation import scenario_h
from sluiceway.demo.steps_quota import scenario_a, scenario_b
from sluiceway.demo.steps_router import scenario_e, scenario_f, scenario_g

__all__ = ["STEPS", "STEP_TIMEOUT", "Step"]


STEP_TIMEOUT = 90.0  # wall seconds; a step that takes longer fails instead of hanging
# Step H slows down to the time scale a busy machine's event-loop lag allows, down to 1
# (about 65 s for its two modes), after up to two faster tries.
ISOLATION_TIMEOUT = 240.0


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    run: Callable[[StepContext, StepReport], Awaitable[None]]
    timeout: float = STEP_TIMEOUT


STEPS: tuple[Step, ...] = (
    Step("A", "one request per team, one worker", scenario_a),
    Step("B", "batch x100 + premium x20 at once, 16 workers", scenario_b),
    Step("C", "saturation gate parks workers (wait-on-refuse, router at 4)", scenario_c),
    Step("D", "tier-priority-admission while the router is saturated", scenario_d),
    Step("E", "router strict bands, fairness, band full", scenario_e),
    Step("F", "in-flight eviction protects realtime", scenario_f),
    Step("G", "priority holdback keeps headroom", scenario_g),
    Step(
        "H",
        "realtime isolation, one level: no protection vs best mode",
        scenario_h,
        ISOLATION_TIMEOUT,
    ),
)
