"""From a coordinator config file to a serving coordinator.

``redis_url`` names the broker the processor reads: ``redis://`` / ``rediss://`` (the
``redis-sortedset`` transport), and, as sluiceway additions, ``postgresql://`` (the ``postgres``
transport), ``memory://`` (in-process, for the demo and tests) and ``sqlite:///PATH``. The
quota counters are the default quota store of that transport, the same the processor's quota
gate uses, so both count the same slots.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Final

from sluiceway.batch.service import BatchService
from sluiceway.batch.stores import BatchStores, open_batch_stores
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.clock import Clock
from sluiceway.config.coordinator import AsyncBrokerParams, CoordinatorConfig
from sluiceway.config.urls import broker_transport, mask_credentials
from sluiceway.coordinator.app import DEFAULT_MAX_BODY_BYTES, Coordinator, CoordinatorParts
from sluiceway.coordinator.batches import batch_service
from sluiceway.coordinator.forwarding import Forwarder, HttpForwarder, RouterForwarder
from sluiceway.coordinator.identity import TenantIdentity
from sluiceway.coordinator.mailbox import Mailboxes, wake_plan
from sluiceway.coordinator.observed import ObservedForwarder, observed_app, show_metrics_on
from sluiceway.coordinator.passthrough import QuotaKeeper
from sluiceway.errors import ConfigError
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.router.app import RouterApp
from sluiceway.router.observed_app import ObservedRouterApp

__all__ = [
    "COORDINATOR_PATHS",
    "build_coordinator",
    "mount_coordinator",
    "open_coordinator",
    "transport_of",
]

# The paths a router hands to its mounted coordinator (besides requests with the mode header).
COORDINATOR_PATHS: Final = ("/v1/requests/", "/v1/files", "/v1/batches")


def transport_of(url: str) -> str:
    """The broker transport a coordinator ``redis_url`` names (the config checks it first)."""
    transport = broker_transport(url)
    if transport is not None:
        return transport
    raise ConfigError(
        f"{mask_credentials(url)!r}: use redis://, rediss://, redis+sentinel://, "
        "rediss+sentinel://, postgresql://, memory:// or sqlite:///PATH",
        field="redis_url",
    )


def build_coordinator(
    params: AsyncBrokerParams,
    *,
    broker: Broker,
    quota_store: QuotaStore | None,
    forwarder: Forwarder,
    clock: Clock,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    upstream: str = "",
    batch_stores: BatchStores | None = None,
) -> Coordinator:
    """A coordinator over parts the caller owns (the demo shares them with a processor);
    ``upstream`` names where passthrough goes, in the access log; ``batch_stores``: serve the
    Batch API over them (its runners start with :meth:`BatchService.start`)."""
    wake = wake_plan(broker, params.wakeup_mode)
    mailboxes = Mailboxes(
        broker, clock=clock, wake=wake, fetch_grace=float(params.fetch_grace_seconds)
    )
    batches: BatchService | None = None
    if batch_stores is not None and params.batch.enabled:
        batches = batch_service(params, broker, batch_stores, clock=clock, notify=wake.notify)
    parts = CoordinatorParts(
        broker=broker,
        forwarder=ObservedForwarder(forwarder, params, upstream),
        clock=clock,
        mailboxes=mailboxes,
        quota=QuotaKeeper(quota_store, params, clock=clock),
        batches=batches,
    )
    front = Coordinator(params, parts, max_body_bytes=max_body_bytes)
    if batches is not None:
        batches.metrics.register(front.metrics.registry)
    return front


def mount_coordinator(
    router: RouterApp,
    params: AsyncBrokerParams,
    *,
    broker: Broker,
    quota_store: QuotaStore | None,
    clock: Clock,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    batch_stores: BatchStores | None = None,
) -> Coordinator:
    """The coordinator inside the router's process and on its listener: requests with the
    mode header and under ``COORDINATOR_PATHS`` (results, the Batch API) reach it, and its
    passthrough calls the router's admission path in process (:class:`RouterForwarder`). Its
    API keys guard the router's own routes too, the router's drain begins with the
    coordinator's, and its metrics show on the router's ``/metrics``. It keeps an access log
    and traces as the router does."""
    front = build_coordinator(
        params,
        broker=broker,
        quota_store=quota_store,
        forwarder=RouterForwarder(router),
        clock=clock,
        max_body_bytes=max_body_bytes,
        upstream="router",
        batch_stores=batch_stores,
    )
    keys = TenantIdentity(tenant_header=params.tenant_header, api_keys=params.api_keys)
    sample, tracing = 0.0, None
    if isinstance(router, ObservedRouterApp):
        sample, tracing = router.observer.access.sample, router.observer.tracing
    app = observed_app(front, params, access_sample=sample, tracing=tracing)
    show_metrics_on(router.gateway.metrics.registry, front)
    router.mount_coordinator(
        app,
        mode_header=params.mode_header,
        paths=COORDINATOR_PATHS,
        key_check=keys.has_key if keys.uses_keys else None,
        on_drain=front.begin_drain,
    )
    return front


@contextlib.asynccontextmanager
async def open_coordinator(
    config: CoordinatorConfig,
    *,
    clock: Clock,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    router: RouterApp | None = None,
) -> AsyncIterator[Coordinator]:
    """Open the broker and quota store of ``config``; close them on exit.

    ``router``: mount the coordinator in that router (passthrough goes to it in process);
    otherwise passthrough goes to ``gateway.address`` over HTTP (serve the coordinator's
    :func:`~sluiceway.coordinator.observed.observed_app`).
    """
    params = config.broker
    if router is None and not config.upstream_url:
        raise ConfigError("no passthrough target", field="gateway.address")
    transport = transport_of(params.redis_url)
    options = BrokerOptions(url=_broker_url(params.redis_url, transport), time_scale=clock.scale)
    broker = await open_broker(transport, options)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(broker.aclose)
        check = getattr(broker, "check_permissions", None)  # Redis: the ACL, before serving
        if check is not None:
            await check(consumer=False)
        stores = await open_quota_stores(transport, broker, options)
        stack.push_async_callback(stores.aclose)
        batch_stores = None
        if params.batch.enabled:
            files_url = params.batch.files_url
            batch_stores = await open_batch_stores(transport, broker, options, files_url=files_url)
        if batch_stores is not None:
            stack.push_async_callback(batch_stores.aclose)
        if router is not None:
            front = mount_coordinator(
                router,
                params,
                broker=broker,
                quota_store=stores(""),
                clock=clock,
                max_body_bytes=max_body_bytes,
                batch_stores=batch_stores,
            )
            yield await _started(front, stack)
            return
        forwarder = HttpForwarder(config.upstream_url, timeout=float(config.gateway.timeout))
        stack.push_async_callback(forwarder.aclose)
        front = build_coordinator(
            params,
            broker=broker,
            quota_store=stores(""),
            forwarder=forwarder,
            clock=clock,
            max_body_bytes=max_body_bytes,
            upstream=config.upstream_url,
            batch_stores=batch_stores,
        )
        yield await _started(front, stack)


async def _started(front: Coordinator, stack: contextlib.AsyncExitStack) -> Coordinator:
    """``front`` with its batch runners started (stopped when ``stack`` closes)."""
    if front.batches is not None:
        await front.batches.start()
        stack.push_async_callback(front.batches.aclose)
    return front


def _broker_url(url: str, transport: str) -> str | None:
    return None if transport == "memory" else url
