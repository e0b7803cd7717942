"""Tests mirror the tree: each source module has a test module of its name at the same path
under ``tests/unit/``, ``tests/integration/`` or (for ``broker/``) ``tests/brokers/``.

A reader who opens ``flowcontrol/expiry.py`` finds its tests in ``tests/unit/flowcontrol/
test_expiry.py`` without searching, and those of ``cli.py``, at the top of the package, in
``tests/unit/test_cli.py``. Every package is checked (``MIRRORED`` is computed), and so are
the modules at the top.

``NAMED`` gives the test module where the plain name would mislead: a name, looked for in the
same folders, or a path under ``tests/`` (it holds a ``/``) for tests kept elsewhere: the
demo's in ``tests/e2e/``, the isolation benchmark's beside the ``bench`` package's, the
command line's in ``tests/integration/cli/``. Test modules under ``tests/integration/`` often
carry their package's name (``test_router_flow.py``): those folders are not Python packages,
so pytest needs every module name there unique. A package's ``__init__.py`` is checked only
when named here; its tests sit in its parent's folder.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "sluiceway"
TOP = "."  # the modules at the top of the package: cli.py, clock.py, errors.py ...
MIRRORED = (TOP, *sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()))
# Source module -> test module name, or path under tests/ (with a "/").
NAMED = {
    # the top of the package
    "__init__.py": "test_public_api.py",
    "__main__.py": "integration/cli/test_cli_errors.py",  # each test runs python -m sluiceway
    "cli_requests.py": "integration/cli/test_cli_requests.py",
    "options.py": "test_cli.py",  # the shared flags, read in every command's help
    # bench; bench/isolation is tested beside bench, one module per theme
    "bench/command.py": "test_isolation_external.py",  # runs `bench isolation-sample`
    "bench/isolation/checks.py": "unit/bench/test_isolation_analysis.py",
    "bench/isolation/command.py": "unit/bench/test_isolation_external.py",
    "bench/isolation/fates.py": "unit/bench/test_isolation_figures.py",
    "bench/isolation/figures.py": "unit/bench/test_isolation_figures.py",
    "bench/isolation/inference_perf.py": "unit/bench/test_isolation_external.py",
    "bench/isolation/inference_perf_results.py": "unit/bench/test_isolation_external.py",
    "bench/isolation/lifecycle.py": "unit/bench/test_isolation_analysis.py",
    "bench/isolation/modes.py": "unit/bench/test_isolation_modes.py",
    "bench/isolation/plan.py": "unit/bench/test_isolation_modes.py",
    "bench/isolation/records.py": "unit/bench/test_isolation_analysis.py",
    "bench/isolation/result.py": "unit/bench/test_isolation_figures.py",
    "bench/isolation/sample_command.py": "unit/bench/test_isolation_external.py",
    "bench/isolation/tolerances.py": "unit/bench/test_isolation_analysis.py",
    "bench/isolation/waste.py": "unit/bench/test_isolation_analysis.py",
    # the quick run end to end; the pure helpers (the summary lines, the lag guard,
    # histogram_median) are also tested in unit/bench/test_isolation_figures.py
    "bench/isolation/load.py": "integration/bench/test_isolation_quick.py",
    "bench/isolation/report.py": "unit/bench/test_isolation_report.py",
    "bench/isolation/runner.py": "integration/bench/test_isolation_quick.py",
    "bench/isolation/sampler.py": "integration/bench/test_isolation_quick.py",
    "bench/isolation/stack.py": "integration/bench/test_isolation_quick.py",
    "bench/isolation/replicas.py": "integration/bench/test_isolation_quick.py",  # N=2, M=2
    # broker
    "broker/__init__.py": "integration/broker/test_broker_options.py",  # the transport registry
    "broker/redis.py": "test_redis_broker.py",
    "broker/redis_failover.py": "e2e/test_redis_failover.py",  # a failover needs the whole stack
    "broker/sqlite.py": "test_sqlite_broker.py",
    "broker/lua/__init__.py": "test_lua.py",
    "broker/pubsub_api.py": "test_pubsub_broker.py",  # the gRPC client, against the emulator
    "broker/command.py": "test_postgres_cli.py",  # sluiceway db upgrade
    "broker/postgres.py": "test_postgres_broker.py",
    "broker/postgres_quota.py": "test_postgres_quota_store.py",
    # the pool, the ack batcher and every SQL function run under the broker's conformance suite
    "broker/postgres_db.py": "test_postgres_broker.py",
    "broker/postgres_batch.py": "test_postgres_broker.py",
    "broker/postgres_schema.py": "test_postgres_broker.py",
    # coordinator
    "coordinator/app.py": "test_coordinator_modes.py",
    # the Batch API's routes and service glue, under the openai SDK
    "coordinator/batch_routes.py": "integration/batch/test_batch_sdk.py",
    "coordinator/batches.py": "integration/batch/test_batch_sdk.py",
    "coordinator/command.py": "test_coordinator_cli.py",
    "coordinator/observed.py": "test_coordinator_observability.py",
    "coordinator/responses.py": "test_coordinator_modes.py",  # relayed streams, a client leaving
    # demo: the steps run end to end in test_demo.py, the pure parts in test_demo_parts.py
    "demo/command.py": "e2e/test_demo.py",
    "demo/context.py": "e2e/test_demo.py",
    "demo/findings.py": "e2e/test_demo_parts.py",
    "demo/keep.py": "e2e/test_demo.py",  # --keep-running
    "demo/observe.py": "e2e/test_demo_parts.py",
    "demo/plots.py": "e2e/test_demo.py",
    "demo/report.py": "e2e/test_demo.py",
    "demo/stack.py": "e2e/test_demo.py",  # router_document: test_demo_parts.py
    "demo/steps.py": "e2e/test_demo.py",
    "demo/steps_gates.py": "e2e/test_demo.py",
    "demo/steps_quota.py": "e2e/test_demo.py",  # lane_rows: test_demo_parts.py
    "demo/steps_router.py": "e2e/test_demo.py",
    "demo/tables.py": "e2e/test_demo_parts.py",
    "demo/traffic.py": "e2e/test_demo.py",
    # gates
    "gates/quota_store.py": "brokers/test_memory_quota_store.py",  # the quota-store conformance
    # processor
    "processor/guide_spec.py": "test_proc_scenario_a.py",  # the guide's shape, served
    "processor/mixed_fleet.py": "test_proc_mixed_fleet.py",
    "processor/specs.py": "test_build.py",  # the specs the guide's values build
    # router
    "router/command.py": "test_router_cli.py",
    "router/flow.py": "test_router_flow.py",
    "router/gateway.py": "test_router_openai.py",  # the request path, under the openai client
    "router/kube.py": "test_router_kube.py",
    "router/kube_watch.py": "test_router_kube.py",  # the shared loop, under the objective watch
    "router/objective_files.py": "test_objectives.py",
    "router/observed_app.py": "test_router_observability.py",
    "router/path_watch.py": "test_objectives.py",  # and test_endpoint_file.py
    "router/serve.py": "test_router_drain.py",  # the drain on SIGTERM
    "router/settings.py": "test_build.py",  # checked where the router is built
    # sim
    "sim/http_api.py": "test_sim_http_api.py",
    "sim/sequence.py": "test_engine.py",  # a request's state inside the engine
    "sim/serve_forever.py": "test_sim_command.py",
    "sim/server_pool.py": "test_sim_http_api.py",
}
TEST_ROOTS = (ROOT / "tests" / "unit", ROOT / "tests" / "integration")


def _expected(module: Path) -> tuple[str, list[Path]]:
    relative = module.relative_to(PACKAGE)
    name = NAMED.get(relative.as_posix(), f"test_{module.stem}.py")
    if "/" in name:  # a path under tests/
        return PurePosixPath(name).name, [ROOT / "tests" / name]
    folder = relative.parent
    if module.name == "__init__.py":
        folder = folder.parent
    places = [root / folder / name for root in TEST_ROOTS]
    if folder.parts[:1] == ("broker",):
        places.append(ROOT / "tests" / "brokers" / name)  # the conformance runs
    return name, places


def _modules(package: str) -> list[Path]:
    folder = PACKAGE / package
    found = folder.glob("*.py") if package == TOP else folder.rglob("*.py")
    return [
        path
        for path in sorted(found)
        if path.name != "__init__.py" or path.relative_to(PACKAGE).as_posix() in NAMED
    ]


@pytest.mark.parametrize("package", MIRRORED)
def test_every_module_has_its_test_module(package: str) -> None:
    missing = [
        f"{module.relative_to(PACKAGE)} -> {name}"
        for module in _modules(package)
        for name, places in [_expected(module)]
        if not any(place.exists() for place in places)
    ]
    assert missing == []


def test_every_module_is_checked() -> None:
    checked = {module for package in MIRRORED for module in _modules(package)}
    assert [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" and path not in checked
    ] == []


def test_every_named_module_exists() -> None:
    assert [module for module in NAMED if not (PACKAGE / module).is_file()] == []


def test_the_check_sees_a_missing_test_module() -> None:
    name, places = _expected(PACKAGE / "flowcontrol" / "usage" / "static.py")
    assert name == "test_static.py"
    assert ROOT / "tests" / "unit" / "flowcontrol" / "usage" / "test_static.py" in places
    _, nowhere = _expected(PACKAGE / "wire" / "no_such_module.py")
    assert not any(place.exists() for place in nowhere)
    _, top = _expected(PACKAGE / "cli.py")
    assert ROOT / "tests" / "unit" / "test_cli.py" in top
    _, elsewhere = _expected(PACKAGE / "demo" / "command.py")
    assert elsewhere == [ROOT / "tests" / "e2e" / "test_demo.py"]
