"""Metric sources shared by the gates and the router.

- :mod:`.base`: the ``MetricSource`` protocol (``key``, ``read() -> Reading``, ``aclose``),
  ``Reading`` (samples or an error; ``value`` is None when blind) and ``Sample``;
- :mod:`.promql`: ``PromQLSource``, an instant query over the Prometheus HTTP API;
- :mod:`.scrape`: ``parse_metrics`` / ``select`` / ``canonical_name`` for the text format and
  ``ScrapeSource`` for one metric of a ``/metrics`` page;
- :mod:`.cache`: ``CachedSource``, a TTL cache; :mod:`.cascade`: ``CascadeSource``, the first
  source with a sample wins;
- :mod:`.refresher`: ``Refresher`` (one per distinct source, reads once per period while
  subscribed, calls subscribers on change) and ``SignalHub`` (a process's sources, one shared
  HTTP session);
- :mod:`.settings`: ``PrometheusSettings`` and ``PromAuth`` (standard library only).
"""
