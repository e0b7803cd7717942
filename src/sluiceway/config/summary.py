"""What a processor is about to run, in a few log lines (credentials masked).

Logged at start-up so an operator reading the log sees the broker, every queue with its pool,
tier and upstream, and every pool with its workers, without opening the config files.
"""

from __future__ import annotations

from sluiceway.config.processor_settings import ProcessorSettings
from sluiceway.config.urls import mask_credentials

__all__ = ["broker_address", "describe_processor"]


def broker_address(settings: ProcessorSettings) -> str:
    """The broker as ``<transport> <address>``, password masked."""
    tc = settings.transport_config
    if settings.transport == "sqlite":
        return f"sqlite {tc.path}"
    if settings.transport == "gcp-pubsub":
        return f"gcp-pubsub project {tc.project_id}"
    if settings.transport == "memory":
        return "memory (this process only)"
    where = ", ".join(tc.addrs) if tc.addrs else mask_credentials(tc.url) or "(no url)"
    mode = "" if tc.mode == "standalone" else f" ({tc.mode})"
    return f"{settings.transport} {where}{mode}"


def describe_processor(settings: ProcessorSettings) -> list[str]:
    """One line for the broker, one per queue, one per pool."""
    lines = [f"broker: {broker_address(settings)}"]
    for queue in settings.transport_config.all_queues:
        name = queue.queue_name or queue.subscriber_id
        tier = queue.labels.get("tier", "batch (no tier label)")
        gate = f", gate {queue.gate_type}" if queue.gate_type else ""
        lines.append(
            f"queue {name}: pool {queue.worker_pool_id}, tier {tier}, "
            f"upstream {mask_credentials(queue.igw_base_url)}{queue.request_path_url}{gate}"
        )
    for pool in settings.pools:
        gate = f", gate {pool.gate_type}" if pool.gate_type else ""
        lines.append(f"pool {pool.id}: {pool.workers} workers{gate}")
    return lines
