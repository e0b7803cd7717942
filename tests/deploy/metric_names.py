"""Which metric names a PromQL expression reads, and which names sluiceway defines.

Dashboards and alert rules may only read names that ``sluiceway.observability.names`` defines
(histograms with their ``_bucket`` / ``_sum`` / ``_count`` series), so a renamed metric breaks a
test instead of a panel.
"""

from __future__ import annotations

import re

from sluiceway.observability import names

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless"}
    | {"offset", "bool", "inf", "nan", "atan2"}
)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGES = re.compile(r"\[[^\]]*\]")
_IDENT = re.compile(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(\s*\()?")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (function names, keywords and labels left out)."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _LABEL_LISTS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    found = set()
    for match in _IDENT.finditer(text):
        name, call = match.group(1), match.group(2)
        if call is None and name not in _KEYWORDS:
            found.add(name)
    return found


def defined_names() -> frozenset[str]:
    """Every exported name sluiceway defines, with the series a histogram adds."""
    base = {names.processor_metric(n) for n in names.PROCESSOR_METRICS}
    for metric in (*names.ROUTER_METRICS, *names.ROUTER_TWINNED_METRICS):
        base.add(names.router_metric(metric))
    for metric in names.ROUTER_TWINNED_METRICS:
        base.add(names.router_metric(metric, deprecated=True))
    base |= set(names.VLLM_METRICS) | {names.VLLM_GPU_CACHE_USAGE_PERC_LEGACY}
    base |= {
        names.SIM_RUNNING_BY_LABEL,
        names.COORDINATOR_REQUESTS_TOTAL,
        names.COORDINATOR_HELD_CONNECTIONS,
        names.COORDINATOR_BATCHES_RUNNING,
        names.COORDINATOR_BATCHES_FINISHED_TOTAL,
        names.COORDINATOR_BATCH_LINES_TOTAL,
        names.COORDINATOR_BATCH_DURATION_SECONDS,
        names.INFERENCE_POOL_READY_PODS,
    }
    return frozenset(base | {n + s for n in base for s in _HISTOGRAM_SUFFIXES})
