from __future__ import annotations

from sluiceway.flowcontrol.base import LimitInput
from sluiceway.flowcontrol.usage import SoftReflective


class B:
    def __init__(self, p: int) -> None:
        self.priority, self.queued, self.inflight = p, 0, 0


BANDS = [B(2), B(1), B(0)]


def run(policy: SoftReflective, s: float) -> list[float]:
    return list(policy.ceilings(LimitInput(0.0, s, BANDS, 0.0)))


def test_low_saturation_opens_everything() -> None:
    assert run(SoftReflective(), 0.3) == [1.0, 1.0, 1.0]  # 0.3 < 1 - 0.15 and < 1 - 0.3


def test_at_or_above_one_lower_bands_close() -> None:
    assert run(SoftReflective(), 1.0) == [1.0, 0.0, 0.0]


def test_near_set_point_lower_bands_alternate() -> None:
    policy = SoftReflective()
    seen = [run(policy, 0.75)[2] for _ in range(6)]  # period round(3) = 3
    assert seen.count(1.0) == 2 and seen.count(0.0) == 4


def test_ceilings_never_increase_down_the_bands() -> None:
    policy = SoftReflective()
    for step in range(1, 25):
        got = run(policy, step / 20)
        assert got == sorted(got, reverse=True) and got[0] == 1.0
