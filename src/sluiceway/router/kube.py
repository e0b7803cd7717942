"""InferenceObjectives from the Kubernetes API: list, then watch from the list's version.

The loop is :class:`~sluiceway.router.kube_watch.ListWatch` (watch again from the last version
when a watch ends, list again on 410 Gone, back off on errors). Objectives naming other pools
are filtered as for files.

Needs the optional extra ``kubernetes-asyncio`` (``pip install 'sluiceway[k8s]'``); it is
imported only when a watch starts.
"""

from __future__ import annotations

import logging
from typing import Any

from sluiceway.clock import Clock
from sluiceway.config.objectives import InferenceObjective, load_objectives
from sluiceway.errors import SluicewayError
from sluiceway.router.kube_watch import ListCall, ListWatch, kube_api_from_environment
from sluiceway.router.objectives import ObjectiveTable, select_for_pool

__all__ = ["ObjectiveWatch", "kube_api_from_environment"]

log = logging.getLogger(__name__)

_FIELDS = ("apiVersion", "kind", "metadata", "spec")


def _objective(raw: dict[str, Any]) -> InferenceObjective | None:
    """The objective in an API object (status and server fields dropped); None when invalid."""
    doc = {k: raw[k] for k in _FIELDS if k in raw}
    try:
        return load_objectives([doc]).value[0]
    except SluicewayError as exc:
        log.warning("ignoring an invalid InferenceObjective: %s", exc)
        return None


class ObjectiveWatch(ListWatch):
    """Keeps ``table`` equal to the cluster's objectives for ``pool``.

    ``namespace`` None watches every namespace. ``watch_seconds``, ``retry``, ``max_retry``:
    as :class:`~sluiceway.router.kube_watch.ListWatch`."""

    what = "objective watch"

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
        max_retry: float = 30.0,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            api_client, watch_seconds=watch_seconds, retry=retry, max_retry=max_retry, clock=clock
        )
        self._api = self._k8s.client.CustomObjectsApi(api_client)
        self._table = table
        self._pool = pool
        self._scope: tuple[Any, ...] = (group, version) + ((namespace,) if namespace else ())
        self._plural = plural
        self._namespaced = namespace is not None
        self._objects: dict[tuple[str, str], InferenceObjective] = {}
        self._notes: list[str] = []

    def _list_call(self) -> ListCall:
        if self._namespaced:
            return self._api.list_namespaced_custom_object, (*self._scope, self._plural), {}
        return self._api.list_cluster_custom_object, (*self._scope, self._plural), {}

    async def _replace(self, items: list[dict[str, Any]]) -> None:
        self._objects = {}
        for raw in items:
            self._put(raw)
        self._install()

    async def _apply(self, kind: str, raw: dict[str, Any]) -> None:
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
