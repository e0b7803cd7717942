"""The honest figures: the slack from the model's own service time, goodput (answers delivered,
never dispatches), waste of tokens nobody received, one fate per async request, admissions
against capacity, the lag guard that marks a run invalid, and the plan's steady state."""

from __future__ import annotations

import pytest

from sluiceway.bench.isolation.checks import (
    LAG_CHECK,
    BandSample,
    Judge,
    PoolSample,
    StageMeasure,
    level_checks,
)
from sluiceway.bench.isolation.command import INVALID, exit_code
from sluiceway.bench.isolation.fates import FATES, fate_counts, fate_of
from sluiceway.bench.isolation.figures import (
    ServiceTime,
    async_only_figures,
    level_figures,
    service_time,
)
from sluiceway.bench.isolation.plan import IsolationOptions
from sluiceway.bench.isolation.records import RequestRecord, mixed_window
from sluiceway.bench.isolation.report import summary_lines
from sluiceway.bench.isolation.result import IsolationReport, ModeResult
from sluiceway.bench.isolation.runner import lag_bound_ms, lag_check, too_busy
from sluiceway.bench.isolation.sampler import histogram_median
from sluiceway.bench.isolation.waste import ModelAttempt, wasted_tokens


def _attempt(rid: str, start: float, *, run: float = 2.0, wait: float = 0.0, **kw) -> ModelAttempt:  # type: ignore[no-untyped-def]
    scheduled = start + wait
    return ModelAttempt(
        rid,
        start,
        10,
        0,
        128,
        generated=kw.get("generated", 128),
        scheduled=scheduled,
        last_token=scheduled + run,
        ended=kw.get("ended", scheduled + run),
        finish_reason=kw.get("reason", "length"),
    )


def _rt(k: int, until: float, start: float = 0.0, ttft: float = 0.1) -> list[RequestRecord]:
    out = []
    for w in range(k):
        t = start
        while t + 2.0 <= until:
            out.append(RequestRecord(t, t + 2.0, ttft, 128, True, f"rt-{w}-{t}", status=200))
            t += 2.0
    return out


def test_service_time_is_the_models_not_the_queues() -> None:
    # queued 9 s at the processor, then 2 s on the model: the slack divides by 2, not 11
    batch = [RequestRecord(i, i + 11.0, None, 128, True, f"as-{i}", status=200) for i in range(5)]
    attempts = [_attempt(f"as-{i}", i + 9.0, run=2.0, wait=0.0) for i in range(5)]
    attempts.append(_attempt("as-0", 0.0, run=0.5, reason="abort"))  # aborted: not a service
    attempts.append(_attempt("rt-x", 0.0, run=0.1))  # not an async request
    service = service_time(StageMeasure(batch=batch, attempts=attempts))
    assert service == ServiceTime(model=2.0, queued=11.0)
    # no per-attempt view (real servers): the servers' histogram median stands in
    blind = service_time(StageMeasure(batch=batch, model_service_s=2.5))
    assert blind.model == 2.5


def _mixed(delivered_per_s: float, abandoned: int) -> StageMeasure:
    """20..100 s of realtime at k = 8; async answers at the given rate and abandonments."""
    realtime = _rt(8, 100.0, start=20.0)
    batch = (
        [
            RequestRecord(t - 3.0, t, None, 128, True, f"as-ok-{t}", status=200)
            for t in [40.0 + n / delivered_per_s for n in range(int(40 * delivered_per_s))]
        ]
        if delivered_per_s
        else []
    )
    batch += [
        RequestRecord(float(n), float(n) + 20.0, None, 0, False, f"as-ab-{n}", abandoned=True)
        for n in range(abandoned)
    ]
    batch.append(RequestRecord(0.0, 101.0, None, 0, False, "as-last", abandoned=True))
    pool = [PoolSample(float(t), 10, 0, realtime_running=8) for t in range(0, 101)]
    bands = [BandSample(float(t), {-10: 5.0 * t}) for t in range(0, 101)]  # 5 dispatches/s
    attempts = [_attempt(f"as-ab-{n}", n + 19.0, run=5.0) for n in range(abandoned)]
    delivered = {r.request_id: r.tokens for r in batch if r.ok}
    return StageMeasure(
        realtime, batch, pool, bands, attempts=attempts, waste=wasted_tokens(attempts, delivered)
    )


