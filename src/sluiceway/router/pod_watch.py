"""Model servers from Kubernetes: the ready Pods of an InferencePool, or of a label selector.

With ``--inference-pool NAME`` the InferencePool object is read first (``v1``, else
``v1alpha2``) for its selector and target ports, and read again whenever a watch call ends: a
changed selector or port lists the Pods again. With ``--pod-selector`` and ``--target-port``
those are used as given. The Pods matching the selector in the namespace are then listed and
watched (:class:`~sluiceway.router.kube_watch.ListWatch`); a Pod that turns ready joins the
pool, one that stops being ready (or is deleted, or loses a label) leaves it and drains.

Needs ``get`` on ``inferencepools`` (with ``--inference-pool``) and ``list`` and ``watch`` on
``pods`` in the namespace.
"""

from __future__ import annotations

import logging
from typing import Any

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.router.inference_pool import (
    POOL_VERSIONS,
    PodTarget,
    pod_name,
    pod_urls,
    pool_target,
)
from sluiceway.router.kube_watch import ListCall, ListWatch
from sluiceway.router.membership import Membership

__all__ = ["PodWatch"]

log = logging.getLogger(__name__)

_NOT_FOUND = 404


class PodWatch(ListWatch):
    """Publishes the endpoints of the ready Pods to ``membership``: those of the InferencePool
    ``pool`` or, without one, of ``target``. ``watch_seconds``, ``retry``, ``max_retry``: as
    :class:`~sluiceway.router.kube_watch.ListWatch`."""

    what = "pod watch"

    def __init__(
        self,
        api_client: Any,
        membership: Membership,
        *,
        namespace: str,
        pool: str | None = None,
        target: PodTarget | None = None,
        watch_seconds: int = 300,
        retry: float = 1.0,
        max_retry: float = 30.0,
        clock: Clock | None = None,
    ) -> None:
        if (pool is None) == (target is None):
            raise ConfigError(
                "give an InferencePool or a selector, not both", field="--pod-selector"
            )
        flag = "--inference-pool" if pool is not None else "--pod-selector"
        super().__init__(
            api_client,
            watch_seconds=watch_seconds,
            retry=retry,
            max_retry=max_retry,
            clock=clock,
            flag=flag,
        )
        self._core = self._k8s.client.CoreV1Api(api_client)
        self._custom = self._k8s.client.CustomObjectsApi(api_client)
        self._membership = membership
        self._namespace = namespace
        self._pool = pool
        self._target = target
        self._pods: dict[str, tuple[str, ...]] = {}
        self.source = f"inferencepool {namespace}/{pool}" if target is None else target.selector

    @property
    def target(self) -> PodTarget | None:
        """The selector and ports in use (None before the InferencePool was read)."""
        return self._target

    async def relist(self) -> str:
        if self._pool is not None:
            self._target = await self._read_pool(self._pool)
        return await super().relist()

    async def _read_pool(self, name: str) -> PodTarget:
        """The selector and ports of the InferencePool ``name``, from its newest version."""
        where = f"InferencePool {self._namespace}/{name}"
        for group, version in POOL_VERSIONS:
            try:
                raw = await self._custom.get_namespaced_custom_object(
                    group, version, self._namespace, "inferencepools", name
                )
            except self._k8s.client.exceptions.ApiException as exc:
                if exc.status == _NOT_FOUND:
                    continue
                raise
            try:
                target = pool_target(raw)
            except ConfigError as exc:
                raise ValueError(f"{where} ({group}/{version}): {exc}") from None
            if target != self._target:
                ports = ", ".join(str(port) for port in target.ports)
                log.info("%s selects pods %s on ports %s", where, target.selector, ports)
            return target
        raise ValueError(f"{where} not found (looked for {', '.join(v for _, v in POOL_VERSIONS)})")

    def _list_call(self) -> ListCall:
        assert self._target is not None  # set before the first list
        selector = {"label_selector": self._target.selector}
        return self._core.list_namespaced_pod, (self._namespace,), selector

    async def _replace(self, items: list[dict[str, Any]]) -> None:
        before = self._pods
        self._pods = {}
        for raw in items:
            if urls := self._urls(raw):
                self._pods[pod_name(raw)] = urls
        for name in sorted(set(before) | set(self._pods)):
            self._log_change(name, before.get(name, ()), self._pods.get(name, ()))
        await self._publish()

    async def _apply(self, kind: str, raw: dict[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            urls = self._urls(raw)
        elif kind == "DELETED":
            urls = ()
        else:
            return
        name = pod_name(raw)
        before = self._pods.pop(name, ())
        if urls:
            self._pods[name] = urls
        if urls != before:
            self._log_change(name, before, urls)
            await self._publish()

    async def _still_current(self) -> bool:
        if self._pool is None:
            return True
        return await self._read_pool(self._pool) == self._target

    def _urls(self, raw: dict[str, Any]) -> tuple[str, ...]:
        assert self._target is not None
        return pod_urls(raw, self._target.ports)

    def _log_change(self, name: str, before: tuple[str, ...], after: tuple[str, ...]) -> None:
        if after and after != before:
            log.info("pod %s is ready: %s joins", name, ", ".join(after))
        elif before and not after:
            log.info("pod %s is not ready or gone: %s leaves", name, ", ".join(before))

    async def _publish(self) -> None:
        urls = sorted({u for urls in self._pods.values() for u in urls})
        await self._membership.publish(self.source, urls)
