"""The report's data: per mode, whether the run is valid, every check, and the figures per
level; serialised in the shape other tools read (``report.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluiceway.bench.isolation.checks import ValidatorCheck

__all__ = ["IsolationReport", "ModeResult"]


@dataclass
class ModeResult:
    """One mode: ``valid`` (the measurement can be trusted; ``invalid_reason`` says why not,
    e.g. the machine was too busy), its checks, figures by level and of the async-only stage."""

    valid: bool
    checks: list[ValidatorCheck]
    figures: dict[str, dict[str, float | None]]
    async_only: dict[str, float | None] = field(default_factory=dict)
    invalid_reason: str | None = None

    @property
    def passed(self) -> bool:
        """Every judged check passed (observations excluded)."""
        return all(c.passed for c in self.checks if c.counts)

    def failed(self) -> list[ValidatorCheck]:
        return [c for c in self.checks if c.counts and not c.passed]

    def as_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "checks": [c.as_json() for c in self.checks],
            "figures": self.figures,
            "async_only": self.async_only,
        }


@dataclass
class IsolationReport:
    """Every mode run, and the run's settings (``run``: capacity, time scale, plan)."""

    modes: dict[str, ModeResult] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"modes": {m: r.as_json() for m, r in self.modes.items()}, "run": self.run}
