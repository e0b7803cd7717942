"""The chart in a real cluster: Prometheus Operator monitoring (checked against the
monitoring.coreos.com CRDs' schemas in tests/fixtures/crds), the router's Pod discovery and its
RBAC, Redis persistence and security, seccomp on every pod, replicas as values, optional
InferenceObjectives, and the guide's look at the processor's ``--transport``.

Rendering needs the ``deploy-test`` extra, as in test_helm_chart.py; without it these skip.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .chart import CHART, NAMESPACE, ROOT, VALUE_SETS, effective_values, render, user_values

SETS = sorted(VALUE_SETS)
CRDS = ROOT / "tests" / "fixtures" / "crds"
SCHEMAS = {
    "ServiceMonitor": "servicemonitor-v1.schema.json",
    "PodMonitor": "podmonitor-v1.schema.json",
    "PrometheusRule": "prometheusrule-v1.schema.json",
}
OPERATOR = {"monitoring": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}}
NO_LABELS = {"router": {"modelServers": {"matchLabels": None}}}
GUIDE_LABELS = {"llm-d.ai/guide": "async-multitenant"}


def _kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _workloads(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] in ("Deployment", "StatefulSet")}


def _pod(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = _workloads(docs)[name]["spec"]["template"]["spec"]
    return spec


def _args(docs: list[dict[str, Any]], name: str) -> list[str]:
    args: list[str] = _pod(docs, name)["containers"][0]["args"]
    return args


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _jsonschema() -> Any:
    return pytest.importorskip(
        "jsonschema", reason="CRD schema checks need jsonschema: pip install -e '.[deploy-test]'"
    )


def _schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CRDS / SCHEMAS[kind]).read_text(encoding="utf-8"))
    return schema


# --- monitoring ------------------------------------------------------------------------------


def test_monitoring_scrapes_every_metrics_endpoint_through_its_service() -> None:
    docs = render(OPERATOR)
    monitors = _kind(docs, "ServiceMonitor")
    assert set(monitors) == {"llm-d-async", "llm-d-router-epp", "llm-d-coordinator"}
    services = _kind(docs, "Service")
    for name, monitor in monitors.items():
        selector = monitor["spec"]["selector"]["matchLabels"]
        chosen = [s for s, svc in services.items() if _selects(selector, svc["metadata"]["labels"])]
        assert chosen == [name]
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["path"] == "/metrics" and endpoint["interval"] == "15s"
        assert endpoint["port"] in {p["name"] for p in services[name]["spec"]["ports"]}
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_the_router_and_processor_monitors_reach_the_metrics_container_port() -> None:
    docs = render(OPERATOR)
    services = _kind(docs, "Service")
    for name, container_port in (("llm-d-router-epp", "http"), ("llm-d-async", "metrics")):
        port = _kind(docs, "ServiceMonitor")[name]["spec"]["endpoints"][0]["port"]
        target = next(p for p in services[name]["spec"]["ports"] if p["name"] == port)
        names = {p["name"] for p in _pod(docs, name)["containers"][0]["ports"]}
        assert target["targetPort"] == container_port and container_port in names


def test_the_simulated_model_servers_get_the_guide_pod_monitor() -> None:
    docs = render(OPERATOR)
    monitor = _kind(docs, "PodMonitor")["model-server"]
    template = _workloads(docs)["model-server"]["spec"]["template"]
    assert _selects(monitor["spec"]["selector"]["matchLabels"], template["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in {p["name"] for p in template["spec"]["containers"][0]["ports"]}
    assert endpoint["relabelings"] == [
        {
            "sourceLabels": ["__meta_kubernetes_pod_label_inference_pool"],
            "targetLabel": "inference_pool",
        }
    ]
    assert template["metadata"]["labels"]["inference_pool"] == "llm-d-router"


def test_the_prometheus_rule_carries_the_deploy_alerts() -> None:
    rule = _kind(render(OPERATOR), "PrometheusRule")["sluiceway-alert-rules"]
    alerts = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yaml").read_text(encoding="utf-8"))
    assert rule["spec"] == alerts
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_the_chart_rule_file_is_the_deploy_rule_file() -> None:
    """The chart reads only its own files: files/alerts.yaml (a symbolic link) must read as the
    rules in deploy/prometheus, whatever replaces the link."""
    copy = (CHART / "files/alerts.yaml").read_bytes()
    assert copy == (ROOT / "deploy/prometheus/alerts.yaml").read_bytes()


def test_the_configmap_kind_keeps_rules_in_a_configmap_and_scrapes_by_annotation() -> None:
    docs = render({"monitoring": {"enabled": True, "kind": "configmap"}})
    assert not {"ServiceMonitor", "PodMonitor", "PrometheusRule"} & {d["kind"] for d in docs}
    rules = _kind(docs, "ConfigMap")["sluiceway-alert-rules"]["data"]["sluiceway-alerts.yaml"]
    assert yaml.safe_load(rules) == yaml.safe_load((CHART / "files/alerts.yaml").read_text())
    annotations = _workloads(docs)["llm-d-async"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"


def test_the_guide_switches_render_their_part_alone() -> None:
    """ap.podMonitor: the processor's monitor; ap.prometheusRule: the rules (as llm-d-async)."""
    docs = render({"ap": {"podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}})
    assert set(_kind(docs, "ServiceMonitor")) == {"llm-d-async"}
    assert set(_kind(docs, "PrometheusRule")) == {"sluiceway-alert-rules"}
    assert not _kind(docs, "PodMonitor")


def test_monitoring_off_renders_no_operator_kind() -> None:
    kinds = {d["kind"] for d in render({})}
    assert not {"ServiceMonitor", "PodMonitor", "PrometheusRule"} & kinds


@pytest.mark.parametrize("name", [*SETS, "operator-monitoring"])
def test_operator_kinds_match_their_crd_schemas(name: str) -> None:
    jsonschema = _jsonschema()
    docs = render(OPERATOR if name == "operator-monitoring" else user_values(name))
    for doc in docs:
        if doc["kind"] in SCHEMAS:
            jsonschema.validate(doc, _schema(doc["kind"]))


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("ServiceMonitor", lambda d: d["spec"]["endpoints"][0].update(scrapeEvery="15s")),
        ("ServiceMonitor", lambda d: d["spec"]["endpoints"][0].update(interval="15 seconds")),
        ("ServiceMonitor", lambda d: d["spec"].pop("selector")),
        ("PodMonitor", lambda d: d["spec"]["podMetricsEndpoints"][0].update(port=8000)),
        ("PrometheusRule", lambda d: d["spec"]["groups"][0]["rules"][0].pop("expr")),
        ("PrometheusRule", lambda d: d["spec"]["groups"][0]["rules"][0].update(severity="page")),
        ("PrometheusRule", lambda d: d.update(apiVersion="monitoring.coreos.com/v1beta1")),
    ],
    ids=[
        "unknown-endpoint-field",
        "bad-duration",
        "no-selector",
        "port-not-a-name",
        "rule-without-expr",
        "unknown-rule-field",
        "other-version",
    ],
)
def test_the_crd_schemas_reject_bad_objects(kind: str, change: Any) -> None:
    jsonschema = _jsonschema()
    doc = next(d for d in render(OPERATOR) if d["kind"] == kind)
    jsonschema.validate(doc, _schema(kind))
    change(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _schema(kind))


# --- the router's model servers --------------------------------------------------------------


def test_model_server_labels_make_the_router_watch_pods() -> None:
    docs = render({})
    args = _args(docs, "llm-d-router-epp")
    assert "--pod-selector=llm-d.ai/guide=async-multitenant" in args
    assert "--target-port=8000" in args
    assert not [a for a in args if a.startswith("--endpoints")]
    pod = _pod(docs, "llm-d-router-epp")
    assert pod["serviceAccountName"] == "llm-d-router-epp"
    assert "automountServiceAccountToken" not in pod
    assert set(_kind(docs, "ServiceAccount")) == {"llm-d-router-epp"}
    (role,) = _kind(docs, "Role").values()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    (binding,) = _kind(docs, "RoleBinding").values()
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "llm-d-router-epp", "namespace": NAMESPACE}
    ]


