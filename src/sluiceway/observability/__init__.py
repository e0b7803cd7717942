"""Metric names, collectors and logging shared by every component.

- ``names``: every metric name other systems read, defined once;
- ``tally``: counters and histograms in plain Python numbers, exported at scrape time;
- ``logging``: process logging, text or JSON lines, and quiet broker outages;
- ``served_request``: one request's facts as it goes (pure), which feed, through
  ``request_observer``, three sinks: ``access_log`` (one line per request, sampled),
  ``http_metrics`` (requests, durations and time to first byte by route template) and
  ``tracing`` (OpenTelemetry spans, the ``otel`` extra, set up from ``OTEL_*``), which makes
  a request's spans in one go at its end (``trace_spans``, pure) and posts them as OTLP
  protobuf encoded directly (``otlp_export``).
"""
