"""A vLLM-like simulated model server: continuous batching, KV cache, preemption, metrics.

``running_simulator(SimConfig(...), instances=K, clock=...)`` serves K engines on loopback;
``sluiceway sim`` does the same from the command line. See docs/simulator.md.

The path of a request through the package, file by file:

1. ``command.py``: ``sluiceway sim`` turns flags into a ``SimConfig`` (``config.py``,
   ``profiles.py``) and hands it to ``serve_forever.py``, which runs until Ctrl-C.
2. ``server_pool.py``: ``running_simulator`` binds one port per instance.
3. ``http_api.py``: the aiohttp handlers of one instance; ``failures.py`` may answer an
   injected error first; ``openai_request.py`` parses and validates the body
   (``tokenizer.py`` turns text into token ids); ``embeddings.py`` and ``tokenizer_api.py``
   answer ``/v1/embeddings``, ``/tokenize`` and ``/detokenize`` at once, without the engine.
4. ``engine_driver.py``: submits the request to the engine and steps the engine when a token
   is due; ``engine.py`` is the pure scheduler (``waiting.py`` queue, ``kvcache.py`` blocks,
   ``sequence.py`` per-request state, ``labels.py`` counts by header).
5. ``sse.py``: writes each streamed token to the socket as the step produces it;
   ``openai_response.py`` holds the byte templates of the answers.
6. ``metrics.py``: ``/metrics`` renders ``stats.py``'s counters and histograms.

Beside the path: ``admin_config.py`` (``/admin/config``, run-time settings in the command line's
units), ``durations.py`` (``12ms``, ``0.5s``, ``250us`` as the flags and ``/admin/config`` take
them), ``stop_strings.py`` (where a request's stop strings first appear in its text) and
``loop_lag.py`` (how late the event loop runs: the gauge of an overloaded simulator).
"""

from __future__ import annotations

from sluiceway.sim.config import SimConfig
from sluiceway.sim.engine import Engine
from sluiceway.sim.sequence import Admission, SimRequest
from sluiceway.sim.server_pool import SimPool, running_simulator

__all__ = ["Admission", "Engine", "SimConfig", "SimPool", "SimRequest", "running_simulator"]
