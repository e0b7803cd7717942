"""The simulated model server's engine: a pure continuous-batching state machine.

Time is passed in (scaled seconds); nothing here sleeps or reads a clock. ``step(now)``
advances every running sequence whose next token is due, admits waiting requests into free
slots (FCFS or by priority, lower first), allocates KV blocks token by token and, when the
pool runs dry, preempts the newest (or lowest-priority) running request, which is recomputed
later. ``next_due()`` tells the driver when to step next.

Latency model (as llm-d-inference-sim, per sequence):
  TTFT = (time_to_first_token + prefill_overhead + prefill_time_per_token x uncached) x f
  each later token after inter_token_latency x f, with
  f = 1 + (time_factor_under_load - 1) x (running - 1) / (max_num_seqs - 1);
  optional seeded Gaussian jitter on both (std-dev capped at 30 %, samples within +-70 %).
"""

from __future__ import annotations

import heapq
import itertools
import random

from sluiceway.sim.config import SimConfig
from sluiceway.sim.kvcache import BlockPool, chain_hashes
from sluiceway.sim.labels import LabelCounts
from sluiceway.sim.sequence import Admission, SeqState, Sequence, SimRequest
from sluiceway.sim.stats import EngineStats
from sluiceway.sim.tokenizer import output_salt, output_token
from sluiceway.sim.waiting import WaitingQueue

__all__ = ["Engine"]


