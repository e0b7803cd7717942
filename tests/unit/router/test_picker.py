from __future__ import annotations

from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.router.picker import PickerWeights, PrefixAffinity, Scored, pick_endpoint


def _c(name: str, inflight: int, waiting: int = 0, kv: float = 0.0) -> Scored:
    return Scored(name, inflight, waiting, kv)


def test_least_in_flight_by_default() -> None:
    cands = [_c("a", 3), _c("b", 1), _c("c", 2)]
    assert pick_endpoint(cands, PickerWeights()) == 1


def test_ties_rotate() -> None:
    cands = [_c("a", 1), _c("b", 1)]
    assert {pick_endpoint(cands, PickerWeights(), turn=t) for t in range(2)} == {0, 1}


def test_queue_and_kv_weights_can_outvote_in_flight() -> None:
    cands = [_c("a", 1, waiting=9, kv=0.9), _c("b", 2, waiting=0, kv=0.1)]
    assert pick_endpoint(cands, PickerWeights()) == 0
    assert pick_endpoint(cands, PickerWeights(queue=2, kv_cache=2)) == 1


def test_prefix_affinity() -> None:
    cands = [_c("a", 1), _c("b", 1)]
    weights = PickerWeights(prefix=3)
    assert pick_endpoint(cands, weights, affinity="b", turn=0) == 1
    aff = PrefixAffinity(capacity=1)
    aff.served(b"p1", "a")
    aff.served(b"p2", "b")
    assert aff.get(b"p1") is None and aff.get(b"p2") == "b" and aff.get(b"") is None


def test_weights_from_the_guide_profile() -> None:
    config = load_endpoint_picker_config(
        {
            "apiVersion": "llm-d.ai/v1",
            "kind": "EndpointPickerConfig",
            "plugins": [{"type": "queue-scorer"}, {"type": "prefix-cache-scorer", "name": "p"}],
            "schedulingProfiles": [
                {
                    "name": "default",
                    "plugins": [
                        {"pluginRef": "queue-scorer", "weight": 2},
                        {"pluginRef": "p", "weight": 3},
                        {"pluginRef": "kv-cache-utilization-scorer"},
                    ],
                }
            ],
        }
    ).value
    weights, notes = PickerWeights.from_config(config)
    assert weights == PickerWeights(queue=2, kv_cache=1, prefix=3)
    assert notes == []