def test_the_simulator_pods_carry_the_labels_the_router_selects() -> None:
    docs = render({"simulator": {"port": 8100}})
    template = _workloads(docs)["model-server"]["spec"]["template"]
    assert _selects(GUIDE_LABELS, template["metadata"]["labels"])
    assert "--target-port=8100" in _args(docs, "llm-d-router-epp")  # the simulator's port
    selector = _workloads(docs)["model-server"]["spec"]["selector"]["matchLabels"]
    assert "llm-d.ai/guide" not in selector  # the StatefulSet's selector is left as it was


def test_the_router_command_reads_the_chart_flags_as_the_values_labels(tmp_path: Path) -> None:
    """The flags parse with the real command and select what the mounted values say, so the
    router has no note that the values' labels go unused."""
    from sluiceway.router.build import chart_pod_labels
    from sluiceway.router.command import _chart_labels_note
    from sluiceway.router.discovery import PodSource, PodTarget

    from .test_helm_chart import _cli_commands

    docs = render(user_values("guide-saturation-holdback"))
    args = _args(docs, "llm-d-router-epp")
    params = _cli_commands()["router"].make_context("router", list(args[1:])).params
    source = PodSource.from_flags(None, params["pod_selector"], params["target_port"], None)
    mounted = tmp_path / "router-values.yaml"
    data = _kind(docs, "ConfigMap")["llm-d-router-epp-config"]["data"]["router-values.yaml"]
    mounted.write_text(data, encoding="utf-8")
    labels = chart_pod_labels(mounted)
    assert labels == GUIDE_LABELS
    assert source == PodSource(None, target=PodTarget.of(labels, (8000,)))
    assert _chart_labels_note(labels, True, params["pod_selector"]) == []


