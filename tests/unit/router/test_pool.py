from __future__ import annotations

from sluiceway.clock import VirtualClock
from sluiceway.router.load import EndpointLoad
from sluiceway.router.picker import PickerWeights
from sluiceway.router.pool import EndpointPool


class Scraped:
    """A load source standing in for scraped metrics."""

    def __init__(self, loads: dict[str, EndpointLoad]) -> None:
        self.loads = loads

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        return self.loads[url]


def _pool(**kw: object) -> tuple[EndpointPool, list[int]]:
    changes: list[int] = []
    pool = EndpointPool(["http://a/", "http://b"], VirtualClock(), **kw)  # type: ignore[arg-type]
    pool.on_change = lambda: changes.append(len(pool.healthy))
    for url in pool.members:
        pool.mark(url, True)
    return pool, changes


def test_health_changes_and_least_in_flight() -> None:
    pool, changes = _pool()
    assert changes == [1, 2]
    a, b = pool.members["http://a"], pool.members["http://b"]
    pool.acquire(a, 10)
    assert pool.pick() is b
    pool.mark("http://b", False)
    pool.mark("http://b", False)
    assert changes == [1, 2, 1] and pool.pick() is a
    pool.release(a, 10)
    assert (a.inflight, a.inflight_tokens) == (0, 0)
    pool.mark("http://a", False)
    assert pool.pick() is None and pool.snapshots(0.0) == []


def test_snapshots_carry_the_load_source() -> None:
    pool, _ = _pool()
    pool.set_load_source(
        Scraped({"http://a": EndpointLoad(3, 0.5, 9.0), "http://b": EndpointLoad(0, 0.1, 9.0)})
    )
    snaps = {s.name: s for s in pool.snapshots(10.0)}
    assert (snaps["http://a"].waiting, snaps["http://a"].kv_usage) == (3, 0.5)
    assert snaps["http://b"].scraped_at == 9.0


def test_queue_weight_and_prefix_affinity() -> None:
    loads = {"http://a": EndpointLoad(5, 0.0, 0.0), "http://b": EndpointLoad(0, 0.0, 0.0)}
    pool, _ = _pool(load=Scraped(loads), weights=PickerWeights(queue=2))
    a = pool.members["http://a"]
    assert pool.pick() is pool.members["http://b"]
    sticky, _ = _pool(affinity=True, weights=PickerWeights(prefix=3))
    first = sticky.pick(b"same prompt")
    assert first is not None
    assert all(sticky.pick(b"same prompt") is first for _ in range(5))
    assert a.inflight == 0


def test_update_adds_unchecked_members_and_drains_removed_ones() -> None:
    pool, changes = _pool()
    a = pool.members["http://a"]
    pool.acquire(a, 5)
    added = pool.update(["http://b/", "http://c"])
    assert added == ["http://c"]
    assert [m.url for m in pool.healthy] == ["http://b"]  # c unchecked, a draining
    assert a.draining and "http://a" in pool.members  # its request still runs
    assert changes[-1] == 1
    pool.release(a, 5)
    assert "http://a" not in pool.members
    pool.mark("http://c", True)
    assert {m.url for m in pool.healthy} == {"http://b", "http://c"}
    pool.update(["http://c"])  # b has nothing running: gone at once
    assert list(pool.members) == ["http://c"]


def test_a_draining_member_that_comes_back_is_kept() -> None:
    pool, _ = _pool()
    a = pool.members["http://a"]
    pool.acquire(a, 1)
    pool.update(["http://b"])
    assert pool.update(["http://a", "http://b"]) == []
    assert pool.members["http://a"] is a and not a.draining
    assert {m.url for m in pool.healthy} == {"http://a", "http://b"}


def test_models_limit_the_pick() -> None:
    pool, _ = _pool()
    pool.set_models("http://a", frozenset({"base", "lora-1"}))
    assert pool.pick(model="lora-1") is pool.members["http://a"]
    assert pool.candidates("other") == [pool.members["http://b"]]  # b's models unknown
    pool.set_models("http://b", frozenset({"base"}))
    assert pool.pick(model="other") is None
    assert {m.url for m in pool.candidates("base")} == {"http://a", "http://b"}
    assert pool.models() == ["base", "lora-1"]
    assert len(pool.candidates("")) == 2  # no model named: any endpoint


def test_a_pick_can_avoid_endpoints_already_tried() -> None:
    pool, _ = _pool()
    pool.set_models("http://a", frozenset({"base"}))
    pool.set_models("http://b", frozenset({"base"}))
    assert pool.pick(model="base", avoid={"http://a"}) is pool.members["http://b"]
    assert pool.pick(model="base", avoid={"http://a", "http://b"}) is None
    assert pool.candidates("base", {"http://b"}) == [pool.members["http://a"]]