def test_goodput_counts_answers_delivered_never_dispatches() -> None:
    judge = Judge(10, env={"AMT_WARMUP_S": "15"})
    base = StageMeasure(realtime=_rt(8, 80.0))
    busy_for_nobody = _mixed(0.0, abandoned=50)
    figures = level_figures(80, base, busy_for_nobody, judge, ServiceTime(2.0, 11.0))
    assert figures["async_dispatches_per_s"] == pytest.approx(5.0)
    assert figures["async_goodput_per_s"] == 0.0
    assert figures["goodput_slack_ratio"] == 0.0
    at20 = {c.name: c for c in level_checks(20, base, busy_for_nobody, judge)}
    assert at20["L20 async uses slack"].passed is False  # 5 dispatches/s, nothing delivered

    serving = _mixed(0.5, abandoned=0)
    window = mixed_window([serving.realtime, serving.batch], 15.0)
    figures = level_figures(80, base, serving, judge, ServiceTime(2.0, 11.0))
    delivered = sum(1 for r in serving.batch if r.ok and window.start <= r.end <= window.end)
    assert figures["async_goodput_per_s"] == pytest.approx(delivered / window.length, abs=1e-4)
    # slack: 2 slots / 2 s = 1 answer/s; the queue-inclusive 11 s would make it 0.18/s
    assert figures["slack_completions_per_s"] == 1.0
    assert figures["slack_completions_per_s_queued"] == pytest.approx(2 / 11, abs=1e-4)
    assert figures["goodput_slack_ratio"] == pytest.approx(figures["async_goodput_per_s"])
    assert figures["goodput_slack_ratio_queued"] > figures["goodput_slack_ratio"]
    assert {c.name: c for c in level_checks(20, base, serving, judge)}[
        "L20 async uses slack"
    ].passed


def test_waste_counts_the_tokens_of_abandoned_requests() -> None:
    judge = Judge(10, env={"AMT_WARMUP_S": "15"})
    mixed = _mixed(0.0, abandoned=4)  # four requests ran 128 tokens each, nobody received them
    figures = level_figures(
        80, StageMeasure(realtime=_rt(8, 80.0)), mixed, judge, ServiceTime(2, 2)
    )
    assert figures["generated_tokens"] == 4 * 128
    assert figures["wasted_tokens_pct"] == 100.0
    assert figures["undelivered_tokens_pct"] == 100.0
    assert figures["evicted_tokens_pct"] == 0.0


def test_every_async_request_has_one_fate_and_they_sum_to_the_arrivals() -> None:
    records = [
        RequestRecord(0.0, 3.0, None, 128, True, "ok", status=200),
        RequestRecord(0.0, 20.0, None, 0, False, "ab-q", abandoned=True),
        RequestRecord(0.0, 20.0, None, 0, False, "ab-r", abandoned=True),
        RequestRecord(0.0, 20.0, None, 0, False, "ab-evicted", abandoned=True),
        RequestRecord(0.0, 9.0, None, 0, False, "late", status=504),
        RequestRecord(0.0, 9.0, None, 0, False, "ran-late", status=504),
        RequestRecord(0.0, 0.1, None, 0, False, "shed", status=429),
        RequestRecord(0.0, 0.1, None, 0, False, "full", status=503),
        RequestRecord(0.0, 0.1, None, 0, False, "bad", status=500),
        RequestRecord(0.0, 0.1, None, 0, False, "reset", status=0),
    ]
    attempts = [
        _attempt("ab-r", 18.0, run=5.0, generated=40, ended=None, reason=None),  # live at 20
        # evicted at 12 and waiting again when its client left: abandoned while queued
        _attempt("ab-evicted", 10.0, run=2.0, generated=30, reason="abort"),
        _attempt("ok", 0.0, run=1.0, generated=20, reason="abort"),
        ModelAttempt("ok", 1.5, 30, 25, 108, generated=108, finish_reason="length"),
        _attempt("ran-late", 7.0, run=2.0, generated=60, reason="abort"),  # cut at 9
    ]
    assert fate_of(records[0]) == "delivered"
    counts = fate_counts(records, attempts)
    assert counts["arrivals"] == len(records) == sum(counts[f] for f in FATES)
    assert {f: counts[f] for f in FATES} == {
        "delivered": 1,
        "abandoned_queued": 2,
        "abandoned_running": 1,
        "deadline": 2,
        "dropped": 2,
        "error": 2,
    }
    assert counts["evicted"] == 1 and counts["resumed"] == 1  # beside the fates
    assert counts["deadline_ran"] == 1  # "late" was refused before any model time


