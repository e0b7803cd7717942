"""The isolation analysis reproduces the nightly validator's pinned behaviours: percentiles,
tolerance precedence, records, closed-loop rates, boundaries, holdback, dispatch rates."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.bench.isolation.checks import (
    BandSample,
    Judge,
    PoolSample,
    StageMeasure,
    async_only_checks,
    dispatch_rate,
    level_checks,
)
from sluiceway.bench.isolation.fates import fate_counts
from sluiceway.bench.isolation.lifecycle import parse_entry, pin_to_wall, read_lifecycle_file
from sluiceway.bench.isolation.records import (
    RequestRecord,
    Window,
    baseline_window,
    mixed_window,
    percentile,
    treatment_stats,
)
from sluiceway.bench.isolation.tolerances import tolerance
from sluiceway.bench.isolation.waste import ModelAttempt, Waste, wasted_tokens

FIXTURE = Path("tests/fixtures/inference_perf/per_request_lifecycle_metrics.json")


def test_percentiles_interpolate_linearly() -> None:
    assert percentile([3], 0.9) == 3
    assert percentile([1, 2, 3, 4], 0) == 1
    assert percentile([1, 2, 3, 4], 1) == 4
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([10, 20, 30, 40, 50], 0.9) == pytest.approx(46)
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_tolerance_precedence() -> None:
    assert tolerance("RPS_FACTOR", 80, {}) == 0.85
    assert tolerance("RPS_FACTOR", 20, {}) == 0.75
    assert (
        tolerance("RPS_FACTOR", 20, {"AMT_RPS_FACTOR": "0.5"}) == 0.5
    )  # global beats level default
    env = {"AMT_RPS_FACTOR": "0.5", "AMT_LEVEL_20_RPS_FACTOR": "0.6"}
    assert tolerance("RPS_FACTOR", 20, env) == 0.6  # level env beats global
    assert tolerance("RPS_FACTOR", 80, {"AMT_LEVEL_20_RPS_FACTOR": "0.1"}) == 0.85
    assert tolerance("RPS_FACTOR", 80, {"AMT_RPS_FACTOR": ""}) == 0.85  # empty means unset
    with pytest.raises(KeyError):
        tolerance("NOPE", 80, {})


def test_records_from_inference_perf_entries() -> None:
    entry = {
        "start_time": 100.0,
        "end_time": 101.0,
        "info": {"output_token_times": [100.25, 100.5]},
    }
    record = parse_entry(entry)
    assert record is not None and record.ttft == pytest.approx(0.25) and record.ok
    chunks = {"start_time": 100.0, "end_time": 101.0, "info": {"chunk_times": [100.5]}}
    assert parse_entry(chunks).ttft == pytest.approx(0.5)  # type: ignore[union-attr]
    failed = {**entry, "error": {"error_type": "TimeoutError", "error_msg": ""}}
    assert parse_entry(failed).ok is False  # type: ignore[union-attr]
    foreign = {"start_time": 100.0, "end_time": 101.0, "info": {"output_token_times": [5000.0]}}
    assert parse_entry(foreign).ttft is None  # type: ignore[union-attr]
    assert parse_entry({"start_time": "x"}) is None
    assert parse_entry([1, 2]) is None
    usage = {
        "start_time": 0.0,
        "end_time": 1.0,
        "info": {
            "response_metrics": {"output_tokens": 3, "server_usage": {"completion_tokens": 128}}
        },
    }
    assert parse_entry(usage).tokens == 128  # type: ignore[union-attr]


def test_errors_keep_their_status_and_a_client_timeout_is_abandoned() -> None:
    """inference-perf records an error answer as ``HTTP Error <status>`` and its own
    ``request_timeout`` (aiohttp's) as a timeout without a status: the client gave up."""

    def failed(error_type: str, error_msg: str) -> RequestRecord:
        entry = {"start_time": 0.0, "end_time": 20.0, "info": {}, "error": None}
        record = parse_entry({**entry, "error": {"error_type": error_type, "error_msg": error_msg}})
        assert record is not None and not record.ok
        return record

    gave_up = failed("TimeoutError", "Request timed out")
    assert gave_up.abandoned and gave_up.status == 0
    assert failed("SocketTimeoutError", "Timeout on reading data from socket").abandoned
    deadline = failed("HTTP Error 504", '{"error": "deadline exceeded: timeout"}')
    assert (deadline.abandoned, deadline.status) == (False, 504)
    assert failed("HTTP Error 429", "queue full").status == 429
    refused = failed("ClientConnectorError", "Cannot connect to host")
    assert (refused.abandoned, refused.status) == (False, 0)
    ok = parse_entry({"start_time": 0.0, "end_time": 1.0, "info": {}, "error": None})
    assert ok is not None and ok.ok and ok.status == 200 and not ok.abandoned


def test_abandoned_entries_count_as_abandoned_fates() -> None:
    entries = [
        {"start_time": 0.0, "end_time": 2.0, "info": {}, "error": None},
        {"start_time": 0.0, "end_time": 20.0, "error": {"error_type": "TimeoutError"}},
        {"start_time": 0.0, "end_time": 5.0, "error": {"error_type": "HTTP Error 504"}},
    ]
    records = [r for r in map(parse_entry, entries) if r is not None]
    counts = fate_counts(records, [])
    assert (counts["delivered"], counts["abandoned_queued"], counts["deadline"]) == (1, 1, 1)
    assert counts["arrivals"] == 3


def test_lifecycle_file_fixture_both_layouts() -> None:
    records = read_lifecycle_file(FIXTURE)
    assert [r.ok for r in records] == [True, True, False]  # the malformed entry is dropped
    assert records[2].abandoned  # its TimeoutError: the client gave up
    assert records[0].ttft == pytest.approx(0.25) and records[0].tokens == 128
    assert records[1].ttft == pytest.approx(0.5) and records[1].tokens == 128
    assert records[2].ttft is None


def test_monotonic_stamps_pinned_to_the_harness_stop() -> None:
    records = [RequestRecord(10.0, 12.0, 0.1, 1, True), RequestRecord(11.0, 15.0, 0.1, 1, True)]
    pinned = pin_to_wall(records, harness_stop=1_700_000_000.0)
    assert pinned[1].end == 1_700_000_000.0 and pinned[0].start == 1_699_999_995.0
    epoch = [RequestRecord(1_700_000_000.0, 1_700_000_001.0, None, 1, True)]
    assert pin_to_wall(epoch, 5.0) == epoch
    # with the machine's wall-minus-monotonic offset the shift is exact, not the stop's guess
    exact = pin_to_wall(records, harness_stop=1_700_000_000.0, clock_offset=1_699_999_980.0)
    assert exact[1].end == 1_699_999_995.0 and exact[0].start == 1_699_999_990.0
    assert pin_to_wall(epoch, 5.0, clock_offset=100.0) == epoch


def _closed_loop(k: int, latency: float, until: float, ttft: float = 0.1) -> list[RequestRecord]:
    out = []
    for _ in range(k):
        t = 0.0
        while t + latency <= until:
            out.append(RequestRecord(t, t + latency, ttft, 128, True))
            t += latency
    return out


def test_closed_loop_rates() -> None:
    records = _closed_loop(4, 2.0, 200.0)
    stats = treatment_stats(records, Window(0.0, 200.0))
    assert stats.rps == pytest.approx(4 / 2.0)
    assert stats.tps == pytest.approx(128 * 4 / 2.0)


def test_windows() -> None:
    a = [RequestRecord(0.0, 5.0, None, 1, True), RequestRecord(1.0, 40.0, None, 1, True)]
    b = [RequestRecord(3.0, 30.0, None, 1, True)]
    assert baseline_window(a, 15) == Window(15.0, 40.0)
    assert mixed_window([a, b], 15) == Window(18.0, 30.0)
    assert mixed_window([a, []], 15).length <= 0


def _stage(ttft: float, latency: float = 2.0, k: int = 8) -> StageMeasure:
    return StageMeasure(
        realtime=_closed_loop(k, latency, 100.0, ttft), batch=_closed_loop(1, 2.0, 100.0)
    )


def _named(checks: list, suffix: str):  # type: ignore[no-untyped-def]
    return next(c for c in checks if c.name.endswith(suffix))


def test_ttft_boundary() -> None:
    judge = Judge(10)
    base = _stage(0.1)
    assert _named(level_checks(80, base, _stage(0.449), judge), "ttft p50").passed
    failing = _named(level_checks(80, base, _stage(0.451), judge), "ttft p50")
    assert not failing.passed and failing.bound == pytest.approx(0.45)


def test_rps_boundary_and_level_override() -> None:
    base = _stage(0.1, latency=2.0, k=8)  # 4.0 req/s
    slower = _stage(0.1, latency=8 / 3.39, k=8)  # 3.39 req/s
    check = _named(level_checks(80, base, slower, Judge(10)), "req/s")
    assert check.bound == pytest.approx(3.4, rel=0.02) and not check.passed
    at20 = _named(level_checks(20, base, slower, Judge(10)), "req/s")
    assert at20.bound == pytest.approx(3.0, rel=0.02) and at20.passed
    env = {"AMT_LEVEL_80_RPS_FACTOR": "0.8"}
    assert _named(level_checks(80, base, slower, Judge(10, env=env)), "req/s").passed


def test_members_that_never_overlap_give_one_failing_check() -> None:
    base = _stage(0.1)
    mixed = StageMeasure(
        realtime=_closed_loop(2, 2.0, 10.0), batch=[RequestRecord(500.0, 510.0, None, 1, True)]
    )
    checks = level_checks(80, base, mixed, Judge(10))
    assert [(c.name, c.passed) for c in checks] == [("L80 members overlapped", False)]


def _holdback_stage() -> StageMeasure:
    running = [6, 5, 5, 4, 5]
    pool = [PoolSample(float(i), r, 0) for i, r in enumerate(running)]
    bands = [BandSample(0.0, {-10: 0.0}), BandSample(10.0, {-10: 20.0})]
    batch = [RequestRecord(0.0, 2.0, None, 128, True)]
    return StageMeasure(batch=batch, pool=pool, bands=bands)


def test_holdback_async_only_checks_scale_by_the_ceiling() -> None:
    stage = _holdback_stage()
    names = ("pool saturation (max)", "pool saturation (p50)", "dispatch rate")
    at_half = async_only_checks(stage, 5.0, Judge(10, ceiling=0.5))
    assert all(_named(at_half, n).passed for n in names)
    at_one = async_only_checks(stage, 5.0, Judge(10, ceiling=1.0))
    assert not any(_named(at_one, n).passed for n in names)


def test_dispatch_rate_from_counter_deltas() -> None:
    bands = [BandSample(0.0, {-10: 10.0, 30: 1.0}), BandSample(40.0, {-10: 26.0, 30: 5.0})]
    assert dispatch_rate(bands, Window(0.0, 40.0), (60, 30, -5, -10)) == pytest.approx(0.5)
    assert dispatch_rate(bands[:1], Window(0.0, 40.0), (-10,)) is None


def test_wasted_tokens_evicted_retried_resumed_and_undelivered() -> None:
    evicted = [
        ModelAttempt("a", 0.0, 10, 0, 128, generated=60),
        ModelAttempt("a", 1.0, 10, 10, 128, generated=128),
    ]
    assert wasted_tokens(evicted, {"a": 128}) == Waste(188, evicted=60)
    resumed = [
        ModelAttempt("r", 0.0, 10, 0, 128, generated=60),
        ModelAttempt("r", 1.0, 70, 64, 68, generated=68),  # 6 grown tokens missed the cache
    ]
    assert wasted_tokens(resumed, {"r": 128}) == Waste(128, recomputed=6)
    # nobody received the answer: every token of every attempt went to nobody, the last too
    abandoned = [
        ModelAttempt("x", 0.0, 10, 0, 128, generated=30),
        ModelAttempt("x", 1.0, 10, 0, 128, generated=5),
    ]
    assert wasted_tokens(abandoned, {}) == Waste(35, undelivered=35)
    assert wasted_tokens(abandoned, {}).wasted == 35
