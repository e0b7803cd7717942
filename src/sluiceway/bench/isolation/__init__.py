"""``sluiceway bench isolation``: does realtime traffic notice an async backlog on one pool?

The upstream nightly isolation test, on the simulator (or real model servers), in one process:
pool capacity C, a realtime closed loop at k = 20/80/90/100 % of C (streamed 128-token
``ignore_eos`` completions through the coordinator, passthrough, tenant ``realtime``), an async
open loop in wait mode (tenant ``batch``, 10 req/s, a 20 s client timeout), per level a baseline
and a mixed stage, and an async-only stage; judged by the validator's checks and reported with
figures per level. Modes: ``none`` (no protection: the negative control, which must fail its
TTFT checks), ``holdback``, ``eviction`` and ``best`` (adaptive holdback, eviction and prefix
resume). See docs/isolation.md.

Python API::

    from sluiceway.bench.isolation import IsolationOptions, run_isolation, write_report

    report = run_isolation(IsolationOptions(modes=("eviction",), quick=True))
    report.modes["eviction"].passed          # every judged check passed
    report.modes["eviction"].figures["80"]   # TTFT ratios, goodput vs slack, waste, fates ...
    write_report(report, Path("out"))        # report.json and summary.html

``run_isolation_async`` does the same inside a running event loop. Modules: ``plan`` (options,
stage durations), ``modes``, ``stack`` (the system in process), ``replicas`` (the system scaled
out: router processes sharing a ledger, several processors), ``load`` (the two clients),
``sampler`` (pool, bands, attempts, loop lag), ``records`` / ``tolerances`` / ``checks`` /
``figures`` / ``fates`` / ``waste`` (the pure analysis), ``lifecycle``, ``inference_perf``,
``inference_perf_results`` and ``sample_command`` (the external client: its configs and script,
the judging of its results, its sampler), ``runner``, ``result``, ``report``, ``command``.
"""

from __future__ import annotations

from sluiceway.bench.isolation.plan import IsolationOptions
from sluiceway.bench.isolation.report import write_report
from sluiceway.bench.isolation.result import IsolationReport, ModeResult
from sluiceway.bench.isolation.runner import run_isolation, run_isolation_async

__all__ = [
    "IsolationOptions",
    "IsolationReport",
    "ModeResult",
    "run_isolation",
    "run_isolation_async",
    "write_report",
]
