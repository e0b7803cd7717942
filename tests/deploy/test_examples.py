"""Every example configuration under deploy/examples loads through ``sluiceway check-config``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .check_config import check_config

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
SCENARIOS = "abcdefghi"
KIND_BY_FILE = {
    "processor-values": "helm-values",
    "processor-values-blocking": "helm-values",
    "router-values": "router-values",
    "objectives": "inference-objectives",
    "coordinator": "coordinator",
}
FILES = sorted(EXAMPLES.glob("*/*.yaml"))


def test_one_example_directory_per_scenario() -> None:
    letters = sorted(p.name[0] for p in EXAMPLES.iterdir() if p.is_dir())
    assert "".join(letters) == SCENARIOS


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_example_loads_through_check_config(path: Path) -> None:
    checked = check_config(path)
    assert checked.exit_code == 0, checked.output
    assert checked.kind == KIND_BY_FILE[path.stem]


def test_a_broken_example_fails_naming_the_field(tmp_path: Path) -> None:
    data = yaml.safe_load((EXAMPLES / "a-quota-and-priority" / "processor-values.yaml").read_text())
    data["ap"]["transportConfig"]["queues"][0]["colour"] = "blue"
    broken = tmp_path / "values.yaml"
    broken.write_text(yaml.safe_dump(data))
    checked = check_config(broken)
    assert checked.exit_code == 1
    assert "queues[0].colour" in checked.output


def test_the_saturation_example_keeps_the_cap_below_the_workers() -> None:
    data = yaml.safe_load((EXAMPLES / "c-saturation-gate" / "processor-values.yaml").read_text())
    pool = data["ap"]["workerPools"][0]
    assert "/4, 0, 1)" in pool["gate_params"]["gate"]
    assert pool["workers"] > 4


def test_the_realtime_isolation_example_is_the_benchmarks_best_mode() -> None:
    """deploy/examples/h-realtime-isolation is the recommended configuration, and the isolation
    benchmark's ``best`` mode measures exactly it: router, processor pool gate and resume."""
    from sluiceway.bench.isolation.modes import mode_spec
    from sluiceway.bench.isolation.stack import PROCESSOR_WORKERS

    here = EXAMPLES / "h-realtime-isolation"
    epp = yaml.safe_load((here / "router-values.yaml").read_text())["router"]["epp"]
    router = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    best = mode_spec("best", capacity=10)
    assert router == best.router
    ap = yaml.safe_load((here / "processor-values.yaml").read_text())["ap"]
    (pool,) = ap["workerPools"]
    assert (pool["gate_type"], pool["gate_params"]) == best.pool_gate
    assert pool["workers"] == PROCESSOR_WORKERS
    assert {q["resume"] for q in ap["transportConfig"]["queues"]} == {best.resume}
    # the benchmark's processor runs the defaults; the example states them
    from sluiceway.config.processor_settings import default_of
    from sluiceway.config.quantities import parse_duration

    assert ap["feasibility"] is default_of("feasibility")
    assert parse_duration(ap["serviceTimePrior"]) == default_of("service_time_prior")
    assert parse_duration(ap["overloadSojournTarget"]) == default_of("overload_sojourn_target")
    assert parse_duration(ap["overloadInterval"]) == default_of("overload_interval")
