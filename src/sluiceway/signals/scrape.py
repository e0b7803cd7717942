"""Reading a server's ``/metrics`` page in the Prometheus text format.

Public API (the gates' ``endpoint-scrape`` and the router's endpoint metrics use it):

- :func:`parse_metrics` turns an exposition text into :class:`~sluiceway.signals.base.Sample`
  values (name, labels, value), skipping comments and lines it cannot read; ``only`` keeps the
  lines of a few metrics before any regex runs (a vLLM page is ~300 lines, and a reader that
  polls it often wants three);
- :func:`canonical_name` folds the spellings of one metric into one: ``vllm_x`` is
  ``vllm:x`` (the OpenMetrics rewrite), ``inference_extension_x`` is ``llm_d_epp_x`` (the
  router's deprecated prefix), and the legacy ``vllm:gpu_cache_usage_perc`` is
  ``vllm:kv_cache_usage_perc``; :func:`spellings` lists the names that fold into one;
- :func:`select` keeps the samples of one metric whose labels include a filter, best first:
  a ``stage="effective"`` series before one without a stage, before other stages;
- :class:`ScrapeSource` is a :class:`~sluiceway.signals.base.MetricSource` that GETs a URL and
  selects one metric (an unreachable page or an absent metric reads blind).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

import aiohttp

from sluiceway.signals.base import Reading, Sample
from sluiceway.signals.session import SharedSession

__all__ = ["ScrapeSource", "canonical_name", "parse_metrics", "select", "spellings"]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_PREFIXES = (("vllm_", "vllm:"), ("inference_extension_", "llm_d_epp_"))
_LEGACY = {"vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc"}


def canonical_name(name: str) -> str:
    """One spelling per metric (see the module docstring)."""
    for alias, prefix in _PREFIXES:
        if name.startswith(alias):
            name = prefix + name[len(alias) :]
            break
    return _LEGACY.get(name, name)


def spellings(metric: str) -> tuple[str, ...]:
    """Every name that :func:`canonical_name` folds into ``metric``'s canonical name."""
    want = canonical_name(metric)
    names = [want, *(old for old, new in _LEGACY.items() if new == want)]
    aliases = [
        alias + n[len(prefix) :]
        for n in names
        for alias, prefix in _PREFIXES
        if n.startswith(prefix)
    ]
    return tuple(dict.fromkeys([*names, *aliases]))


def _labels(text: str) -> dict[str, str]:
    return {
        m.group(1): re.sub(r"\\[\\\"n]", lambda e: _UNESCAPE[e.group(0)], m.group(2))
        for m in _LABEL.finditer(text)
    }


def parse_metrics(text: str, only: Collection[str] = ()) -> list[Sample]:
    """Every sample line of an exposition text, in order (comments and bad lines skipped);
    with ``only``, just the lines of those metrics (any spelling; names that merely begin with
    one may slip through, :func:`select` tells them apart)."""
    keep = tuple(name for metric in only for name in spellings(metric))
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#") or (keep and not line.startswith(keep)):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = _labels(match.group(2)) if match.group(2) else {}
        out.append(Sample(value, labels, match.group(1)))
    return out


def _rank(sample: Sample) -> int:
    stage = sample.labels.get("stage")
    return 0 if stage == "effective" else 1 if stage is None else 2


def select(
    samples: Iterable[Sample], metric: str, labels: Mapping[str, str] | None = None
) -> tuple[Sample, ...]:
    """The samples of ``metric`` (any spelling) carrying every label of ``labels``, best first."""
    want = canonical_name(metric)
    wanted = dict(labels or {})
    found = [
        s
        for s in samples
        if canonical_name(s.name) == want and all(s.labels.get(k) == v for k, v in wanted.items())
    ]
    return tuple(sorted(found, key=_rank))


class ScrapeSource:
    """One metric of one ``/metrics`` page; ``timeout`` in wall seconds (upstream: 10 s)."""

    def __init__(
        self,
        url: str,
        metric: str,
        labels: Mapping[str, str] | None = None,
        *,
        timeout: float = 10.0,
        session: SharedSession | None = None,
    ) -> None:
        self._url = url
        self._metric = metric
        self._labels = dict(labels or {})
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session or SharedSession()
        self._owns = session is None

    @property
    def key(self) -> str:
        return f"scrape {self._url} {self._metric} {sorted(self._labels.items())}"

    async def read(self) -> Reading:
        try:
            async with self._session.get().get(self._url, timeout=self._timeout) as resp:
                if resp.status != 200:
                    return Reading(error=f"{self._url}: HTTP {resp.status}")
                text = await resp.text()
        except (TimeoutError, aiohttp.ClientError) as exc:
            return Reading(error=f"{self._url}: {exc or type(exc).__name__}")
        return Reading(select(parse_metrics(text), self._metric, self._labels))

    async def aclose(self) -> None:
        if self._owns:
            await self._session.aclose()
