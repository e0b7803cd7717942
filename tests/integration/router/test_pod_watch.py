"""Model servers from Kubernetes, against a fake API server: the ready Pods of an InferencePool
(v1, or v1alpha2) or of a selector join the pool as they turn ready and leave it as they stop
being ready or go away; simulators on 127.0.0.2 and 127.0.0.3 (one port) are the Pods."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from fake_kube import Collection, FakeApiServer, fake_api
from membership_harness import Job, Router, discovering_router
from router_harness import until

from loopback import serving
from sluiceway.router.app import RouterApp
from sluiceway.router.inference_pool import PodTarget
from sluiceway.router.membership import Membership
from sluiceway.router.pod_watch import PodWatch
from sluiceway.sim import SimConfig, SimPool, running_simulator

pytest.importorskip("kubernetes_asyncio")

PODS = "/api/v1/namespaces/ns/pods"
V1_POOL = "/apis/inference.networking.k8s.io/v1/namespaces/ns/inferencepools/pool"
V1ALPHA2_POOL = "/apis/inference.networking.x-k8s.io/v1alpha2/namespaces/ns/inferencepools/pool"


def pod(name: str, ip: str, *, ready: bool = True, rv: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), "uid": name},
        "spec": {"containers": [{"name": "vllm", "image": "vllm"}]},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def v1_pool(port: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "pool", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": labels},
            "targetPorts": [{"number": port}],
            "endpointPickerRef": {"name": "epp", "port": {"number": 9002}},
        },
    }


@contextlib.asynccontextmanager
async def two_pods() -> AsyncIterator[tuple[SimPool, SimPool, int]]:
    """Simulators on 127.0.0.2 and 127.0.0.3, both on the same free port."""
    async with running_simulator(SimConfig(), host="127.0.0.2") as first:
        port = int(first.urls[0].rsplit(":", 1)[1])
        async with running_simulator(SimConfig(), host="127.0.0.3", port=port) as second:
            yield first, second, port


def watching(api: Any, **where: Any) -> Any:
    """The jobs of a router whose pool is fed by a Pod watch."""

    def jobs(app: RouterApp) -> list[Job]:
        members = Membership(app.gateway.set_endpoints)
        watch = PodWatch(api, members, namespace="ns", retry=0.01, **where)
        return [watch.run]

    return jobs


async def _ready_pods_gauge(router: Router) -> str:
    lines = (await router.metrics()).splitlines()
    return next(line for line in lines if line.startswith("inference_pool_ready_pods{"))


async def test_pods_of_an_inference_pool_join_and_leave(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeApiServer()
    pods: Collection = fake.add(PODS, "Pod")
    async with two_pods() as (first, second, port), fake_api(fake) as api:
        fake.objects[V1_POOL] = v1_pool(port, {"app": "vllm"})
        a, b = f"http://127.0.0.2:{port}", f"http://127.0.0.3:{port}"
        pods.items = [pod("vllm-a", "127.0.0.2")]
        async with discovering_router((), watching(api, pool="pool"), pool_name="pool") as router:
            await until(lambda: router.members() == {a})
            assert pods.queries[0]["labelSelector"] == "app=vllm"
            assert (await router.ready())[0] == 200
            assert await _ready_pods_gauge(router) == 'inference_pool_ready_pods{name="pool"} 1.0'
            await until(lambda: pods.watch_versions == ["10"])
            pods.push("ADDED", pod("vllm-b", "127.0.0.3", ready=False, rv=11))
            start = time.monotonic()
            pods.push("MODIFIED", pod("vllm-b", "127.0.0.3", rv=12))
            await router.until_served_by(second.engines[0])
            took = time.monotonic() - start
            with capsys.disabled():
                print(f"\nPod ready watch event -> first request served by it: {took:.3f} s")
            assert took < 2.0
            assert router.members() == {a, b}
            pods.push("MODIFIED", pod("vllm-a", "127.0.0.2", ready=False, rv=13))
            await until(lambda: router.members() == {b})
            assert await _ready_pods_gauge(router) == 'inference_pool_ready_pods{name="pool"} 1.0'
            pods.push("DELETED", pod("vllm-b", "127.0.0.3", rv=14))
            await until(lambda: router.members() == set())
            status, why = await router.ready()
            assert (status, why["reason"]) == (503, "no healthy endpoint")
            assert await _ready_pods_gauge(router) == 'inference_pool_ready_pods{name="pool"} 0.0'
            # 410 Gone: the Pods are listed again, the pool too.
            pods.items, pods.version = [pod("vllm-a", "127.0.0.2", rv=40)], 40
            pods.gone()
            await until(lambda: router.members() == {a})
            await router.until_served_by(first.engines[0])
            assert pods.lists == 2
            assert fake.gets == [V1_POOL, V1_POOL]  # read for each list, v1 found at once


async def test_a_v1alpha2_pool_and_a_changed_selector() -> None:
    """Without a v1 InferencePool the v1alpha2 one is read; when a watch call ends the pool is
    read again, and a new selector lists the Pods again with it."""
    fake = FakeApiServer()
    pods = fake.add(PODS, "Pod")
    async with two_pods() as (_, second, port), fake_api(fake) as api:
        fake.objects[V1ALPHA2_POOL] = {
            "spec": {"selector": {"app": "old"}, "targetPortNumber": port}
        }
        pods.items = [pod("vllm-b", "127.0.0.3")]
        async with discovering_router((), watching(api, pool="pool")) as router:
            await until(lambda: router.members() == {f"http://127.0.0.3:{port}"})
            await router.until_served_by(second.engines[0])
            assert fake.gets == [V1_POOL, V1ALPHA2_POOL]  # v1 first: not found
            assert pods.queries[0]["labelSelector"] == "app=old"
            await until(lambda: len(pods.watch_versions) == 1)
            pods.end_watch()  # the selector is the same: the watch goes on, no list
            await until(lambda: len(pods.watch_versions) == 2)
            assert pods.lists == 1
            new = {"spec": {"selector": {"app": "new"}, "targetPortNumber": port}}
            fake.objects[V1ALPHA2_POOL] = new
            pods.items = []
            pods.end_watch()
            await until(lambda: pods.lists == 2)
            assert pods.queries[-1]["labelSelector"] == "app=new"
            await until(lambda: router.members() == set())


async def test_a_selector_without_an_inference_pool() -> None:
    fake = FakeApiServer()
    pods = fake.add(PODS, "Pod")
    async with two_pods() as (first, _, port), fake_api(fake) as api:
        pods.items = [pod("vllm-a", "127.0.0.2"), pod("vllm-x", "127.0.0.9", ready=False)]
        target = PodTarget.of({"llm-d.ai/guide": "async-multitenant"}, (port,))
        async with discovering_router((), watching(api, target=target)) as router:
            await until(lambda: router.members() == {f"http://127.0.0.2:{port}"})
            await router.until_served_by(first.engines[0])
            assert pods.queries[0]["labelSelector"] == "llm-d.ai/guide=async-multitenant"
            assert fake.gets == []


async def test_the_command_line_routes_to_the_pools_pods(tmp_path: Path) -> None:
    """``sluiceway router --inference-pool pool --namespace ns`` with a kubeconfig naming the
    fake API server: it starts with no endpoint (not ready), then serves the Pod; the metrics
    take the pool's name."""
    fake = FakeApiServer()
    pods = fake.add(PODS, "Pod")
    async with two_pods() as (first, _, port), serving(fake.app) as api_url:
        fake.objects[V1_POOL] = v1_pool(port, {"app": "vllm"})
        pods.items = [pod("vllm-a", "127.0.0.2")]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(api_url)))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env["KUBECONFIG"] = str(kubeconfig)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sluiceway", "router", "--inference-pool", "pool",
            "--namespace", "ns", "--port", "0", "--health-interval", "0.2s",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()
            url = line[2]
            async with aiohttp.ClientSession() as http:
                router = Router(url, None, http)
                for _ in range(500):
                    if (await router.ready())[0] == 200:
                        break
                    await asyncio.sleep(0.02)
                await router.until_served_by(first.engines[0])
                gauge = await _ready_pods_gauge(router)
                assert gauge == 'inference_pool_ready_pods{name="pool"} 1.0'
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 30)
            fake.close_watches()
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert code == 0, err
        assert f"InferencePool ns/pool selects pods app=vllm on ports {port}\n" in err
        assert f"pod vllm-a is ready: http://127.0.0.2:{port} joins" in err


def _kubeconfig(server: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "fake", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        "current-context": "fake",
    }
