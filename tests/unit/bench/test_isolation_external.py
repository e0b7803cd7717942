"""The external client: inference-perf configs per treatment and their run.sh, the sampler
that records what inference-perf cannot, and ``--analyze`` judging a directory of
inference-perf results (a recorded run under tests/fixtures/inference_perf/run) like a builtin
run."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, generate_latest

from loopback import serving
from sluiceway.bench.isolation.command import exit_code, parse_settings, run_command
from sluiceway.bench.isolation.fates import FATES
from sluiceway.bench.isolation.inference_perf import write_configs
from sluiceway.bench.isolation.inference_perf_results import analyze_dir
from sluiceway.bench.isolation.plan import IsolationOptions
from sluiceway.bench.isolation.sample_command import SampleLog, run_sampler, sample_of
from sluiceway.bench.isolation.sampler import PoolWatch, registry_of, scrape_request_time
from sluiceway.clock import VirtualClock

RUN = Path("tests/fixtures/inference_perf/run")


def _entries(k: int, latency: float, ttft: float, until: float, start: float = 0.0) -> list[dict]:
    out = []
    for _ in range(k):
        t = start
        while t + latency <= until:
            info = {
                "response_metrics": {
                    "output_tokens": 128,
                    "server_usage": {"completion_tokens": 128},
                    "output_token_times": [t + ttft],
                }
            }
            out.append({"start_time": t, "end_time": t + latency, "info": info, "error": None})
            t += latency
    return out


def _write(folder: Path, name: str, entries: list[dict]) -> None:
    target = folder / name / "results"
    target.mkdir(parents=True)
    (target / "per_request_lifecycle_metrics.json").write_text(json.dumps(entries))


def test_analyze_dir_judges_inference_perf_results(tmp_path: Path) -> None:
    _write(tmp_path, "async_only", _entries(10, 2.0, 0.1, 60.0))
    _write(tmp_path, "baseline_80", _entries(8, 2.0, 0.1, 80.0))
    _write(tmp_path, "mixed_80_rt", _entries(8, 2.1, 0.15, 100.0, start=20.0))
    _write(tmp_path, "mixed_80_async", _entries(2, 2.0, 0.1, 110.0))
    samples = [
        {"at": float(t), "running": 10, "waiting": 0, "bands": {"100": t, "-10": 5.0 * t}}
        for t in range(0, 110, 5)
    ]
    (tmp_path / "samples.json").write_text(json.dumps(samples))
    options = IsolationOptions(modes=("eviction",), levels=(80,))
    report = analyze_dir(tmp_path, options)
    result = report.modes["eviction"]
    assert result.valid and set(result.figures) == {"80"}
    assert result.passed, [c.name for c in result.failed()]
    assert result.figures["80"]["ttft_p50_ratio"] == 1.5
    assert exit_code(report) == 0


def _fates_add_up(figures: dict[str, float | None]) -> bool:
    return sum(figures[f"fate_{fate}"] or 0.0 for fate in FATES) == figures["fate_arrivals"]


def test_analyze_dir_judges_a_recorded_quick_run() -> None:
    """A real quick run (tests/fixtures/inference_perf/run/NOTES.md): inference-perf's
    monotonic stamps pinned by harness.json, the sampler's samples.json; the quick plan's 3 s
    warm-up leaves every window open."""
    report = analyze_dir(RUN, IsolationOptions(modes=("eviction",), quick=True))
    result = report.modes["eviction"]
    assert report.run["warmup_s"] == 3.0 and result.valid
    level = result.figures["80"]
    assert level["window_s"] is not None and level["window_s"] > 0
    assert level["baseline_ttft_p50_s"] is not None and level["mixed_ttft_p50_s"] is not None
    # the model's service time: the median of the model server's request-time histogram over
    # the async-only stage (a 128-token completion on the guide pool takes about 2 s)
    service = result.async_only["service_time_s"]
    assert service is not None and 1.0 < service < 3.0 and level["service_time_s"] == service
    assert level["async_goodput_per_s"] and level["slack_slots"] is not None
    assert level["mean_realtime_running"] is not None and level["mean_realtime_running"] > 0
    assert level["fate_arrivals"] and _fates_add_up(level)
    alone = result.async_only
    assert alone["window_s"] is not None and alone["window_s"] > 0
    assert alone["async_goodput_per_s"] and alone["fate_delivered"]
    assert alone["fate_arrivals"] and _fates_add_up(alone)
    names = {c.name: c for c in result.checks}
    assert names["L80 members overlapped"].passed
    assert names["async-only results honour ignore_eos"].passed  # exactly 128 tokens each
    assert names["realtime classified into band 100"].passed
    assert names["async classified into batch bands"].passed


def _quick_configs(tmp_path: Path, model_servers: tuple[str, ...] = ()) -> Path:
    options = IsolationOptions(quick=True, endpoints=("http://coordinator:8080",))
    write_configs(
        options,
        tmp_path,
        Path("/opt/ip-venv"),
        tokenizer="/opt/tok",
        model_servers=model_servers,
        python="/opt/sw/bin/python",
    )
    return tmp_path / "inference-perf"


def test_write_configs_one_per_treatment(tmp_path: Path) -> None:
    folder = _quick_configs(tmp_path, ("http://ms-0:8000", "http://ms-1:8000"))
    assert sorted(p.name for p in folder.iterdir()) == [
        "async_only.yaml",
        "baseline_80.yaml",
        "mixed_80_async.yaml",
        "mixed_80_rt.yaml",
        "run.sh",
    ]
    rt = yaml.safe_load((folder / "mixed_80_rt.yaml").read_text())
    assert rt["load"]["type"] == "concurrent"
    assert rt["load"]["stages"] == [{"concurrency_level": 8, "num_requests": 80}]
    assert rt["api"]["headers"] == {
        "x-llm-d-async-mode": "passthrough",
        "x-llm-d-tenant": "realtime",
    }
    assert rt["api"]["streaming"] is True and rt["server"]["ignore_eos"] is True
    assert rt["storage"]["local_storage"]["path"] == "mixed_80_rt"
    assert rt["report"]["request_lifecycle"]["per_request"] is True
    batch = yaml.safe_load((folder / "mixed_80_async.yaml").read_text())
    assert batch["load"]["stages"][0]["rate"] == 10 and batch["load"]["request_timeout"] == 20
    assert batch["api"]["headers"] == {"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "batch"}


def test_every_config_asks_exactly_128_tokens_of_an_offline_tokenizer(tmp_path: Path) -> None:
    """Random data sets each request's max_tokens from output_distribution; a fixed one asks
    exactly the plan's 128 (mock data would send inference-perf's default of 30)."""
    folder = _quick_configs(tmp_path)
    for path in folder.glob("*.yaml"):
        config = yaml.safe_load(path.read_text())
        assert config["tokenizer"] == {"pretrained_model_name_or_path": "/opt/tok"}
        data = config["data"]
        assert data["type"] == "random"
        assert data["output_distribution"] == {"min": 128, "max": 128, "mean": 128, "std_dev": 0}
        prompt = data["input_distribution"]
        assert prompt["min"] == prompt["max"] == prompt["mean"] and prompt["std_dev"] == 0


def test_a_local_tokenizer_directory_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tok").mkdir()
    write_configs(IsolationOptions(quick=True), tmp_path, None, tokenizer="tok")
    config = yaml.safe_load((tmp_path / "inference-perf" / "async_only.yaml").read_text())
    assert config["tokenizer"]["pretrained_model_name_or_path"] == str(tmp_path / "tok")


def test_configs_need_a_tokenizer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="--tokenizer"):
        write_configs(IsolationOptions(quick=True), tmp_path, None)
    code = run_command(
        modes="",
        quick=True,
        full=False,
        levels="",
        output=tmp_path,
        time_scale=1.0,
        capacity=10,
        endpoints="",
        settings=[],
        analyze=None,
        client="inference-perf",
        venv=None,
    )
    assert code == 2 and "--tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "inference-perf").exists()


def test_run_sh_samples_the_run_and_stamps_every_treatment(tmp_path: Path) -> None:
    script = (
        _quick_configs(tmp_path, ("http://ms-0:8000", "http://ms-1:8000")) / "run.sh"
    ).read_text()
    lines = script.splitlines()
    sampler = next(i for i, line in enumerate(lines) if "isolation-sample" in line)
    assert lines[sampler] == (
        "/opt/sw/bin/python -m sluiceway bench isolation-sample"
        " --model-servers http://ms-0:8000,http://ms-1:8000 --router http://coordinator:8080"
        " --output samples.json & sampler=$!"
    )
    assert "trap cleanup EXIT" in lines and 'kill "$sampler"' in script  # ... killed at the end
    # every treatment's wall start and stop go to its harness.json
    assert '    /opt/ip-venv/bin/inference-perf --config_file "$1.yaml"' in lines
    assert "date +%s.%N" in script and '> "$1/harness.json"' in script
    # ... with the wall-minus-monotonic offset read by the same Python, for an exact shift
    assert "/opt/sw/bin/python -c 'import time; print(time.time() - time.monotonic())'" in script
    # sampling starts before the first treatment
    assert lines[sampler + 1] == "sleep 1  # a first sample before the first request"
    assert lines[sampler + 2 :] == [
        "treatment async_only",
        "treatment baseline_80",
        "async_start=$(date +%s.%N)",
        "/opt/ip-venv/bin/inference-perf --config_file mixed_80_async.yaml & pid=$!",
        "sleep 25",  # the quick plan's lead
        "treatment mixed_80_rt",
        'wait "$pid"',
        "pid=",
        'stamp mixed_80_async "$async_start"',
    ]


def test_run_sh_without_model_servers_says_samples_are_missing(tmp_path: Path) -> None:
    script = (_quick_configs(tmp_path) / "run.sh").read_text()
    assert "isolation-sample" not in script
    assert "samples.json will be missing" in script


def _model_server(running: int, waiting: int, buckets: dict[str, int]) -> str:
    lines = [
        "# TYPE vllm:num_requests_running gauge",
        f'vllm:num_requests_running{{model_name="m",engine="0"}} {running}',
        "# TYPE vllm:num_requests_waiting gauge",
        f'vllm:num_requests_waiting{{model_name="m",engine="0"}} {waiting}',
        "# TYPE vllm:request_inference_time_seconds histogram",
    ]
    for le, count in buckets.items():
        lines.append(
            f'vllm:request_inference_time_seconds_bucket{{le="{le}",model_name="m"}} {count}'
        )
    lines.append(f'vllm:request_inference_time_seconds_count{{model_name="m"}} {count}')
    return "\n".join(lines) + "\n"


def _router() -> str:
    registry = CollectorRegistry()
    requests = Counter(
        "llm_d_epp_flow_control_requests_total",
        "Requests by flow-control outcome.",
        ("outcome", "priority", "inference_pool"),
        registry=registry,
    )
    requests.labels("dispatched", "100", "pool").inc(7)
    requests.labels("evicted", "100", "pool").inc(1)
    requests.labels("dispatched", "-10", "pool").inc(4)
    return generate_latest(registry).decode()


def test_one_sample_sums_the_model_servers_and_reads_the_bands() -> None:
    a = registry_of(_model_server(3, 1, {"1.0": 2, "2.5": 5, "+Inf": 6}))
    b = registry_of(_model_server(4, 0, {"1.0": 1, "2.5": 1, "+Inf": 1}))
    sample = sample_of(12.5, [a, b], registry_of(_router()))
    assert sample == {
        "at": 12.5,
        "running": 7,
        "waiting": 1,
        "bands": {"-10": 4.0, "100": 8.0},
        "request_time": {"1.0": 3.0, "2.5": 6.0, "+Inf": 7.0},
    }
    # a server that did not answer adds nothing, and leaves no partial histogram
    partial = sample_of(13.0, [a, None], None)
    assert (partial["running"], partial["request_time"], partial["bands"]) == (3, None, None)


@pytest.fixture
async def metrics() -> AsyncIterator[str]:
    texts = {
        "a": _model_server(3, 1, {"1.0": 2, "+Inf": 6}),
        "b": _model_server(4, 2, {"1.0": 1, "+Inf": 1}),
        "router": _router(),
    }

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=texts[request.match_info["who"]])

    app = web.Application()
    app.router.add_get("/{who}/metrics", handler)
    async with serving(app) as url:
        yield url


async def test_sampler_polls_and_writes_samples(metrics: str, tmp_path: Path) -> None:
    log = SampleLog(tmp_path / "out" / "samples.json")
    stop = asyncio.Event()
    before = time.time()
    sampling = asyncio.create_task(
        run_sampler([f"{metrics}/a", f"{metrics}/b"], f"{metrics}/router", log, stop, 0.05, 0.1)
    )
    await asyncio.sleep(0.4)
    stop.set()
    await asyncio.wait_for(sampling, 5)
    written = json.loads(log.output.read_text())
    assert written == log.samples and len(written) >= 3
    assert all(before <= s["at"] <= time.time() for s in written)
    assert [s["at"] for s in written] == sorted(s["at"] for s in written)
    last = written[-1]
    assert (last["running"], last["waiting"]) == (7, 3)
    assert last["bands"] == {"-10": 4.0, "100": 8.0}
    assert last["request_time"] == {"1.0": 3.0, "+Inf": 7.0}


async def test_the_builtin_run_reads_real_servers_with_the_same_parser(metrics: str) -> None:
    """Against ``--endpoints`` the builtin run scrapes what the sampler scrapes: running and
    waiting summed over servers, the request-time buckets by upper bound (a dead one adds 0)."""
    servers = (f"{metrics}/a", f"{metrics}/b", "http://127.0.0.1:9/gone")
    async with aiohttp.ClientSession() as http:
        assert await scrape_request_time(http, servers) == {1.0: 3.0, float("inf"): 7.0}
        watch = PoolWatch(VirtualClock(), (), servers, CollectorRegistry(), lambda: 0)
        assert await watch._pool_now(http) == (7, 3)


async def test_sample_command_writes_the_file_and_exits_0_on_sigterm(
    metrics: str, tmp_path: Path
) -> None:
    output = tmp_path / "samples.json"
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "sluiceway", "bench", "isolation-sample"),
        *("--model-servers", f"{metrics}/a", "--router", f"{metrics}/router"),
        *("--output", str(output), "--interval", "0.05"),
        stdout=asyncio.subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    # another process writes the file (after its first sample): there is no event to await
    while not output.exists() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0
    samples = json.loads(output.read_text())
    assert samples and samples[-1]["running"] == 3 and samples[-1]["bands"]["100"] == 8.0
    assert f"wrote {len(samples)} samples" in out.decode()


def test_settings_must_be_amt_pairs() -> None:
    assert parse_settings(["AMT_TTFT_ABS=0.5"]) == {"AMT_TTFT_ABS": "0.5"}
    for bad in ("TTFT_ABS=1", "AMT_X"):
        try:
            parse_settings([bad])
        except ValueError:
            continue
        raise AssertionError(bad)
