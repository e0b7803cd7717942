"""The Helm chart: every value set renders (helm-python-sdk, no helm binary), the configs it
mounts load through ``sluiceway check-config``, built-in kinds pass kubernetes-validate in
strict mode, and InferenceObjectives match their CRD's schema (tests/fixtures/crds).

Rendering and validation need the ``deploy-test`` extra (large: ~350 MB); without it those
tests skip with the reason, and the values-derived configs are still checked.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .chart import (
    CHART,
    ROOT,
    VALUE_SETS,
    derived_configs,
    effective_values,
    render,
    rendered_configs,
    user_values,
)
from .check_config import check_config

SETS = sorted(VALUE_SETS)
CRD_SCHEMA = ROOT / "tests" / "fixtures" / "crds" / "inferenceobjective-v1alpha2.schema.json"
KIND_OF_FILE = {
    "values.yaml": "helm-values",
    "router-values.yaml": "router-values",
    "objectives.yaml": "inference-objectives",
    "coordinator.yaml": "coordinator",
}
BUILT_IN = {
    "ConfigMap",
    "Deployment",
    "PersistentVolumeClaim",
    "Role",
    "RoleBinding",
    "Service",
    "ServiceAccount",
    "StatefulSet",
}
# Custom kinds, each with its CRD's schema in tests/fixtures/crds (test_helm_operations.py checks
# the Prometheus Operator's).
CUSTOM = {"InferenceObjective", "ServiceMonitor", "PodMonitor", "PrometheusRule"}


def _check_all(configs: dict[str, Any], tmp_path: Path) -> None:
    for name, doc in configs.items():
        path = tmp_path / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        checked = check_config(path)
        assert checked.exit_code == 0, f"{name}: {checked.output}"
        assert checked.kind == KIND_OF_FILE[name]


@pytest.mark.parametrize("name", SETS)
def test_values_derived_configs_load_through_check_config(name: str, tmp_path: Path) -> None:
    configs = derived_configs(effective_values(name))
    assert configs
    _check_all(configs, tmp_path)


def test_guide_values_move_over_unchanged() -> None:
    """The guide's ap and router blocks are the chart's own defaults (no key renamed)."""
    values = effective_values("defaults")
    guide = user_values("guide-quota-only-evictable")
    assert values["ap"]["transportConfig"] == guide["ap"]["transportConfig"]
    assert values["ap"]["workerPools"] == guide["ap"]["workerPools"]
    assert values["router"]["epp"] == guide["router"]["epp"]


@pytest.mark.parametrize("name", SETS)
def test_rendered_configs_load_and_match_the_values(name: str, tmp_path: Path) -> None:
    values = effective_values(name)
    configs = rendered_configs(render(user_values(name)))
    assert configs == derived_configs(values)
    _check_all(configs, tmp_path)


def test_defaults_render_every_part_with_the_guide_service_names() -> None:
    docs = render({})
    objects = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {
        ("Deployment", "llm-d-async"),
        ("Deployment", "llm-d-router-epp"),
        ("Deployment", "llm-d-coordinator"),
        ("Deployment", "redis"),
        ("StatefulSet", "model-server"),
        ("Service", "redis"),
        ("Service", "llm-d-router-epp"),
        ("Service", "llm-d-coordinator"),
    } <= objects
    objectives = {d["metadata"]["name"]: d["spec"]["priority"] for d in docs if _is_objective(d)}
    assert objectives == {
        "reserved-interactive": 100,
        "reserved-async": 60,
        "reserved-batch": 30,
        "overflow-interactive": 10,
        "overflow-async": -5,
        "overflow-batch": -10,
    }


def _container(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    deploy = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name)
    container: dict[str, Any] = deploy["spec"]["template"]["spec"]["containers"][0]
    return container


def test_the_router_sends_to_every_simulator_replica() -> None:
    """Without router.modelServers.matchLabels (with them, see test_helm_operations.py)."""
    values = {"simulator": {"replicas": 3}, "router": {"modelServers": {"matchLabels": None}}}
    args = _container(render(values), "llm-d-router-epp")["args"]
    urls = [a for a in args if a.startswith("--endpoints=")]
    assert urls == [
        "--endpoints=http://model-server-0.model-server:8000,"
        "http://model-server-1.model-server:8000,http://model-server-2.model-server:8000"
    ]


def test_real_model_servers_and_an_existing_redis() -> None:
    docs = render(user_values("real-model-servers-values"))
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("StatefulSet", "model-server") not in kinds
    assert ("Deployment", "redis") not in kinds
    processor = _container(docs, "llm-d-async")
    assert processor["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "redis-creds", "key": "url"}
    router = _container(docs, "llm-d-router-epp")
    assert "--endpoints=http://vllm-0.vllm:8000,http://vllm-1.vllm:8000" in router["args"]


def test_monitoring_configmaps_carry_the_deploy_files() -> None:
    docs = render({**user_values("saturation-gate-values"), "monitoring": {"kind": "configmap"}})
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    rules = maps["sluiceway-alert-rules"]["data"]["sluiceway-alerts.yaml"]
    assert yaml.safe_load(rules) == yaml.safe_load(
        (ROOT / "deploy/prometheus/alerts.yaml").read_text()
    )
    dashboard = maps["sluiceway-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    expected = json.loads((ROOT / "deploy/grafana/sluiceway.json").read_text())
    assert json.loads(dashboard["data"]["sluiceway.json"]) == expected
    assert "sluiceway-alert-rules" not in {d["metadata"]["name"] for d in render({})}


def test_a_bad_value_reaches_check_config_naming_the_field(tmp_path: Path) -> None:
    bad = {"ap": {"transportConfig": {"queues": [{"queue_name": "q", "colour": "blue"}]}}}
    configs = rendered_configs(render(bad))
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(configs["values.yaml"]))
    checked = check_config(path)
    assert checked.exit_code == 1
    assert "colour" in checked.output


def _kubernetes_validate() -> Any:
    return pytest.importorskip(
        "kubernetes_validate",
        reason="strict validation needs kubernetes-validate: pip install -e '.[deploy-test]'",
    )


def _is_objective(doc: dict[str, Any]) -> bool:
    return bool(doc["kind"] == "InferenceObjective")


@pytest.mark.parametrize("name", SETS)
def test_built_in_kinds_pass_strict_validation(name: str) -> None:
    kv = _kubernetes_validate()
    version = kv.utils.latest_version()
    docs = render(user_values(name))
    kinds = {d["kind"] for d in docs}
    assert kinds <= BUILT_IN | CUSTOM
    for doc in docs:
        if doc["kind"] in BUILT_IN:
            kv.validate(doc, version, strict=True)


def test_strict_validation_rejects_an_unknown_field() -> None:
    kv = _kubernetes_validate()
    doc = next(d for d in render({}) if d["kind"] == "Deployment")
    doc["spec"]["replicaz"] = 2
    with pytest.raises(kv.utils.ValidationError):
        kv.validate(doc, kv.utils.latest_version(), strict=True)


def _objective_schema() -> tuple[Any, dict[str, Any]]:
    jsonschema = pytest.importorskip(
        "jsonschema", reason="CRD schema checks need jsonschema: pip install -e '.[deploy-test]'"
    )
    schema: dict[str, Any] = json.loads(CRD_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema, schema


def _objective_documents(name: str) -> list[dict[str, Any]]:
    """Rendered InferenceObjectives and the router's objectives file of a value set."""
    docs = render(user_values(name))
    router_file = rendered_configs(docs).get("objectives.yaml", {"items": []})
    return [d for d in docs if _is_objective(d)] + list(router_file["items"])


