"""HTTP header names and values other systems read (llm-d's processor, router and coordinator).

Header names are lower case (HTTP/2 form); compare case-insensitively. Each ``*_ALIASES`` tuple
lists the accepted spellings, preferred first.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ASYNC_MODE",
    "ASYNC_MODES",
    "DEFAULT_FAIRNESS_ID",
    "DROPPED_REASON",
    "DROPPED_REASONS",
    "FAIRNESS_ID",
    "FAIRNESS_ID_ALIASES",
    "FLOW_QUEUE_DURATION_MS",
    "INFERENCE_TTL",
    "MODE_ENQUEUE",
    "MODE_PASSTHROUGH",
    "MODE_WAIT",
    "OBJECTIVE",
    "OBJECTIVE_ALIASES",
    "REASON_CONTEXT_CANCELLED",
    "REASON_EVICTED",
    "REASON_INFEASIBLE",
    "REASON_NO_ENDPOINTS",
    "REASON_SATURATED",
    "REASON_SHUTTING_DOWN",
    "REASON_TTL_EXPIRED",
    "REQUEST_ID",
    "RETRY_AFTER",
    "SHOULD_RETRY",
    "SLO_TPOT_MS",
    "SLO_TPOT_MS_ALIASES",
    "SLO_TTFT_MS",
    "SLO_TTFT_MS_ALIASES",
    "TENANT",
    "first_of",
]

OBJECTIVE: Final = "x-llm-d-inference-objective"
OBJECTIVE_ALIASES: Final = (OBJECTIVE, "x-gateway-inference-objective")
FAIRNESS_ID: Final = "x-llm-d-inference-fairness-id"
FAIRNESS_ID_ALIASES: Final = (FAIRNESS_ID, "x-gateway-inference-fairness-id")
DEFAULT_FAIRNESS_ID: Final = "default-flow"

DROPPED_REASON: Final = "x-llm-d-request-dropped-reason"
REASON_SATURATED: Final = "rejected-saturated"
REASON_TTL_EXPIRED: Final = "rejected-ttl-expired"
REASON_NO_ENDPOINTS: Final = "rejected-no-endpoints"
REASON_CONTEXT_CANCELLED: Final = "rejected-context-cancelled"
REASON_SHUTTING_DOWN: Final = "rejected-shutting-down"
REASON_EVICTED: Final = "evicted"
# sluiceway's own: the processor answered a queued request at once because too little time was
# left for it to finish; the result's message starts with "infeasible:".
REASON_INFEASIBLE: Final = "infeasible"
DROPPED_REASONS: Final = (
    REASON_SATURATED,
    REASON_TTL_EXPIRED,
    REASON_NO_ENDPOINTS,
    REASON_CONTEXT_CANCELLED,
    REASON_SHUTTING_DOWN,
    REASON_EVICTED,
)

RETRY_AFTER: Final = "retry-after"
REQUEST_ID: Final = "x-request-id"
# The official openai client obeys it: "false" stops its retries of a status it would retry.
SHOULD_RETRY: Final = "x-should-retry"
# Milliseconds (a whole number) a request waited in flow control, from enqueue to its dispatch
# or drop; llm-d-async's processor reads it (its provisional name for the router's view).
FLOW_QUEUE_DURATION_MS: Final = "x-llm-d-flow-queue-duration-ms"

ASYNC_MODE: Final = "x-llm-d-async-mode"
MODE_PASSTHROUGH: Final = "passthrough"
MODE_WAIT: Final = "wait"
MODE_ENQUEUE: Final = "enqueue"
ASYNC_MODES: Final = (MODE_PASSTHROUGH, MODE_WAIT, MODE_ENQUEUE)
TENANT: Final = "x-llm-d-tenant"

SLO_TTFT_MS: Final = "x-llm-d-slo-ttft-ms"
SLO_TTFT_MS_ALIASES: Final = (SLO_TTFT_MS, "x-slo-ttft-ms")
SLO_TPOT_MS: Final = "x-llm-d-slo-tpot-ms"
SLO_TPOT_MS_ALIASES: Final = (SLO_TPOT_MS, "x-slo-tpot-ms")
INFERENCE_TTL: Final = "x-llm-d-inference-ttl"


def first_of(headers: object, names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` present in ``headers`` (a mapping with ``get``).

    Pass a case-insensitive mapping (Starlette/aiohttp headers) or a dict with lower-case keys.
    """
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    for name in names:
        value = getter(name)
        if value is not None:
            return str(value)
    return None
