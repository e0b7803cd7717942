"""Keeping a view of Kubernetes objects current: list, then watch from the list's version.

The loop is the standard one, shared by the objective watch and the Pod watch: list every
object and install the set; watch from the list's ``resourceVersion``, applying ADDED, MODIFIED
and DELETED events (BOOKMARK events only move the version on); when a watch call ends, watch
again from the last version seen; when the server answers 410 Gone (the version was compacted
away), list again at once. Other errors (the API server unreachable, a 403) are logged and
listed again after a back-off that doubles from ``retry`` up to ``max_retry`` scaled seconds,
and starts over once a list succeeds.

Needs the optional extra ``kubernetes-asyncio`` (``pip install 'sluiceway[k8s]'``); it is
imported only when a watch starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import aiohttp

from sluiceway.clock import Clock, RealClock
from sluiceway.errors import ConfigError

__all__ = ["ListCall", "ListWatch", "current_namespace", "kube_api_from_environment", "kube_client"]

log = logging.getLogger(__name__)

GONE: Final = 410
_SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# A list function of the client and the arguments it is called with, positional and named.
ListCall = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def kube_client(flag: str = "--kube-objectives") -> Any:
    """The ``kubernetes_asyncio`` module; ConfigError naming ``flag`` when it is missing."""
    try:
        import kubernetes_asyncio
    except ImportError:  # pragma: no cover - depends on the install
        raise ConfigError(
            "watching Kubernetes needs the k8s extra: pip install 'sluiceway[k8s]'", field=flag
        ) from None
    return kubernetes_asyncio


async def kube_api_from_environment(flag: str = "--kube-objectives") -> Any:
    """An API client from the in-cluster service account, else from ~/.kube/config."""
    k8s = kube_client(flag)
    try:
        k8s.config.load_incluster_config()
    except k8s.config.ConfigException:
        await k8s.config.load_kube_config()
    return k8s.client.ApiClient()


def current_namespace(default: str = "default") -> str:
    """The namespace this process runs in (its service account's), else ``default``."""
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or default
    except OSError:
        return default


class ListWatch:
    """The list-then-watch loop over one kind of object; subclasses say what to list
    (:meth:`_list_call`) and what to do with the objects (:meth:`_replace`, :meth:`_apply`).

    ``watch_seconds``: server-side timeout of one watch call; ``retry``: scaled seconds to
    wait after the first error before listing again, doubled per further error up to
    ``max_retry``. ``lists`` counts the lists made (tests read it)."""

    what = "watch"  # names the loop in log lines

    def __init__(
        self,
        api_client: Any,
        *,
        watch_seconds: int = 300,
        retry: float = 1.0,
        max_retry: float = 30.0,
        clock: Clock | None = None,
        flag: str = "--kube-objectives",
    ) -> None:
        self._k8s = kube_client(flag)
        self._api_client = api_client
        self._watch_seconds = watch_seconds
        self._retry = retry
        self._max_retry = max(max_retry, retry)
        self._clock = clock or RealClock()
        self.lists = 0

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            try:
                version = await self.relist()
                failures = 0
                while True:
                    version = await self._watch_from(version)
                    if not await self._still_current():
                        break
            except self._k8s.client.exceptions.ApiException as exc:
                if exc.status == GONE:
                    continue
                failures += 1
                await self._back_off(failures, f"HTTP {exc.status} {exc.reason}".strip())
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                failures += 1
                await self._back_off(failures, str(exc) or type(exc).__name__)

    async def relist(self) -> str:
        """Replace everything with a fresh list; returns its resourceVersion."""
        func, args, kwargs = self._list_call()
        listing = await func(*args, **kwargs)
        if not isinstance(listing, dict):  # a typed list (Pods): back to the API's own form
            listing = self._api_client.sanitize_for_serialization(listing)
        self.lists += 1
        await self._replace(listing.get("items") or [])
        return str((listing.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch_from(self, version: str) -> str:
        """Apply events until the watch call ends; the version to continue from."""
        func, args, kwargs = self._list_call()
        watch = self._k8s.watch.Watch()
        try:
            stream = watch.stream(
                func,
                *args,
                **kwargs,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=self._watch_seconds,
            )
            async for event in stream:
                await self._apply(event["type"], event["raw_object"])
        finally:
            await watch.close()
        return str(watch.resource_version or version)

    async def _back_off(self, failures: int, why: str) -> None:
        delay = min(self._retry * 2 ** (failures - 1), self._max_retry)
        log.warning("%s failed (%s); listing again in %.3g s", self.what, why, delay)
        await self._clock.sleep(delay)

    # ---- what a subclass says ------------------------------------------------------------
    def _list_call(self) -> ListCall:
        """The client's list function for the objects, and its arguments."""
        raise NotImplementedError

    async def _replace(self, items: list[dict[str, Any]]) -> None:
        """A fresh list: these are all the objects now."""
        raise NotImplementedError

    async def _apply(self, kind: str, raw: dict[str, Any]) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``; others are ignored)."""
        raise NotImplementedError

    async def _still_current(self) -> bool:
        """Checked when a watch call ends: False lists again (what to list has changed)."""
        return True