@pytest.mark.parametrize("name", SETS)
def test_objectives_match_the_crd_schema(name: str) -> None:
    jsonschema, schema = _objective_schema()
    for doc in _objective_documents(name):
        jsonschema.validate(doc, schema)


def test_example_and_guide_objectives_match_the_crd_schema() -> None:
    jsonschema, schema = _objective_schema()
    files = [*sorted((ROOT / "deploy/examples").glob("*/objectives.yaml"))]
    files.append(ROOT / "tests/fixtures/guide/inferenceobjectives.yaml")
    for path in files:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            jsonschema.validate(doc, schema)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["spec"].update(weight=3),
        lambda d: d["spec"].update(priority="high"),
        lambda d: d["spec"]["poolRef"].pop("name"),
        lambda d: d.update(apiVersion="llm-d.ai/v1"),
    ],
    ids=["unknown-field", "priority-not-integer", "pool-without-name", "other-version"],
)
def test_the_crd_schema_rejects_bad_objectives(change: Any) -> None:
    jsonschema, schema = _objective_schema()
    doc = next(
        iter(yaml.safe_load_all((ROOT / "deploy/examples/f-eviction/objectives.yaml").read_text()))
    )
    change(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_the_chart_holds_no_template_for_a_kind_it_cannot_validate() -> None:
    """Only built-in kinds and custom kinds whose CRD schema the tests hold."""
    text = "\n".join(p.read_text() for p in (CHART / "templates").glob("*.yaml"))
    kinds = {
        line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("kind:")
    }
    assert kinds <= BUILT_IN | CUSTOM


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"simulator": {"replicas": "two"}}, "/simulator/replicas"),
        ({"processor": {"colour": "blue"}}, "colour"),
        ({"sluicewayRouter": {"endpoints": ["vllm-0:8000"]}}, "/sluicewayRouter/endpoints/0"),
        ({"objectives": {"items": [{"name": "x"}]}}, "priority"),
    ],
)
def test_bad_chart_values_fail_at_install_naming_the_field(
    values: dict[str, Any], field: str
) -> None:
    helm = pytest.importorskip("helm_python", reason="needs helm-python-sdk (deploy-test extra)")
    with pytest.raises(helm.HelmValuesError, match=field):
        render(values)


