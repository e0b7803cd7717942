"""InferenceObjectives from the Kubernetes API: list, then watch from the list's version.

The loop is the standard one: list every InferenceObjective (one namespace or all) and install
them; watch from the list's ``resourceVersion``, applying ADDED, MODIFIED and DELETED events
(BOOKMARK events only move the version on); when the watch ends, watch again from the last
version seen; when the server answers 410 Gone (the version was compacted away), list again.
Errors back off and relist. Objectives naming other pools are filtered as for files.

Needs the optional extra ``kubernetes-asyncio`` (``pip install 'sluiceway[k8s]'``); it is
imported only when a watch starts.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

from sluiceway.clock import Clock, RealClock
from sluiceway.config.objectives import InferenceObjective, load_objectives
from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.router.objectives import ObjectiveTable, select_for_pool

__all__ = ["ObjectiveWatch", "kube_api_from_environment"]

log = logging.getLogger(__name__)

_GONE = 410
_FIELDS = ("apiVersion", "kind", "metadata", "spec")


def _require_client() -> Any:
    try:
        import kubernetes_asyncio
    except ImportError:  # pragma: no cover - depends on the install
        raise ConfigError(
            "watching Kubernetes needs the k8s extra: pip install 'sluiceway[k8s]'",
            field="--kube-objectives",
        ) from None
    return kubernetes_asyncio


async def kube_api_from_environment() -> Any:
    """An API client from the in-cluster service account, else from ~/.kube/config."""
    k8s = _require_client()
    try:
        k8s.config.load_incluster_config()
    except k8s.config.ConfigException:
        await k8s.config.load_kube_config()
    return k8s.client.ApiClient()


def _objective(raw: dict[str, Any]) -> InferenceObjective | None:
    """The objective in an API object (status and server fields dropped); None when invalid."""
    doc = {k: raw[k] for k in _FIELDS if k in raw}
    try:
        return load_objectives([doc]).value[0]
    except SluicewayError as exc:
        log.warning("ignoring an invalid InferenceObjective: %s", exc)
        return None


class ObjectiveWatch:
    """Keeps ``table`` equal to the cluster's objectives for ``pool``.

    ``namespace`` None watches every namespace. ``watch_seconds``: server-side timeout of one
    watch call; ``retry``: scaled seconds to wait after an error before listing again."""

    def __init__(
        self,
        api_client: Any,
        table: ObjectiveTable,
        pool: str | None,
        *,
        namespace: str | None = None,
        group: str = "llm-d.ai",
        version: str = "v1alpha2",
        plural: str = "inferenceobjectives",
        watch_seconds: int = 300,
        retry: float = 1.0,
        clock: Clock | None = None,
    ) -> None:
        k8s = _require_client()
        self._k8s = k8s
        self._api = k8s.client.CustomObjectsApi(api_client)
        self._table = table
        self._pool = pool
        self._scope: tuple[Any, ...] = (group, version) + ((namespace,) if namespace else ())
        self._plural = plural
        self._namespaced = namespace is not None
        self._watch_seconds = watch_seconds
        self._retry = retry
        self._clock = clock or RealClock()
        self._objects: dict[tuple[str, str], InferenceObjective] = {}
        self._notes: list[str] = []
        self.lists = 0

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                version: str | None = await self.relist()
                while version is not None:
                    version = await self._watch_from(version)
            except self._k8s.client.exceptions.ApiException as exc:
                if exc.status != _GONE:
                    log.warning("objective watch failed (%s); listing again", exc.status)
                    await self._clock.sleep(self._retry)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                log.warning("objective watch failed (%s); listing again", exc)
                await self._clock.sleep(self._retry)

    async def relist(self) -> str:
        """Replace everything with a fresh list; returns its resourceVersion."""
        listing = await self._list_call()(*self._scope, self._plural)
        self.lists += 1
        self._objects = {}
        for raw in listing.get("items") or []:
            self._put(raw)
        self._install()
        return str((listing.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch_from(self, version: str) -> str | None:
        """Apply events until the watch ends; the version to continue from."""
        watch = self._k8s.watch.Watch()
        try:
            stream = watch.stream(
                self._list_call(),
                *self._scope,
                self._plural,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=self._watch_seconds,
            )
            async for event in stream:
                self._apply(event["type"], event["raw_object"])
        finally:
            await watch.close()
        return watch.resource_version or version

    def _list_call(self) -> Any:
        if self._namespaced:
            return self._api.list_namespaced_custom_object
        return self._api.list_cluster_custom_object

    def _apply(self, kind: str, raw: dict[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self._put(raw)
        elif kind == "DELETED":
            self._objects.pop(_key(raw), None)
        else:
            return
        self._install()

    def _put(self, raw: dict[str, Any]) -> None:
        obj = _objective(raw)
        if obj is not None:
            self._objects[_key(raw)] = obj

    def _install(self) -> None:
        selection = select_for_pool(self._objects.values(), self._pool)
        self._table.replace(selection.kept)
        notes = selection.notes(self._pool)
        if notes != self._notes:
            for note in notes:
                log.warning("%s", note)
            self._notes = notes


def _key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = raw.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))
