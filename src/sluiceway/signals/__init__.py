"""Metric sources shared by the gates and the router: PromQL, ``/metrics`` scrapes, a TTL
cache, a cascade, and one shared refresher per distinct source (:mod:`.refresher`)."""
