"""``sluiceway demo`` runs every scenario in process and every check it prints passes; the
report is written, with plots when matplotlib is installed and a hint when it is not; the
same demo runs against a private Redis; a failing check makes the command exit 1."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sluiceway.demo import plots
from sluiceway.demo.command import register
from sluiceway.demo.findings import StepReport
from sluiceway.demo.steps import STEPS, Step
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.serial

SCENARIOS = [s.key for s in STEPS]


def _cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """sluiceway"""

    register(app)
    return app


def _run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), ["demo", *args], catch_exceptions=False)
    return result.exit_code, result.output


def _assert_passed(code: int, output: str) -> None:
    assert code == 0, output
    assert "demo passed" in output
    assert not re.search(r"│ NO +│", output), output
    for key in SCENARIOS:
        assert f"Scenario {key}:" in output


def test_demo_runs_every_scenario_in_process_and_writes_the_report(tmp_path: Path) -> None:
    code, output = _run(["--report", str(tmp_path / "report")])
    _assert_passed(code, output)
    assert SCENARIOS == ["A", "B", "C", "D", "E", "F", "G", "H"]
    for table in ("per lane", "quota counters over time", "Realtime TTFT"):
        assert table in output
    page = (tmp_path / "report" / "index.html").read_text()
    assert "8 of 8 scenarios passed" in page
    if plots.plotting_available():
        for name in ("lane-timeline.png", "ttft-cdf.png", "occupancy.png"):
            png = tmp_path / "report" / name
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f'src="{name}"' in page


def test_without_matplotlib_the_report_has_no_pictures_and_says_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plots, "plotting_available", lambda: False)
    code, output = _run(["--steps", "A", "--report", str(tmp_path)])
    assert code == 0, output
    assert "pip install 'sluiceway[demo]'" in output
    assert "pip install &#x27;sluiceway[demo]&#x27;" in (tmp_path / "index.html").read_text()
    assert not list(tmp_path.glob("*.png"))


def test_step_h_beside_two_busy_loops_still_reaches_a_verdict(tmp_path: Path) -> None:
    """Both cores taken by CPU-bound work: the isolation step lowers its time scale to what
    its event loop's lag allows and still judges; "too busy" only past the bound at scale 1,
    never a false NO."""
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(2)]
    try:
        code, output = _run(["--steps", "H", "--report", str(tmp_path)])
    finally:
        for loop in busy:
            loop.kill()
            loop.wait()
    assert code == 0, output
    assert "Scenario H:" in output
    assert not re.search(r"│ NO +│", output), output
    assert re.search(r"│ (yes|too busy) +│", output), output


@pytest.mark.redis
def test_demo_against_a_private_redis(redis_server: RedisServer, tmp_path: Path) -> None:
    code, output = _run(["--redis", redis_server.url, "--report", str(tmp_path)])
    _assert_passed(code, output)
    assert f"Redis at {redis_server.url}" in output


def test_a_failing_check_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(ctx: object, report: StepReport) -> None:
        report.check("something the demo must see", False, "not seen")

    monkeypatch.setattr("sluiceway.demo.steps.STEPS", (Step("X", "x", broken),))
    code, output = _run(["--report", str(tmp_path)])
    assert code == 1
    assert "demo failed" in output and "NO" in output


def test_a_warning_repeated_by_every_step_is_printed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def noisy(ctx: object, report: StepReport) -> None:
        logging.getLogger("sluiceway.somewhere").warning("the same advice")
        report.check("ran", True, "")

    step = STEPS[0].__class__
    monkeypatch.setattr(
        "sluiceway.demo.steps.STEPS", (step("X", "x", noisy), step("Y", "y", noisy))
    )
    code, output = _run(["--report", str(tmp_path)])
    assert code == 0, output
    assert output.count("the same advice") == 1


@pytest.mark.parametrize(
    ("url", "says"),
    [("http://x", "use redis://"), ("redis://127.0.0.1:1/0", "unreachable")],
)
def test_a_bad_redis_url_is_a_clear_error_before_any_step(url: str, says: str) -> None:
    result = CliRunner().invoke(_cli(), ["demo", "--redis", url])
    assert result.exit_code == 2
    assert says in result.output and "--redis" in result.output
    assert "Scenario" not in result.output


def test_unknown_step_is_a_usage_error() -> None:
    code, output = _run(["--steps", "A,Q"])
    assert code == 2
    assert "unknown step Q" in output


def test_make_style_entry_point_runs_in_a_fresh_process(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sluiceway", "demo", "--steps", "A", "--report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo passed" in proc.stdout


def test_keep_running_serves_the_openai_client_until_interrupted(tmp_path: Path) -> None:
    import signal

    import openai

    args = ["demo", "--steps", "A", "--keep-running", "--report", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluiceway", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:  # the URLs come after the demo's tables
            lines.append(line)
            if re.match(r"coordinator +http", line):
                break
        base = line.split()[1]
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1"), lines
        client = openai.OpenAI(
            base_url=base,
            api_key="-",
            max_retries=0,
            default_headers={"x-llm-d-tenant": "premium", "x-llm-d-async-mode": "wait"},
        )
        reply = client.completions.create(model="sim-model", prompt="hi", max_tokens=4)
        assert reply.usage is not None and reply.usage.completion_tokens == 4
        client.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