def test_capacity_is_judged_on_admissions_and_enforced_by_default() -> None:
    base = StageMeasure(realtime=_rt(8, 80.0))
    mixed = StageMeasure(
        realtime=_rt(8, 100.0, start=20.0),
        batch=[RequestRecord(0.0, 101.0, None, 0, False, "a", abandoned=True)],
        pool=[PoolSample(50.0, 10, 14)],  # the model ran 10 but held 24
    )
    check = next(c for c in level_checks(80, base, mixed, Judge(10)) if "capacity" in c.name)
    assert check.name == "L80 pool held at capacity" and check.counts
    assert (check.observed, check.bound, check.passed) == (24, 11, False)
    relaxed = Judge(10, env={"AMT_ENFORCE_CAPACITY": "0"})
    observed = next(c for c in level_checks(80, base, mixed, relaxed) if "capacity" in c.name)
    assert not observed.counts and observed.name.endswith("(observation)")


def test_a_late_loop_marks_the_mode_invalid_not_failed() -> None:
    judge = Judge(10)
    assert lag_bound_ms(judge) == pytest.approx(30.0)
    busy = lag_check(44.0, 1.0, judge)  # seen on a loaded host at time scale 1
    assert busy.name == LAG_CHECK and not busy.passed and not busy.counts
    assert "machine too busy" in too_busy(busy) and "44.0 ms" in too_busy(busy)
    assert lag_check(7.0, 5.0, judge).passed is False  # 35 ms scaled
    assert lag_check(5.0, 5.0, judge).passed is True
    invalid = ModeResult(False, [busy], {}, invalid_reason=too_busy(busy))
    assert invalid.passed  # nothing judged failed ...
    report = IsolationReport(modes={"best": invalid})
    assert exit_code(report) == INVALID  # ... but nothing was judged either
    assert report.as_json()["modes"]["best"]["invalid_reason"].startswith("machine too busy")


def test_histogram_median_between_two_scrapes() -> None:
    before = {1.0: 10.0, 2.0: 10.0, 4.0: 10.0, float("inf"): 10.0}
    after = {1.0: 10.0, 2.0: 12.0, 4.0: 20.0, float("inf"): 20.0}  # 2 in (1,2], 8 in (2,4]
    assert histogram_median(before, after) == pytest.approx(2.0 + 2.0 * 3 / 8)
    assert histogram_median(after, after) is None
    assert histogram_median({}, {}) is None


def test_async_only_figures_take_the_whole_pool_as_slack() -> None:
    batch = [
        RequestRecord(float(i), i + 2.0, None, 128, True, f"as-{i}", status=200) for i in range(40)
    ]
    stage = StageMeasure(batch=batch, pool=[PoolSample(5.0, 10, 3)])
    figures = async_only_figures(stage, Judge(10, env={"AMT_WARMUP_S": "3"}), ServiceTime(2.0, 2.0))
    assert figures["slack_completions_per_s"] == 5.0
    assert figures["fate_delivered"] == figures["fate_arrivals"] == 40
    assert figures["max_admitted"] == 13


def test_the_quick_plan_reaches_the_backlogs_steady_state() -> None:
    plan = IsolationOptions(quick=True).plan()
    assert plan.async_lead >= plan.async_timeout + 3  # one patience plus a few seconds
    assert plan.realtime_seconds >= 20
    # the mixed window opens after the first async request could have been abandoned
    assert plan.async_lead + plan.warmup > plan.async_timeout
    full = IsolationOptions().plan()
    assert full.async_lead + full.warmup > full.async_timeout
    assert IsolationOptions(quick=True, async_lead_seconds=4.0).plan().async_lead == 4.0


def test_the_terminal_summary_puts_goodput_beside_dispatches() -> None:
    judge = Judge(10, env={"AMT_WARMUP_S": "15"})
    figures = level_figures(
        80, StageMeasure(realtime=_rt(8, 80.0)), _mixed(0.0, 50), judge, ServiceTime(2.0, 11.0)
    )
    report = IsolationReport(modes={"best": ModeResult(True, [], {"80": figures})})
    head, row = summary_lines(report)
    assert head.split()[:6] == ["mode", "stage", "TTFT", "p90", "x", "goodput/s"]
    cells = row.split()
    assert cells[:2] == ["best", "L80"]
    assert cells[3] == "0.00" and cells[6] == "5.00"  # goodput 0 /s beside 5 dispatches/s
    assert row.endswith("0 / 1 / 50 / 0 / 0 / 0 of 51")  # the one cut by the stop queued
