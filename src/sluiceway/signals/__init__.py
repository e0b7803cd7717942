"""Metric sources shared by the gates and the router.

- ``base``: the ``MetricSource`` protocol (``key``, ``read() -> Reading``, ``aclose``),
  ``Reading`` (samples or an error; ``value`` is None when blind) and ``Sample``;
- ``promql``: ``PromQLSource``, an instant query over the Prometheus HTTP API;
- ``scrape``: ``parse_metrics`` / ``select`` / ``canonical_name`` for the text format and
  ``ScrapeSource`` for one metric of a ``/metrics`` page;
- ``cache``: ``CachedSource``, a TTL cache; ``cascade``: ``CascadeSource``, the first
  source with a sample wins;
- ``refresher``: ``Refresher`` (one per distinct source, reads once per period while
  subscribed, calls subscribers on change) and ``SignalHub`` (a process's sources, one shared
  HTTP session);
- ``session``: the aiohttp client session shared by a process's sources, opened on first use;
- ``settings``: ``PrometheusSettings`` and ``PromAuth`` (standard library only).
"""
