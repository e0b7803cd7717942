from __future__ import annotations

from sluiceway.flowcontrol import EndpointSnapshot as E
from sluiceway.flowcontrol.saturation import ConcurrencyDetector, staged_view
from sluiceway.flowcontrol.saturation.stages import stage_of

DET = ConcurrencyDetector(max_concurrency=10)


def test_role_mapping() -> None:
    assert stage_of("encode-prefill") == ("prefill",)
    assert stage_of(None) == ("decode",)
    assert stage_of("both") == ("prefill", "decode")
    assert stage_of("encode") == () and stage_of("weird") == ()


def test_effective_is_the_worst_stage() -> None:
    eps = [
        E("p", role="prefill", inflight_requests=9),
        E("d1", role="decode", inflight_requests=1),
        E("d2", inflight_requests=1),
    ]
    view = staged_view(DET, eps, 0.0)
    assert dict(view.stages) == {"prefill": 0.9, "decode": 0.1, "effective": 0.9}
    assert view.saturation == 0.9


def test_no_stage_falls_back_to_the_whole_pool() -> None:
    view = staged_view(DET, [E("e", role="encode", inflight_requests=5)], 0.0)
    assert view.saturation == 0.5 and dict(view.stages) == {"effective": 0.5}
