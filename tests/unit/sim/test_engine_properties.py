"""Engine invariants under random arrivals, aborts and KV pressure (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sluiceway.sim import Admission, Engine, SimConfig, SimRequest
from sluiceway.sim.sequence import SeqState

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