def test_an_inference_pool_adds_read_access_to_it() -> None:
    docs = render({"sluicewayRouter": {"inferencePool": "llm-d-router"}})
    args = _args(docs, "llm-d-router-epp")
    assert "--inference-pool=llm-d-router" in args
    assert not [a for a in args if a.startswith(("--pod-selector", "--target-port", "--endpoints"))]
    (role,) = _kind(docs, "Role").values()
    assert {
        "apiGroups": ["inference.networking.k8s.io", "inference.networking.x-k8s.io"],
        "resources": ["inferencepools"],
        "verbs": ["get"],
    } in role["rules"]


def test_without_labels_the_router_lists_every_simulator_replica() -> None:
    docs = render({**NO_LABELS, "simulator": {"replicas": 2}})
    urls = "http://model-server-0.model-server:8000,http://model-server-1.model-server:8000"
    assert f"--endpoints={urls}" in _args(docs, "llm-d-router-epp")
    assert _pod(docs, "llm-d-router-epp")["automountServiceAccountToken"] is False
    assert not {"ServiceAccount", "Role", "RoleBinding"} & {d["kind"] for d in docs}


def test_fixed_endpoints_win_over_labels() -> None:
    docs = render(user_values("real-model-servers-values"))
    assert effective_values("real-model-servers-values")["router"]["modelServers"]["matchLabels"]
    args = _args(docs, "llm-d-router-epp")
    assert not [a for a in args if a.startswith("--pod-selector")]
    assert not _kind(docs, "Role")


def test_no_model_servers_fails_at_install_saying_what_to_give() -> None:
    with pytest.raises(Exception, match="no model servers"):
        render({**NO_LABELS, "simulator": {"enabled": False}})


# --- Redis -----------------------------------------------------------------------------------


def _redis(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = _pod(docs, "redis")
    return pod, pod["containers"][0]


def test_redis_appends_every_write_to_an_emptydir_by_default() -> None:
    docs = render({})
    pod, container = _redis(docs)
    args = container["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--dir") + 1] == "/data"
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert not _kind(docs, "PersistentVolumeClaim")
    assert _workloads(docs)["redis"]["spec"]["strategy"] == {"type": "Recreate"}


