"""Where the router's model servers come from: the flags read once, and the background jobs
that keep the pool current.

``--endpoints`` is fixed; ``--endpoints-file`` is read at start-up and then watched;
``--endpoints-dns`` names are resolved every ``--dns-interval``; ``--inference-pool`` or
``--pod-selector`` with ``--target-port`` watch Pods in Kubernetes. The pool is the union of all
of them (:class:`~sluiceway.router.membership.Membership`). Nothing here blocks start-up: the
first DNS answer or Pod list arrives in its job, and until some endpoint passes a health check
the router is simply not ready.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.router.dns_discovery import DnsDiscovery, DnsName
from sluiceway.router.endpoint_file import FILE_SOURCE, read_endpoint_file, watch_endpoint_file
from sluiceway.router.inference_pool import PodTarget, parse_selector
from sluiceway.router.membership import Membership, union_of

if TYPE_CHECKING:
    from sluiceway.router.gateway import Gateway

__all__ = ["Discovery", "Job", "PodSource"]

log = logging.getLogger(__name__)

Job = Callable[[], Coroutine[Any, Any, None]]
VLLM_PORT = 8000  # vLLM's default port, as the InferencePool chart assumes


@dataclass(frozen=True, slots=True)
class PodSource:
    """Pods to route to: those an InferencePool selects (``pool``), or ``target``'s.
    ``namespace`` None: the router's own (its service account's, else ``default``)."""

    namespace: str | None
    pool: str | None = None
    target: PodTarget | None = None

    @classmethod
    def from_flags(
        cls,
        inference_pool: str | None,
        pod_selector: str | None,
        target_port: int | None,
        namespace: str | None,
        *,
        chart_labels: Mapping[str, str] | None = None,
    ) -> PodSource | None:
        """From ``--inference-pool``, or ``--pod-selector`` with ``--target-port``, else the
        chart values' ``router.modelServers.matchLabels`` (``chart_labels``: only passed when
        no other source of endpoints is given) on ``--target-port`` or vLLM's 8000."""
        if inference_pool and (pod_selector or target_port):
            flag = "--pod-selector" if pod_selector else "--target-port"
            raise ConfigError("the InferencePool names its selector and ports", field=flag)
        if inference_pool:
            return cls(namespace, pool=inference_pool)
        if pod_selector is None and chart_labels:
            return cls(namespace, target=PodTarget.of(chart_labels, (target_port or VLLM_PORT,)))
        if pod_selector is None:
            if target_port is not None:
                raise ConfigError("give --pod-selector with it", field="--target-port")
            return None
        if target_port is None:
            raise ConfigError("give --target-port with it", field="--pod-selector")
        return cls(namespace, target=PodTarget.of(parse_selector(pod_selector), (target_port,)))


@dataclass(frozen=True, slots=True)
class Discovery:
    """The sources of the pool's members. ``static``: ``--endpoints``; ``file`` and
    ``file_urls``: ``--endpoints-file`` and what it held at start-up; ``dns``: the
    ``--endpoints-dns`` names, resolved every ``dns_interval`` scaled seconds; ``pods``: the
    Kubernetes source, if any."""

    static: tuple[str, ...] = ()
    file: Path | None = None
    file_urls: tuple[str, ...] = ()
    dns: tuple[DnsName, ...] = ()
    dns_interval: float = 5.0
    pods: PodSource | None = None

    @classmethod
    def from_flags(
        cls,
        endpoints: str | None,
        endpoints_file: Path | None,
        endpoints_dns: str | None = None,
        *,
        dns_interval: float = 5.0,
        pods: PodSource | None = None,
    ) -> Discovery:
        """The flags checked and the endpoints file read; ConfigError naming the flag."""
        static = tuple(u.strip() for u in (endpoints or "").split(",") if u.strip())
        file_urls = tuple(read_endpoint_file(endpoints_file)) if endpoints_file else ()
        dns = tuple(DnsName.parse(t) for t in (endpoints_dns or "").split(",") if t.strip())
        if dns_interval <= 0:
            raise ConfigError("must be > 0", field="--dns-interval")
        found = cls(static, endpoints_file, file_urls, dns, dns_interval, pods)
        if not found.endpoints and not found.discovers:
            raise ConfigError(
                "give at least one model server URL, or --endpoints-file, --endpoints-dns, "
                "--inference-pool or --pod-selector",
                field="--endpoints",
            )
        return found

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The pool at start-up: ``--endpoints`` and the endpoints file's."""
        return union_of([self.static, self.file_urls])

    @property
    def discovers(self) -> bool:
        """Whether the pool can change while the router runs."""
        return bool(self.file or self.dns or self.pods)

    def jobs(self, gateway: Gateway, clock: Clock) -> list[Job]:
        """The background jobs that keep ``gateway``'s pool equal to the sources."""
        initial = {FILE_SOURCE: self.file_urls} if self.file else {}
        membership = Membership(gateway.set_endpoints, self.static, initial)
        jobs: list[Job] = []
        if self.file is not None:
            file = self.file
            jobs.append(lambda: watch_endpoint_file(file, membership))
        if self.dns:
            dns = DnsDiscovery(self.dns, membership, clock, interval=self.dns_interval)
            jobs.append(dns.run)
        if self.pods is not None:
            jobs.append(_pod_job(self.pods, membership, clock))
        return jobs


def _pod_job(source: PodSource, membership: Membership, clock: Clock) -> Job:
    """The Pod watch; the k8s extra is checked now, so its absence stops start-up."""
    from sluiceway.router.kube_watch import (
        current_namespace,
        kube_api_from_environment,
        kube_client,
    )
    from sluiceway.router.pod_watch import PodWatch

    flag = "--inference-pool" if source.pool else "--pod-selector"
    kube_client(flag)

    async def job() -> None:
        try:
            api = await kube_api_from_environment(flag)
        except Exception as exc:  # no service account and no kubeconfig: nothing to watch
            log.error("%s: cannot reach the Kubernetes API: %s", flag, exc)
            return
        try:
            watch = PodWatch(
                api,
                membership,
                namespace=source.namespace or current_namespace(),
                pool=source.pool,
                target=source.target,
                clock=clock,
            )
            await watch.run()
        finally:
            await api.close()

    return job