@pytest.mark.parametrize("name", SETS)
def test_helm_lint_finds_nothing_above_info(name: str) -> None:
    helm = pytest.importorskip("helm_python", reason="needs helm-python-sdk (deploy-test extra)")
    report = helm.lint(str(CHART), values=user_values(name), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == []


def _cli_commands() -> dict[str, Any]:
    import typer

    from sluiceway import cli

    app = typer.Typer()
    for name in cli._COMMAND_MODULES:
        __import__(name, fromlist=["register"]).register(app)
    with contextlib.suppress(ImportError):  # the router's command, once it is part of the CLI
        __import__("sluiceway.router.command", fromlist=["register"]).register(app)
    group = typer.main.get_command(app)
    return dict(group.commands)  # type: ignore[attr-defined]


def _parse_container_args(docs: list[dict[str, Any]]) -> set[str]:
    """Parse each sluiceway container's args with its command; the commands parsed."""
    commands = _cli_commands()
    checked = set()
    for doc in docs:
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            args = container.get("args", [])
            if container["image"].startswith("redis:") or args[0] not in commands:
                continue
            ctx = commands[args[0]].make_context(args[0], list(args[1:]))
            assert ctx.args == [], (args[0], ctx.args)
            checked.add(args[0])
    return checked


@pytest.mark.parametrize("name", SETS)
def test_container_args_parse_with_the_real_commands(name: str) -> None:
    """Every flag the chart passes exists and has a valid value, per the installed CLI."""
    checked = _parse_container_args(render(user_values(name)))
    assert "processor" in checked
    if name == "defaults":
        assert {"processor", "coordinator", "sim"} <= checked


def test_a_bad_extra_arg_fails_to_parse() -> None:
    docs = render({"processor": {"extraArgs": ["--metrics-port=abc"]}})
    with pytest.raises(Exception, match="valid integer"):  # the CLI's BadParameter
        _parse_container_args(docs)


def test_our_redis_wakes_the_coordinator_and_the_processor() -> None:
    """Keyspace events for lists (held waits) and sorted sets (arrivals)."""
    from sluiceway.broker.wakeup import WakeMode, mode_for_flags

    redis = next(d for d in render({}) if d["metadata"]["name"] == "redis")
    args = redis["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = args[args.index("--notify-keyspace-events") + 1]
    assert "K" in flags and "l" in flags
    assert mode_for_flags(flags) is WakeMode.EVENTS


def test_sluiceway_containers_run_unprivileged() -> None:
    docs = render({})
    containers = [
        c
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["image"].startswith("ghcr.io/sluiceway/")
    ]
    assert len(containers) == 4
    for container in containers:
        assert container["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False


def _ledger_args(values: dict[str, Any]) -> list[str]:
    args = _container(render(values), "llm-d-router-epp")["args"]
    return [a for a in args if a.startswith("--ledger")]


def test_several_router_replicas_share_the_pool_through_the_chart_redis() -> None:
    assert _ledger_args({}) == []  # one replica: alone, as before
    two = {"sluicewayRouter": {"replicas": 2}}
    assert _ledger_args(two) == ["--ledger=redis://redis:6379", "--ledger-lease=3s"]
    off = {"sluicewayRouter": {"replicas": 2, "ledger": "off"}}
    assert _ledger_args(off) == []
    named = {"sluicewayRouter": {"ledger": "rediss://ledger:6380", "ledgerLease": "5s"}}
    assert _ledger_args(named) == ["--ledger=rediss://ledger:6380", "--ledger-lease=5s"]


def test_several_router_replicas_without_a_redis_fail_naming_the_value() -> None:
    values = {"sluicewayRouter": {"replicas": 3}, "redis": {"enabled": False}}
    with pytest.raises(Exception, match=r"sluicewayRouter\.ledger"):
        render(values)


def test_the_ledger_flags_parse_with_the_real_router_command() -> None:
    assert "router" in _parse_container_args(render({"sluicewayRouter": {"replicas": 2}}))