def test_redis_persistence_claims_a_volume() -> None:
    persistence = {"enabled": True, "size": "5Gi", "storageClassName": "fast"}
    docs = render({"redis": {"persistence": persistence}})
    claim = _kind(docs, "PersistentVolumeClaim")["redis-data"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert claim["spec"]["storageClassName"] == "fast"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    pod, _ = _redis(docs)
    assert pod["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "redis-data"}}
    ]


def test_redis_can_use_an_existing_claim_or_no_append_only_file() -> None:
    docs = render(
        {"redis": {"appendonly": False, "persistence": {"enabled": True, "existingClaim": "mine"}}}
    )
    assert not _kind(docs, "PersistentVolumeClaim")
    pod, container = _redis(docs)
    assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "mine"}
    args = container["args"]
    assert args[args.index("--appendonly") + 1] == "no"


def test_redis_runs_unprivileged_on_a_read_only_root() -> None:
    pod, container = _redis(render({}))
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 999 and pod["securityContext"]["fsGroup"] == 1000
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["automountServiceAccountToken"] is False


# --- every workload --------------------------------------------------------------------------


@pytest.mark.parametrize("name", SETS)
def test_every_pod_runs_non_root_with_the_runtime_default_seccomp_profile(name: str) -> None:
    docs = render(user_values(name))
    for workload, doc in _workloads(docs).items():
        context = doc["spec"]["template"]["spec"]["securityContext"]
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}, workload
        assert context["runAsNonRoot"] is True, workload


def test_sluiceway_containers_write_only_their_tmp() -> None:
    docs = render({})
    for workload in ("llm-d-async", "llm-d-router-epp", "llm-d-coordinator", "model-server"):
        pod = _pod(docs, workload)
        container = pod["containers"][0]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, workload
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], workload
        assert {"name": "tmp", "emptyDir": {}} in pod["volumes"], workload


def test_every_deployment_takes_its_replicas_from_the_values() -> None:
    wanted = {"llm-d-async": 3, "llm-d-router-epp": 2, "llm-d-coordinator": 4, "redis": 0}
    values = {
        "processor": {"replicas": 3},
        "sluicewayRouter": {"replicas": 2},
        "coordinator": {"replicas": 4},
        "redis": {"replicas": 0},
    }
    docs = render(values)
    deployments = _kind(docs, "Deployment")
    assert set(deployments) == set(wanted)
    assert {name: d["spec"]["replicas"] for name, d in deployments.items()} == wanted


def test_redis_is_one_instance_at_most() -> None:
    helm = pytest.importorskip("helm_python", reason="needs helm-python-sdk (deploy-test extra)")
    with pytest.raises(helm.HelmValuesError, match="/redis/replicas"):
        render({"redis": {"replicas": 2}})


# --- InferenceObjectives and the guide's checks ----------------------------------------------


def test_inference_objective_resources_can_be_left_out() -> None:
    docs = render({"objectives": {"createResources": False}})
    assert not [d for d in docs if d["kind"] == "InferenceObjective"]
    listed = _kind(docs, "ConfigMap")["llm-d-router-epp-objectives"]["data"]["objectives.yaml"]
    assert len(yaml.safe_load(listed)["items"]) == 6  # the router still reads them


def _notes(values: dict[str, Any]) -> str:
    """NOTES.txt as ``helm install`` prints it."""
    helm = pytest.importorskip("helm_python", reason="needs helm-python-sdk (deploy-test extra)")
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values, name="sluiceway", namespace=NAMESPACE)
    notes: str = files["sluiceway/templates/NOTES.txt"]
    return notes


def test_the_notes_say_the_objective_crd_must_exist_and_how_to_do_without() -> None:
    notes = _notes({})
    assert "InferenceObjective resources need their CRD" in notes
    assert "objectives.createResources=false" in notes
    assert "InferenceObjective" not in _notes({"objectives": {"createResources": False}})
    operator = _notes(OPERATOR)
    assert "Prometheus Operator's CRDs" in operator and "Prometheus Operator" not in notes


@pytest.mark.parametrize("name", SETS)
def test_the_processor_deployment_shows_its_transport(name: str) -> None:
    """The guide: ``kubectl get deploy llm-d-async -o yaml | grep transport``."""
    transport = effective_values(name)["ap"]["transport"]
    deployment = _kind(render(user_values(name)), "Deployment")["llm-d-async"]
    lines = [line.strip() for line in yaml.safe_dump(deployment).splitlines()]
    assert f"- --transport={transport}" in [line for line in lines if "transport" in line]
