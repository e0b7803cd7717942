"""Property tests over random event sequences: no request is finalized twice, counters never
go negative and always match the queued / in-flight sets, strict priority is never violated."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    Finalized,
    FlowController,
    FlowControlSettings,
    Outcome,
    Request,
)
from sluiceway.flowcontrol.fairness import GlobalStrict, RoundRobin, TokenFair

PRIORITIES = (100, 10, 0, -5, -10, 42)  # 42 has no band: falls back to 0
TENANTS = ("a", "b", "c")

add_op = st.tuples(
    st.just("add"),
    st.sampled_from(PRIORITIES),
    st.sampled_from(TENANTS),
    st.integers(0, 300),
    st.sampled_from([None, 0.5, 3.0]),
)
cycle_op = st.tuples(
    st.just("cycle"),
    st.floats(0.0, 1.2),
    st.sampled_from([0.0, 0.05, 0.25]),
    st.booleans(),
    st.floats(0.0, 3.0),
)
finish_op = st.tuples(st.just("finish"), st.integers(0, 50))
cancel_op = st.tuples(st.just("cancel"), st.integers(0, 50))
prio_op = st.tuples(st.just("prios"), st.sets(st.sampled_from([7, -3, 10])))
ops = st.lists(
    st.one_of(add_op, add_op, cycle_op, cycle_op, finish_op, cancel_op, prio_op),
    min_size=5,
    max_size=80,
)


class Model:
    """What a correct controller must agree with."""

    def __init__(self, evict: bool) -> None:
        bands = (
            BandSettings(100, max_requests=6, fairness=RoundRobin()),
            BandSettings(10, max_bytes=900, fairness=TokenFair()),
            BandSettings(-5, fairness=GlobalStrict()),
            BandSettings(-10, max_requests=4, fairness=RoundRobin()),
        )
        settings_ = FlowControlSettings(
            bands=bands,
            max_requests=15,
            default_ttl=2.0,
            no_endpoint_ttl=4.0,
            eviction=EvictionSettings(enabled=evict, grace=0.1, timeout=1.0),
        )
        self.fc = FlowController(settings_)
        self.now = 0.0
        self.next_id = 0
        self.finalized: set[str] = set()
        self.queued: dict[str, int] = {}  # id -> band
        self.inflight: list[str] = []
        self.known: list[str] = []

    def record(self, done: Finalized) -> None:
        assert done.request_id not in self.finalized, f"{done.request_id} finalized twice"
        self.finalized.add(done.request_id)
        self.queued.pop(done.request_id, None)

    def add(self, prio: int, tenant: str, size: int, ttl: float | None) -> None:
        rid = f"r{self.next_id}"
        self.next_id += 1
        self.known.append(rid)
        band = prio if self.fc.band(prio) is not None else 0
        done = self.fc.add(Request(rid, tenant, prio, size, ttl=ttl, max_tokens=size), self.now)
        if done is None:
            self.queued[rid] = band
        else:
            assert done.outcome is not Outcome.DISPATCHED
            self.record(done)

    def cycle(self, sat: float, cost: float, empty: bool, dt: float) -> None:
        self.now += dt
        view = CapacityView(sat, pool_empty=empty, request_cost=cost)
        cycle = self.fc.next_dispatches(self.now, view)
        for done in cycle.dropped:
            assert done.outcome in (Outcome.EVICTED_TTL, Outcome.EVICTED_NO_ENDPOINTS)
            self.record(done)
        for done in cycle.dispatched:
            higher = [b for b in self.queued.values() if b > done.band]
            assert not higher, f"{done.request_id} (band {done.band}) passed bands {higher}"
            self.record(done)
            self.inflight.append(done.request_id)
        for rid in cycle.evict:
            assert rid in self.inflight and self.fc.band(0) is not None
        # A deadline at or before the cycle just run would make the adapter's timer spin.
        deadline = self.fc.next_deadline()
        assert deadline is None or deadline > self.now, (deadline, self.now)

    def finish(self, k: int) -> None:
        if self.inflight:
            rid = self.inflight.pop(k % len(self.inflight))
            self.fc.on_finished(rid, self.now)

    def cancel(self, k: int) -> None:
        if not self.known:
            return
        rid = self.known[k % len(self.known)]
        done = self.fc.on_cancelled(rid, self.now)
        if done is not None:
            assert done.outcome is Outcome.EVICTED_CONTEXT_CANCELLED
            self.record(done)
        elif rid in self.inflight:
            self.inflight.remove(rid)

    def check(self) -> None:
        fc, t = self.fc, self.fc.totals
        assert min(t.queued, t.bytes, t.inflight) >= 0
        assert t.queued == len(self.queued) == sum(b.queued for b in fc.bands)
        assert t.inflight == len(self.inflight) == sum(b.inflight for b in fc.bands)
        assert t.bytes == sum(b.bytes for b in fc.bands)
        for band in fc.bands:
            assert min(band.queued, band.bytes, band.inflight) >= 0
            for flow in band.flows.values():
                assert min(flow.queued, flow.bytes, flow.inflight) >= 0
        assert fc.evictor.pending() >= 0


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans())
def test_random_sequences_keep_the_invariants(seq: list[tuple[object, ...]], evict: bool) -> None:
    model = Model(evict)
    for op in seq:
        name, args = op[0], op[1:]
        if name == "prios":
            model.fc.set_priorities(args[0])  # type: ignore[arg-type]
        else:
            getattr(model, str(name))(*args)
        model.check()
    for done in model.fc.shutdown(model.now + 1):
        model.record(done)
    model.check()
    assert not model.queued