class Engine:
    """One model server's scheduler, KV cache and token clock."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.pool = BlockPool(
            config.num_gpu_blocks, config.block_size, prefix_caching=config.enable_prefix_caching
        )
        self.stats = EngineStats(max_model_len=config.max_model_len)
        self._block_size = config.block_size
        self.labels = LabelCounts(config.label_headers)
        self.peak_running = 0
        self._waiting = WaitingQueue(config.scheduling_policy)
        self._running: dict[str, Sequence] = {}
        self._live: dict[str, Sequence] = {}
        self._due: list[tuple[float, int, int, Sequence]] = []
        self._tiebreak = itertools.count()
        self._order = itertools.count()
        self._rngs: dict[str, random.Random] = {}
        self._jitter_rng = random.Random(config.seed)
        self._iteration_tokens = 0  # prompt and output tokens computed since the last step

    # -- what the driver and tests read -------------------------------------------------------

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def kv_usage(self) -> float:
        return self.pool.usage

    def running_ids(self) -> list[str]:
        """Request ids currently holding a slot, in admission order."""
        return list(self._running)

    def sequence(self, request_id: str) -> Sequence | None:
        """The live (waiting or running) sequence of ``request_id``."""
        return self._live.get(request_id)

    def running_by_label(self, header: str) -> dict[str, int]:
        return self.labels.running(header)

    def max_running_by_label(self, header: str) -> dict[str, int]:
        return self.labels.peak(header)

    def next_due(self) -> float | None:
        """When the next token is due (scaled seconds), or None when nothing runs."""
        while self._due and self._due[0][2] != self._due[0][3].version:
            heapq.heappop(self._due)
        if self._due:
            return self._due[0][0]
        return None

    # -- inputs -------------------------------------------------------------------------------

    def update_config(self, config: SimConfig) -> None:
        """Apply run-time settings (latency, capacity, failures); the KV pool is fixed."""
        self.config = config

    def submit(self, request: SimRequest, now: float) -> Admission:
        """Queue ``request`` and admit it at once if a slot and blocks are free.

        Refused (a value, not an exception) when the waiting queue is full or the request can
        never fit ``max_model_len`` / the KV pool.
        """
        if request.request_id in self._live:
            raise ValueError(f"duplicate request id {request.request_id!r}")
        total = len(request.prompt) + request.max_tokens
        if total > self.config.max_model_len or self.pool.blocks_for(total) > self.pool.num_blocks:
            return Admission.TOO_LONG
        if len(self._waiting) >= self.config.max_waiting_queue_length:
            return Admission.QUEUE_FULL
        salt = output_salt(self.config.seed, request.prompt)
        seq = Sequence(
            request=request,
            arrival=now,
            order=next(self._order),
            salt=salt,
            prompt_len=len(request.prompt),
        )
        self._live[request.request_id] = seq
        self._waiting.push(seq)
        self._admit(now)
        return Admission.ACCEPTED

    def abort(self, request_id: str, now: float) -> bool:
        """Cancel a waiting or running request, freeing its slot and blocks at once."""
        seq = self._live.get(request_id)
        if seq is None:
            return False
        if seq.state is SeqState.WAITING:
            self._waiting.discard(seq)
            self._close(seq, now, "abort")
        else:
            self._finish(seq, now, "abort")
            self._admit(now)
        return True

    def step(self, now: float) -> list[Sequence]:
        """Advance to ``now``; return the sequences that produced tokens or finished."""
        out: list[Sequence] = []
        self._admit(now)
        due_heap = self._due
        while due_heap and due_heap[0][0] <= now:
            due, _, version, seq = heapq.heappop(due_heap)
            if version == seq.version and seq.state is SeqState.RUNNING:
                self._advance(seq, due, out)
        self._admit(now)
        if self._iteration_tokens:
            self.stats.iteration_tokens.observe(self._iteration_tokens)
            self._iteration_tokens = 0
        return out

    # -- scheduling ---------------------------------------------------------------------------

    def _admit(self, now: float) -> None:
        while len(self._running) < self.config.max_num_seqs:
            seq = self._waiting.peek()
            if seq is None or not self._schedule(seq, max(now, seq.arrival)):
                return  # head of line waits for KV blocks, as vLLM
            self._waiting.pop()

    def _schedule(self, seq: Sequence, now: float) -> bool:
        tokens = seq.request.prompt + tuple(seq.output)
        bs = self.pool.block_size
        if len(seq.hashes) < len(tokens) // bs:
            seq.hashes = chain_hashes(tokens, bs)
        hits = self.pool.lookup(seq.hashes[: (len(tokens) - 1) // bs])
        fresh = self.pool.blocks_for(len(tokens)) - len(hits)
        if not self.pool.can_take(hits, fresh):
            return False
        self.pool.take_cached(hits)
        seq.blocks = hits + (self.pool.allocate(fresh) or [])
        for index in range(len(hits), len(seq.hashes)):
            self.pool.register(seq.blocks[index], seq.hashes[index])
        self._start(seq, now, cached=len(hits) * bs)
        return True

    def _start(self, seq: Sequence, now: float, *, cached: int) -> None:
        stats = self.stats
        stats.prefix_cache_queries += seq.num_tokens
        stats.prefix_cache_hits += cached
        self._iteration_tokens += seq.num_tokens - cached
        if seq.scheduled_at is None:
            seq.scheduled_at = now
            seq.cached_tokens = cached
            stats.prompt_tokens += len(seq.request.prompt)
            stats.queue_time.observe(now - seq.arrival)
        seq.state = SeqState.RUNNING
        self._running[seq.request_id] = seq
        self.peak_running = max(self.peak_running, len(self._running))
        self.labels.enter(seq.request.labels)
        cfg = self.config
        prefill = cfg.prefill_overhead + cfg.prefill_time_per_token * (seq.num_tokens - cached)
        ttft = self._jitter(cfg.time_to_first_token + prefill, cfg.time_to_first_token_std_dev)
        self._schedule_token(seq, now + ttft * self._factor())

    def _factor(self) -> float:
        cfg = self.config
        if cfg.max_num_seqs <= 1 or cfg.time_factor_under_load == 1:
            return 1.0
        busy = min(max(len(self._running), 1), cfg.max_num_seqs)
        return 1.0 + (cfg.time_factor_under_load - 1.0) * (busy - 1) / (cfg.max_num_seqs - 1)

    def _jitter(self, mean: float, std_dev: float) -> float:
        """A Gaussian sample around ``mean`` (std-dev capped at 30 %, clamped to +-70 %)."""
        if std_dev <= 0 or mean <= 0:
            return mean
        sample = self._jitter_rng.gauss(mean, min(std_dev, 0.3 * mean))
        return min(max(sample, 0.3 * mean), 1.7 * mean)

    def _schedule_token(self, seq: Sequence, due: float) -> None:
        seq.version += 1
        heapq.heappush(self._due, (due, next(self._tiebreak), seq.version, seq))

    # -- decoding -----------------------------------------------------------------------------

    def _advance(self, seq: Sequence, now: float, out: list[Sequence]) -> None:
        """Emit one token of ``seq`` at ``now`` (its due time), then schedule the next.

        The per-token hot path of the simulator: locals instead of repeated attribute reads.
        """
        output = seq.output
        num_tokens = seq.prompt_len + len(output) + 1
        if num_tokens > len(seq.blocks) * self._block_size and not self._grow(seq):
            return  # seq itself was preempted
        output.append(output_token(seq.salt, len(output)))
        self._record_token(seq, now, num_tokens)
        if not out or out[-1] is not seq:
            out.append(seq)
        reason = self._finish_reason(seq)
        if reason is not None:
            self._finish(seq, now, reason)
            self._admit(now)
        else:
            self._schedule_token(seq, now + self._next_gap())

    def _next_gap(self) -> float:
        """The time to the next token of a running sequence (jitter and load factor applied)."""
        cfg = self.config
        itl = cfg.inter_token_latency
        if cfg.inter_token_latency_std_dev > 0:
            itl = self._jitter(itl, cfg.inter_token_latency_std_dev)
        return itl if cfg.time_factor_under_load == 1 else itl * self._factor()

    def _record_token(self, seq: Sequence, now: float, num_tokens: int) -> None:
        self.stats.generation_tokens += 1
        self._iteration_tokens += 1
        if seq.first_token_at is None:
            seq.first_token_at = now
        seq.last_token_at = now
        bs = self._block_size
        if num_tokens % bs == 0:
            # Only the block just filled, without copying the whole sequence per block.
            start = num_tokens - bs - seq.prompt_len
            if start >= 0:
                tokens: list[int] | tuple[int, ...] = seq.output[start:]
            else:
                tokens = (*seq.request.prompt[start:], *seq.output)
            parent = seq.hashes[-1] if seq.hashes else None
            block_hash = chain_hashes(tokens, bs, parent)[0]
            seq.hashes.append(block_hash)
            self.pool.register(seq.blocks[len(seq.hashes) - 1], block_hash)

    def _finish_reason(self, seq: Sequence) -> str | None:
        request = seq.request
        if request.stop_after is not None and len(seq.output) >= request.stop_after:
            return "stop"
        if len(seq.output) >= request.max_tokens:
            return "length"
        p = self.config.eos_probability
        if p > 0 and not seq.request.ignore_eos and self._rng(seq).random() < p:
            return "stop"
        return None

    def _rng(self, seq: Sequence) -> random.Random:
        rng = self._rngs.get(seq.request_id)
        if rng is None:
            rng = self._rngs[seq.request_id] = random.Random(seq.salt)
        return rng

    def _grow(self, seq: Sequence) -> bool:
        """One more block for ``seq``, preempting others (or ``seq``) while the pool is dry."""
        while True:
            block = self.pool.allocate(1)
            if block is not None:
                seq.blocks.extend(block)
                return True
            victim = self._victim()
            self._preempt(victim)
            if victim is seq:
                return False

    def _victim(self) -> Sequence:
        if self.config.scheduling_policy == "priority":
            return max(self._running.values(), key=lambda s: (s.request.priority, s.order))
        return next(reversed(self._running.values()))

    def _preempt(self, seq: Sequence) -> None:
        """Recompute mode: drop the KV blocks and queue the request again."""
        self._leave_running(seq)
        seq.state = SeqState.WAITING
        seq.preemptions += 1
        self.stats.preemptions += 1
        self._waiting.push(seq, front=True)

    def _leave_running(self, seq: Sequence) -> None:
        del self._running[seq.request_id]
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.version += 1
        self.labels.leave(seq.request.labels)

    def _finish(self, seq: Sequence, now: float, reason: str) -> None:
        self._leave_running(seq)
        self._close(seq, now, reason)

    def _close(self, seq: Sequence, now: float, reason: str) -> None:
        seq.state = SeqState.FINISHED
        seq.finish_reason = reason
        seq.finished_at = now
        seq.version += 1
        del self._live[seq.request_id]
        self._rngs.pop(seq.request_id, None)
        self.stats.finished[reason] += 1
        if reason != "abort":
            self._observe_finished(seq)

    def _observe_finished(self, seq: Sequence) -> None:
        """vLLM's per-request histograms, from this engine's timeline (scaled seconds)."""
        stats = self.stats
        request = seq.request
        stats.prompt_tokens_per_request.observe(len(request.prompt))
        stats.generation_tokens_per_request.observe(len(seq.output))
        if request.max_tokens_param is not None:
            stats.max_tokens_param.observe(request.max_tokens_param)
        scheduled, first, last = seq.scheduled_at, seq.first_token_at, seq.last_token_at
        if scheduled is None or first is None or last is None:
            return
        stats.prefill_time.observe(first - scheduled)
        stats.decode_time.observe(last - first)
        stats.inference_time.observe(last - scheduled)
