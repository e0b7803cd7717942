"""The pure engine, stepped by hand on virtual time (scaled seconds)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluiceway.sim import Admission, Engine, SimConfig, SimRequest
from sluiceway.sim.sequence import SeqState, Sequence
from sluiceway.sim.tokenizer import detokenize, tokenize


def _req(rid: str, prompt_len: int = 8, *, max_tokens: int = 4, **kw: object) -> SimRequest:
    prompt = tuple(range(1000 + hash(rid) % 1000, 1000 + hash(rid) % 1000 + prompt_len))
    return SimRequest(rid, prompt, max_tokens, **kw)  # type: ignore[arg-type]


def _run(engine: Engine, now: float = 0.0, until: float = 1e9) -> tuple[float, list[Sequence]]:
    """Step at each due time until idle; returns the last time and the finished sequences."""
    finished: list[Sequence] = []
    t = now
    while True:
        finished += [s for s in engine.step(t) if s.finished]
        assert engine.num_running <= engine.config.max_num_seqs
        due = engine.next_due()
        if due is None or due > until:
            return t, finished
        t = due


def test_running_never_exceeds_max_num_seqs_and_all_finish() -> None:
    engine = Engine(SimConfig(max_num_seqs=4, time_to_first_token=0.1, inter_token_latency=0.01))
    for i in range(20):
        assert engine.submit(_req(f"r{i}"), 0.0) is Admission.ACCEPTED
    _, finished = _run(engine)
    assert engine.peak_running == 4
    assert len(finished) == 20
    assert all(s.finish_reason == "length" and len(s.output) == 4 for s in finished)
    assert engine.pool.usage == 0.0


def test_waiting_queue_is_bounded() -> None:
    engine = Engine(SimConfig(max_num_seqs=1, max_waiting_queue_length=2))
    assert engine.submit(_req("a"), 0.0) is Admission.ACCEPTED
    engine.step(0.0)  # a runs
    assert engine.submit(_req("b"), 0.0) is Admission.ACCEPTED
    assert engine.submit(_req("c"), 0.0) is Admission.ACCEPTED
    assert engine.submit(_req("d"), 0.0) is Admission.QUEUE_FULL
    assert (engine.num_running, engine.num_waiting) == (1, 2)


def test_too_long_requests_are_refused() -> None:
    engine = Engine(SimConfig(max_model_len=32, num_gpu_blocks=100))
    assert engine.submit(_req("a", 30, max_tokens=3), 0.0) is Admission.TOO_LONG
    small_pool = Engine(SimConfig(max_model_len=1024, block_size=16, num_gpu_blocks=2))
    assert small_pool.submit(_req("b", 30, max_tokens=3), 0.0) is Admission.TOO_LONG


def test_ttft_is_overhead_plus_per_token_prefill_then_one_token_per_itl() -> None:
    cfg = SimConfig(
        time_to_first_token=0.0,
        prefill_overhead=0.03,
        prefill_time_per_token=0.001,
        inter_token_latency=0.01,
    )
    engine = Engine(cfg)
    engine.submit(_req("a", 100, max_tokens=3), 0.0)
    _, [seq] = _run(engine)
    assert seq.first_token_at == pytest.approx(0.13)
    assert seq.finished_at == pytest.approx(0.15)


def test_load_factor_scales_latency_linearly_with_occupancy() -> None:
    cfg = SimConfig(max_num_seqs=3, time_to_first_token=0.1, inter_token_latency=0.01)
    engine = Engine(cfg.replace({"time_factor_under_load": 2.0}))
    for i in range(3):
        engine.submit(_req(f"r{i}", max_tokens=2), 0.0)
    _, finished = _run(engine)
    # Admitted together: TTFT factors 1, 1.5, 2; each later ITL uses the occupancy then.
    finished.sort(key=lambda s: s.first_token_at or 0)
    assert [s.first_token_at for s in finished] == pytest.approx([0.1, 0.15, 0.2])
    gaps = [(s.finished_at or 0) - (s.first_token_at or 0) for s in finished]
    assert gaps == pytest.approx([0.02, 0.015, 0.01])


def test_kv_exhaustion_preempts_the_newest_and_recomputes_it() -> None:
    cfg = SimConfig(
        max_num_seqs=4, block_size=4, num_gpu_blocks=8, time_to_first_token=0.05,
        inter_token_latency=0.01, seed=7,
    )  # fmt: skip
    engine = Engine(cfg)
    seqs = []
    for i in range(3):
        engine.submit(_req(f"r{i}", 4, max_tokens=8), 0.0)
        seqs.append(engine.sequence(f"r{i}"))
    _run(engine)
    assert engine.stats.preemptions >= 1
    assert [s.preemptions > 0 for s in seqs if s] == [False, False, True]  # newest goes (FCFS)
    assert engine.stats.finished["length"] == 3
    assert engine.stats.generation_tokens == 24  # recomputation does not duplicate tokens
    victim = seqs[2]
    assert victim is not None and victim.finished_at is not None
    assert victim.finished_at > max(s.finished_at or 0 for s in seqs[:2])


def test_preemption_is_deterministic() -> None:
    def run() -> tuple[int, list[float]]:
        cfg = SimConfig(max_num_seqs=5, block_size=4, num_gpu_blocks=12, seed=3)
        engine = Engine(cfg)
        for i in range(5):
            engine.submit(_req(f"r{i}", 5, max_tokens=10), 0.0)
        _, finished = _run(engine)
        return engine.stats.preemptions, [s.finished_at or 0 for s in finished]

    assert run() == run()
    assert run()[0] > 0


def test_priority_policy_admits_lower_values_first() -> None:
    engine = Engine(SimConfig(max_num_seqs=1, scheduling_policy="priority"))
    engine.submit(_req("first", priority=5), 0.0)
    engine.step(0.0)
    for rid, prio in (("p9", 9), ("p1", 1), ("p5", 5), ("p-3", -3)):
        engine.submit(_req(rid, priority=prio), 0.0)
    _, finished = _run(engine)
    assert [s.request_id for s in finished] == ["first", "p-3", "p1", "p5", "p9"]


def test_fcfs_policy_ignores_priority() -> None:
    engine = Engine(SimConfig(max_num_seqs=1))
    for rid, prio in (("a", 9), ("b", 1), ("c", -3)):
        engine.submit(_req(rid, priority=prio), 0.0)
    _, finished = _run(engine)
    assert [s.request_id for s in finished] == ["a", "b", "c"]


def test_priority_preemption_picks_the_lowest_priority_runner() -> None:
    cfg = SimConfig(max_num_seqs=3, block_size=4, num_gpu_blocks=7, scheduling_policy="priority")
    engine = Engine(cfg)
    engine.submit(_req("low", 4, max_tokens=8, priority=10), 0.0)
    engine.submit(_req("high", 4, max_tokens=8, priority=0), 0.0)
    engine.submit(_req("mid", 4, max_tokens=8, priority=5), 0.0)
    _run(engine, until=0.05)
    t = 0.05
    while engine.stats.preemptions == 0:
        t = engine.next_due() or t
        engine.step(t)
    assert "low" not in engine.running_ids()
    assert {"high", "mid"} <= set(engine.running_ids())


def test_prefix_cache_hits_count_tokens_and_shorten_ttft() -> None:
    cfg = SimConfig(
        block_size=4, time_to_first_token=0.0, prefill_overhead=0.01,
        prefill_time_per_token=0.001, inter_token_latency=0.01,
    )  # fmt: skip
    engine = Engine(cfg)
    shared = tuple(range(100, 116))  # four full blocks
    engine.submit(SimRequest("a", (*shared, 1, 2), 2), 0.0)
    _, [first] = _run(engine)
    engine.submit(SimRequest("b", (*shared, 7, 8, 9), 2), 1.0)
    _, [second] = _run(engine, 1.0)
    assert engine.stats.prefix_cache_hits == 16
    assert engine.stats.prefix_cache_queries == 18 + 19
    assert first.first_token_at == pytest.approx(0.01 + 0.018)
    assert (second.first_token_at or 0) - 1.0 == pytest.approx(0.01 + 0.003)


@pytest.mark.parametrize("abort", [False, True])
def test_a_resumed_prompt_hits_the_blocks_of_the_original_prompt_and_output(abort: bool) -> None:
    """Finished or aborted (an eviction), a sequence's prompt and output blocks stay cached; the
    resume sends prompt text + generated text, which tokenizes to the same ids and finds them."""
    cfg = SimConfig(
        block_size=4, time_to_first_token=0.0, prefill_overhead=0.01,
        prefill_time_per_token=0.001, inter_token_latency=0.01,
    )  # fmt: skip
    engine = Engine(cfg)
    text = "Tell me, in plain words, how a sluice gate works"
    engine.submit(SimRequest("a", tuple(tokenize(text)), 30), 0.0)
    original = engine.sequence("a")
    assert original is not None
    if abort:
        _run(engine, until=0.2)
        engine.abort("a", 0.2)
    _run(engine)
    kept = original.output[:-1] if abort else original.output  # the last one was on the wire
    resumed = tuple(tokenize(text + detokenize(kept)))
    assert resumed == original.request.prompt + tuple(kept)
    hits_before = engine.stats.prefix_cache_hits
    engine.submit(SimRequest("b", resumed, 5), 1.0)
    _, [second] = _run(engine, 1.0)
    assert second.cached_tokens == (len(resumed) - 1) // 4 * 4 > len(original.request.prompt)
    assert engine.stats.prefix_cache_hits - hits_before == second.cached_tokens
    uncached = len(resumed) - second.cached_tokens
    assert (second.first_token_at or 0) - 1.0 == pytest.approx(0.01 + 0.001 * uncached)


def test_abort_frees_the_slot_and_the_waiter_starts_in_the_same_step() -> None:
    engine = Engine(SimConfig(max_num_seqs=1, time_to_first_token=0.1, inter_token_latency=0.1))
    engine.submit(_req("a", max_tokens=50), 0.0)
    engine.submit(_req("b", max_tokens=5), 0.0)
    engine.step(0.0)
    engine.step(0.5)
    assert engine.running_ids() == ["a"] and engine.pool.usage > 0
    assert engine.abort("a", 0.55)
    engine.step(0.55)
    assert engine.running_ids() == ["b"]
    assert engine.stats.finished["abort"] == 1


def test_abort_of_a_waiting_request_leaves_the_queue() -> None:
    engine = Engine(SimConfig(max_num_seqs=1))
    engine.submit(_req("a"), 0.0)
    engine.submit(_req("b"), 0.0)
    engine.step(0.0)
    assert engine.abort("b", 0.0)
    assert engine.num_waiting == 0
    assert not engine.abort("b", 0.0)
    _, finished = _run(engine)
    assert [s.request_id for s in finished] == ["a"]


def test_eos_stops_early_unless_ignored() -> None:
    engine = Engine(SimConfig(eos_probability=1.0))
    engine.submit(_req("eos", max_tokens=10), 0.0)
    engine.submit(_req("ignore", max_tokens=10, ignore_eos=True), 0.0)
    _, finished = _run(engine)
    by_id = {s.request_id: s for s in finished}
    assert (by_id["eos"].finish_reason, len(by_id["eos"].output)) == ("stop", 1)
    assert (by_id["ignore"].finish_reason, len(by_id["ignore"].output)) == ("length", 10)


def test_stop_after_finishes_with_reason_stop() -> None:
    engine = Engine(SimConfig())
    engine.submit(_req("s", max_tokens=10, stop_after=3), 0.0)
    engine.submit(_req("l", max_tokens=3, stop_after=3), 0.0)  # a stop on the last token wins
    _, finished = _run(engine)
    assert {(s.request_id, s.finish_reason, len(s.output)) for s in finished} == {
        ("s", "stop", 3),
        ("l", "stop", 3),
    }


def test_each_step_records_the_tokens_it_computed() -> None:
    engine = Engine(SimConfig(time_to_first_token=0.1, inter_token_latency=0.1))
    engine.submit(_req("a", 8, max_tokens=2), 0.0)
    engine.submit(_req("b", 8, max_tokens=2), 0.0)
    engine.step(0.0)  # both prefills: 16 prompt tokens
    engine.step(0.1)  # one token each
    engine.step(0.2)
    hist = engine.stats.iteration_tokens
    assert hist.count == 3 and hist.total == 16 + 2 + 2


def test_running_by_label_tracks_current_and_peak() -> None:
    engine = Engine(SimConfig(max_num_seqs=3, label_headers=("X-Team",)))
    for i, team in enumerate(("a", "a", "b", "a")):
        engine.submit(_req(f"r{i}", labels=(("x-team", team),)), 0.0)
    engine.step(0.0)
    assert engine.running_by_label("x-team") == {"a": 2, "b": 1}
    _run(engine)
    assert engine.running_by_label("x-team") == {"a": 0, "b": 0}
    assert engine.max_running_by_label("x-team") == {"a": 2, "b": 1}


def test_raising_max_num_seqs_at_run_time_admits_more() -> None:
    engine = Engine(SimConfig(max_num_seqs=1))
    for i in range(3):
        engine.submit(_req(f"r{i}"), 0.0)
    engine.step(0.0)
    engine.update_config(engine.config.replace({"max_num_seqs": 3}))
    engine.step(0.001)
    assert engine.num_running == 3


def test_jitter_is_seeded_and_bounded() -> None:
    cfg = SimConfig(
        time_to_first_token=0.1, inter_token_latency=0.01, inter_token_latency_std_dev=0.01,
        time_to_first_token_std_dev=0.02, seed=5,
    )  # fmt: skip

    def gaps() -> list[float]:
        engine = Engine(cfg)
        engine.submit(_req("a", max_tokens=200), 0.0)
        times: list[float] = []
        t = 0.0
        while (due := engine.next_due()) is not None:
            t = due
            times += [t for s in engine.step(t) if s.request_id == "a"]
        return [b - a for a, b in itertools.pairwise(times)]

    first, second = gaps(), gaps()
    assert first == second  # same seed, same latencies
    assert len(set(first)) > 100
    assert all(0.003 - 1e-12 <= g <= 0.017 + 1e-12 for g in first)  # std capped at 30 %, +-70 %


@pytest.mark.parametrize("prompt_len", [5, 16, 21, 40])
def test_blocks_filled_while_decoding_hash_like_the_whole_sequence(prompt_len: int) -> None:
    from sluiceway.sim.kvcache import chain_hashes

    engine = Engine(SimConfig(block_size=4, inter_token_latency=0.01))
    engine.submit(_req("a", prompt_len, max_tokens=23), 0.0)
    seq = engine.sequence("a")
    assert seq is not None
    _run(engine)
    tokens = seq.request.prompt + tuple(seq.output)
    assert seq.hashes == chain_hashes(tokens, 4)


# -- invariants under random arrivals, aborts and KV pressure (hypothesis) --------------------

_ops = st.lists(
    st.tuples(
        st.sampled_from(["submit", "abort", "step"]),
        st.integers(0, 40),  # request number or time increment (ms)
        st.integers(1, 24),  # prompt length
        st.integers(1, 12),  # max tokens
        st.integers(-2, 2),  # priority
    ),
    max_size=80,
)


def _check(engine: Engine) -> None:
    running = [engine.sequence(r) for r in engine.running_ids()]
    assert len(running) <= engine.config.max_num_seqs
    held = sum(len(s.blocks) for s in running if s is not None)
    assert engine.pool.num_free + held >= engine.pool.num_blocks  # shared blocks count twice
    for seq in running:
        assert seq is not None and seq.state is SeqState.RUNNING
        assert len(seq.blocks) * engine.pool.block_size >= seq.num_tokens


@settings(max_examples=150, deadline=None)
@given(ops=_ops, policy=st.sampled_from(["fcfs", "priority"]), blocks=st.integers(6, 20))
def test_invariants_hold_and_every_request_ends(
    ops: list[tuple[str, int, int, int, int]], policy: str, blocks: int
) -> None:
    cfg = SimConfig(
        max_num_seqs=3, block_size=4, num_gpu_blocks=blocks, max_model_len=40,
        scheduling_policy=policy, max_waiting_queue_length=5,  # type: ignore[arg-type]
    )  # fmt: skip
    engine = Engine(cfg)
    now, accepted = 0.0, set()
    for op, n, plen, max_tokens, prio in ops:
        if op == "submit" and f"r{n}" not in accepted:
            prompt = tuple(range(n % 3, n % 3 + plen))  # overlapping prefixes
            if engine.submit(SimRequest(f"r{n}", prompt, max_tokens, prio), now) is (
                Admission.ACCEPTED
            ):
                accepted.add(f"r{n}")
        elif op == "abort":
            engine.abort(f"r{n}", now)
        else:
            now += n / 1000
            engine.step(now)
        _check(engine)
    while (due := engine.next_due()) is not None:
        now = max(now, due)
        engine.step(now)
        _check(engine)
    assert engine.num_running == 0 and engine.num_waiting == 0
    assert sum(engine.stats.finished.values()) == len(accepted)
    assert engine.pool.usage == 0.0
